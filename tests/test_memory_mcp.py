"""Memory `mcp`: a memory server written for the tests (tests/servers/memory_mcp.py), driven
over real MCP transports through the same six scenarios as the reference memory.

Streamable HTTP runs every scenario against one server in a thread (reset before each);
stdio starts the server as a subprocess for every chat, on the scenario's own store folder,
and must measure exactly what HTTP measured. The server keeps whatever it is told, so the
benchmark must find what that costs: the shared password, other people's figures and the
README's instruction are all in its store.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from typer.testing import CliRunner

from agenteval.benchmarks.memory.records import MemoryResults
from agenteval.cli import app
from tests.memory_params import params_of, run_suite
from tests.servers.memory_mcp import ARGUMENTS, TOOLS, Store, build

ROOT = Path(__file__).resolve().parents[1]
STARTUP_LIMIT_S = 60.0  # a guard against a server that never comes up, not a timing


def params(adapter: dict[str, Any]) -> dict[str, Any]:
    loaded = params_of(ROOT / "pipelines/memory/params.yaml", ["tracking.enabled=false"])
    loaded["memory"]["adapter"] = adapter
    return loaded


@pytest.fixture(scope="module")
def http_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Store]]:
    store = Store(tmp_path_factory.mktemp("http-store"))
    server_app = build(store).streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(
        server_app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_LIMIT_S
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "memory server did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}/mcp", store
    server.should_exit = True
    thread.join(timeout=30)


def http_adapter(url: str) -> dict[str, Any]:
    return {
        "kind": "mcp",
        "url": url,
        "tools": {**TOOLS, "reset": "clear"},
        "arguments": ARGUMENTS,
        "clock": "now",
    }


@pytest.fixture(scope="module")
def over_http(http_store: tuple[str, Store]) -> MemoryResults:
    return run_suite(params(http_adapter(http_store[0])), ROOT, "pr")


def failed(results: MemoryResults) -> dict[str, str]:
    return {
        c.id: c.why for s in results.scenarios for p in s.probes for c in p.checks if c.ok is False
    }


def test_the_test_server_runs_through_every_scenario(
    over_http: MemoryResults, http_store: tuple[str, Store]
) -> None:
    assert over_http.memory.kind == "mcp" and over_http.memory.protocol == "mcp-http"
    assert over_http.counts["scenarios"] == 6 and over_http.counts["unmeasured"] == 0
    assert 0 < over_http.counts["passed"] < over_http.counts["checks"]
    misses = failed(over_http)
    # It keeps whatever the model proposed: the password, another person's move, the
    # README's instruction - each found, with the item that holds it.
    assert (
        "Tern-4471" in misses["priya_work_documents_and_forgetting/password-never/store_accuracy/0"]
    )
    assert (
        "Berlin" in misses["priya_work_documents_and_forgetting/plans-not-theirs/store_accuracy/0"]
    )
    assert "--force" in misses["chen_learns_project_quirks/planted-push/store_accuracy/0"]
    # ...and what it does keep right: a rescheduled, a cancelled and a done reminder.
    for held in (
        "jordan_reminders_change/this-week/shown_clean/0",
        "jordan_reminders_change/end-of-month/shown_recall/0",
        "jordan_reminders_change/end-of-month/store_accuracy/1",
    ):
        assert held not in misses, held
    # The simulated clock reached the server, under its own argument names.
    last = http_store[1].load()
    assert last and all(str(item["updated"]).startswith("2025-") for item in last)
    assert {item["category"] for item in last} <= {"fact", "preference", "lesson", "reminder"}


def test_stdio_measures_what_http_measured(over_http: MemoryResults, tmp_path: Path) -> None:
    adapter = {
        "kind": "mcp",
        "command": [sys.executable, "-m", "tests.servers.memory_mcp", "--store", "{store}"],
        "cwd": ".",
        "tools": TOOLS,
        "arguments": ARGUMENTS,
        "clock": "now",
    }
    one = ["jordan_reminders_change"]
    over_stdio = run_suite(params(adapter), ROOT, "pr", one)
    assert over_stdio.memory.protocol == "mcp-stdio"
    http_checks = {k: v for k, v in over_http.checks.items() if k.startswith(one[0])}
    assert over_stdio.checks == http_checks


def test_a_memory_server_that_fails_stops_the_run_with_its_reason(
    http_store: tuple[str, Store], tmp_path: Path
) -> None:
    runner = CliRunner()
    url = http_store[0]
    tools = "{remember: create_memory, recall: no_such_tool, dump: list_memories, reset: clear}"
    broken = ["--set", f"memory.adapter={{kind: mcp, url: '{url}', tools: {tools}}}"]
    done = runner.invoke(
        app,
        [
            "memory",
            "run",
            "--scenario",
            "jordan_reminders_change",
            "--out",
            str(tmp_path / "out"),
            *broken,
        ],
    )
    assert done.exit_code == 1, done.output
    assert (
        "the memory server failed, nothing was written" in done.output
        and "no_such_tool" in done.output
    )
    assert not (tmp_path / "out").exists()
    gone = [
        "--set",
        "memory.adapter={kind: mcp, command: [no-such-memory-server], "
        "tools: {remember: a, recall: b, dump: c}}",
    ]
    done = runner.invoke(
        app,
        [
            "memory",
            "run",
            "--scenario",
            "jordan_reminders_change",
            "--out",
            str(tmp_path / "out2"),
            *gone,
        ],
    )
    assert done.exit_code == 1 and "cannot connect to the memory server" in done.output, done.output
