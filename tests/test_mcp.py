"""Target `mcp` and `serve-mcp`, end to end over real MCP transports, offline.

`serve-mcp` runs as a real subprocess (stdio, and streamable HTTP on 127.0.0.1) wrapping the
builtin agent; the `mcp` target drives it and must reach the same verdicts as the builtin
driven directly. Faults are scripted in a small external "agent" served over real HTTP from a
thread, with its own tool and argument names, which records every call it receives.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.mcpserver import MCPServer

from agenteval import engine
from agenteval.engine import Inference
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.status import Status
from agenteval.schema.suite import Suite
from agenteval.schema.transcript import Transcript
from agenteval.serve.mcp import TRANSPORTS
from agenteval.simulators.scripted import ScriptedSimulator
from agenteval.suite.build import build_suite
from agenteval.targets.base import make_target
from agenteval.targets.mcp import TOOLS, MCPTarget

ROOT = Path(__file__).resolve().parents[1]
# One per category that exercises a different path: setup indexing, follow-ups, a failed
# tool call then recovery, a 0-chunk file inside a turn (adversarial), discovery.
SCENARIOS = [
    "budget_largest_line_item",
    "incident_followups",
    "missing_file_then_recover",
    "empty_file",
    "list_then_discover",
]
HTTP_SCENARIOS = ["incident_followups", "empty_file"]
# Sampled answers and repeats: the server must draw the samples a direct run draws.
SAMPLED = ["target.params.temperature=0.7", "suite.iterations=2"]
# A guard against a server that never comes up, not a performance expectation.
STARTUP_LIMIT_S = 60.0


def serve_argv(*extra: str) -> list[str]:
    return [sys.executable, "-m", "agenteval.serve.mcp", "--root", str(ROOT), *extra]


def base_params(ids: list[str], target: dict[str, Any] | None, *sets: str) -> dict[str, Any]:
    """params.yaml with overrides; `target` replaces its target section unless None."""
    params = load_params(ROOT / "params.yaml", ["tracking.enabled=false", *sets])
    params["suite"]["ids"] = ids
    if target is not None:
        params["target"] = target
    return params


def verdicts(card: Scorecard) -> dict[str, Any]:
    return {
        (r.id, r.iteration): (
            r.status,
            r.score,
            [(t.turn, t.scores, t.score) for t in r.turns],
            r.root_cause,
        )
        for r in card.scenarios
    }


def conversation(out: Path, scenario_id: str, iteration: int = 0) -> list[Any]:
    """What the agent said and did, without timings (which differ between runs)."""
    stored = Transcript.model_validate_json(
        (out / f"data/transcripts/{scenario_id}/{iteration}.json").read_text()
    )
    return [
        (t.user_message, t.response, [c.model_dump(exclude={"latency_ms"}) for c in t.tool_calls])
        for t in stored.turns
    ]


@pytest.fixture(scope="module")
def direct(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Scorecard]:
    out = tmp_path_factory.mktemp("direct")
    return out, run_all(base_params(SCENARIOS, None), Layout.run_dir(ROOT, out))


def test_stdio_serve_mcp_gives_the_same_verdicts_as_directly(
    direct: tuple[Path, Scorecard], tmp_path: Path
) -> None:
    direct_out, direct_card = direct
    target = {"kind": "mcp", "command": serve_argv("--transport", "stdio"), "model": "builtin"}
    card = run_all(base_params(SCENARIOS, target), Layout.run_dir(ROOT, tmp_path))
    assert verdicts(card) == verdicts(direct_card)
    assert {Status.PASS, Status.FAIL} <= {r.status for r in card.scenarios}
    for scenario_id in SCENARIOS:
        assert conversation(tmp_path, scenario_id) == conversation(direct_out, scenario_id)
    transcript = Transcript.model_validate_json(
        (tmp_path / "data/transcripts/budget_largest_line_item/0.json").read_text()
    )
    assert transcript.target.kind == "mcp" and transcript.target.protocol == "mcp-stdio"
    assert [c.name for c in transcript.setup_calls] == ["index_document"]
    assert transcript.setup_calls[0].result["chunk_count"] > 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + STARTUP_LIMIT_S
    while time.monotonic() < deadline:
        assert process.poll() is None, "serve-mcp exited before listening"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"serve-mcp did not listen on {port}")


@pytest.fixture(scope="module")
def http_server() -> Iterator[str]:
    port = free_port()
    sets = [arg for assignment in SAMPLED for arg in ("--set", assignment)]
    process = subprocess.Popen(serve_argv("--transport", "http", "--port", str(port), *sets))
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_http_serve_mcp_gives_the_same_samples_and_verdicts_as_directly(
    http_server: str, tmp_path: Path
) -> None:
    direct = tmp_path / "direct"
    direct_card = run_all(base_params(HTTP_SCENARIOS, None, *SAMPLED), Layout.run_dir(ROOT, direct))
    served = tmp_path / "served"
    target = {"kind": "mcp", "url": http_server}
    card = run_all(base_params(HTTP_SCENARIOS, target, *SAMPLED), Layout.run_dir(ROOT, served))
    assert len(card.scenarios) == 2 * len(HTTP_SCENARIOS)
    assert verdicts(card) == verdicts(direct_card)
    for scenario_id in HTTP_SCENARIOS:
        for iteration in (0, 1):
            said = conversation(served, scenario_id, iteration)
            assert said == conversation(direct, scenario_id, iteration)


async def _tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def test_serve_mcp_offers_the_agent_ui_tool_set_and_shapes() -> None:
    document = str(ROOT / "eval/corpus/documents/harbor_lantern_q2_report.md")

    async def session() -> None:
        server = StdioServerParameters(command=sys.executable, args=serve_argv()[1:])
        async with Client(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert set(tools) == set(TOOLS)
            assert set(tools["create_session"].input_schema["properties"]) == {
                "title",
                "agent_type",
            }
            assert set(tools["index_document"].input_schema["properties"]) == {
                "filepath",
                "session_id",
            }
            assert (await _tool(client, "system_status"))["status"] == "ok"
            created = await _tool(client, "create_session", title="t")
            sid = created["id"]
            indexed = await _tool(client, "index_document", filepath=document, session_id=sid)
            assert indexed["status"] == "success" and indexed["chunk_count"] > 0
            assert indexed["filepath"] == document
            reply = await _tool(
                client,
                "send_message",
                session_id=sid,
                message="What was the second-quarter net revenue?",
            )
            # the reference shape, plus the models that answered (what a model pin reads)
            assert set(reply) == {"content", "agent_steps", "event_log", "stats", "models"}
            assert "8.6" in reply["content"] and reply["stats"]["latency_ms"] >= 0
            step = reply["agent_steps"][0]
            assert {"tool", "success", "summary", "arguments"} <= set(step)
            history = await _tool(client, "get_messages", session_id=sid)
            assert history["total"] == 2
            assert [m["role"] for m in history["messages"]] == ["user", "assistant"]
            assert (await _tool(client, "delete_session", session_id=sid))["deleted"] is True
            gone = await _tool(client, "delete_session", session_id=sid)
            assert gone["status"] == "error" and sid in gone["error"]
            library = await _tool(client, "index_document", filepath=document)
            assert library["status"] == "error"

    asyncio.run(session())


# -- an external agent with other names, scripted faults, and a record of what it was asked --
RENAMED_TOOLS = {
    "system_status": "health",
    "create_session": "open_chat",
    "index_document": "ingest",
    "send_message": "say",
    "get_messages": "history",
    "delete_session": "close_chat",
}
RENAMED_ARGUMENTS = {
    "title": "name",
    "agent_type": "kind",
    "filepath": "path",
    "session_id": "chat",
    "message": "text",
}


class FakeAgent:
    def __init__(self) -> None:
        self.url = ""
        self.reset()

    def reset(
        self, *, healthy: bool = True, chunks: int = 3, send_fails: bool = False, hang: bool = False
    ) -> None:
        self.healthy, self.chunks, self.send_fails, self.hang = healthy, chunks, send_fails, hang
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.deleted: list[str] = []
        self.opened = 0

    def server(self) -> MCPServer:
        mcp: MCPServer = MCPServer(name="fake-agent", log_level="WARNING")

        @mcp.tool()
        def health() -> dict[str, Any]:
            self.calls.append(("health", {}))
            return {"ok": True} if self.healthy else {"status": "error", "detail": "backend down"}

        @mcp.tool()
        def open_chat(name: str = "Chat", kind: str | None = None) -> dict[str, Any]:
            self.calls.append(("open_chat", {"name": name, "kind": kind}))
            self.opened += 1
            return {"session_id": f"chat-{self.opened}", "name": name}

        @mcp.tool()
        def ingest(path: str, chat: str = "") -> dict[str, Any]:
            self.calls.append(("ingest", {"path": path, "chat": chat}))
            return {"result": {"id": "doc-1", "chunk_count": self.chunks}}

        @mcp.tool()
        async def say(chat: str, text: str) -> dict[str, Any]:
            self.calls.append(("say", {"chat": chat, "text": text}))
            if self.hang:
                await anyio.sleep(60)  # cancelled when the client goes away
            if self.send_fails:
                return {"status": "error", "detail": "LLM server crashed"}
            steps = [
                {"tool": "search", "success": True, "summary": "2 hits"},
                {"tool": "run", "success": False, "summary": "exit 1", "command": "ls x"},
            ]
            stats = {"input_tokens": 5, "output_tokens": 7, "tokens_per_second": 40}
            return {
                "content": f"echo {text}",
                "agent_steps": steps,
                "event_log": [],
                "stats": stats,
            }

        @mcp.tool()
        def close_chat(chat: str) -> dict[str, Any]:
            self.calls.append(("close_chat", {"chat": chat}))
            self.deleted.append(chat)
            return {"deleted": True}

        return mcp

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.calls]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeAgent]:
    agent = FakeAgent()
    app = agent.server().streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + STARTUP_LIMIT_S
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "fake agent did not start"
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    agent.url = f"http://127.0.0.1:{port}/mcp"
    yield agent
    server.should_exit = True
    thread.join(timeout=30)


def fake_target(agent: FakeAgent) -> dict[str, Any]:
    return {
        "kind": "mcp",
        "url": agent.url,
        "tools": RENAMED_TOOLS,
        "arguments": RENAMED_ARGUMENTS,
        "close_timeout_s": 10,
    }


@functools.cache
def _fault_suite() -> Suite:
    # Built once: validating the scenario set costs about a second each time.
    return build_suite(base_params(["csv_cell_lookup", "long_document_needle"], None), ROOT)


def suite_of(scenario_id: str) -> Suite:
    suite = _fault_suite().model_copy(deep=True)
    suite.items = [item for item in suite.items if item.scenario.id == scenario_id]
    return suite


def infer(suite: Suite, target: dict[str, Any], out: Path) -> list[Transcript]:
    made = make_target(base_params([], target), ROOT)
    return asyncio.run(Inference(suite, made, ScriptedSimulator(), out, ROOT).run())


def test_renamed_tools_steps_and_usage(fake: FakeAgent, tmp_path: Path) -> None:
    fake.reset()
    suite = suite_of("csv_cell_lookup")
    item = suite.items[0]
    scenario = item.scenario.model_copy(update={"agent_type": "doc-agent"})
    suite.items = [item.model_copy(update={"scenario": scenario})]
    [done] = infer(suite, fake_target(fake), tmp_path)
    assert done.status == "COMPLETED", done.error
    assert fake.names == ["health", "open_chat", "ingest", "say", "close_chat"]
    ingest = dict(fake.calls)["ingest"]
    assert Path(ingest["path"]).is_absolute() and Path(ingest["path"]).is_file()
    assert ingest["chat"] == "chat-1" and fake.deleted == ["chat-1"]
    opened = dict(fake.calls)["open_chat"]
    assert opened == {"name": "agenteval csv_cell_lookup #0 seed 0", "kind": "doc-agent"}
    [turn] = done.turns
    assert turn.response.startswith("echo ")
    search, run = turn.tool_calls
    assert (search.name, search.ok, search.result) == ("search", True, "2 hits")
    assert (run.name, run.ok, run.error) == ("run", False, "exit 1")
    assert run.result == {"summary": "exit 1", "command": "ls x"}
    assert turn.usage is not None and (turn.usage.input_tokens, turn.usage.output_tokens) == (5, 7)
    assert turn.usage.cost_usd is None  # unknown stays n/a, never 0
    assert done.setup_calls[0].result["result"]["chunk_count"] == 3


def test_failing_system_status_is_infra_error(fake: FakeAgent, tmp_path: Path) -> None:
    fake.reset(healthy=False)
    [done] = infer(suite_of("csv_cell_lookup"), fake_target(fake), tmp_path)
    assert done.status == Status.INFRA_ERROR and "backend down" in (done.error or "")
    assert fake.names == ["health"]  # nothing created, so nothing to delete


def test_zero_chunks_is_setup_error_unless_adversarial(fake: FakeAgent, tmp_path: Path) -> None:
    fake.reset(chunks=0)
    [done] = infer(suite_of("csv_cell_lookup"), fake_target(fake), tmp_path / "rag")
    assert done.status == Status.SETUP_ERROR and "0 chunks" in (done.error or "")
    assert [c.name for c in done.setup_calls] == ["index_document"]
    assert fake.deleted == ["chat-1"] and "say" not in fake.names
    fake.reset(chunks=0)
    [adversarial] = infer(suite_of("long_document_needle"), fake_target(fake), tmp_path / "adv")
    assert adversarial.status == "COMPLETED" and fake.names.count("say") == 2


def test_session_is_deleted_when_send_message_fails(fake: FakeAgent, tmp_path: Path) -> None:
    fake.reset(send_fails=True)
    [done] = infer(suite_of("csv_cell_lookup"), fake_target(fake), tmp_path)
    assert done.status == Status.INFRA_ERROR and "LLM server crashed" in (done.error or "")
    assert len(done.setup_calls) == 1  # the setup record survives the failure
    assert fake.names[-1] == "close_chat" and fake.deleted == ["chat-1"]


def test_timeout_still_deletes_the_session_and_closes_the_connection(
    fake: FakeAgent, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake.reset(hang=True)
    # The engine's floor is minutes; shorten it so the hanging reply is cut by the engine.
    monkeypatch.setattr(engine, "effective_timeout", lambda *_args: 1.0)
    opened: list[Any] = []
    made = make_target(base_params([], fake_target(fake)), ROOT)
    assert isinstance(made, MCPTarget)
    open_session = made.open_session

    async def spy(*args: Any) -> Any:
        opened.append(await open_session(*args))
        return opened[-1]

    monkeypatch.setattr(made, "open_session", spy)
    suite = suite_of("csv_cell_lookup")
    [done] = asyncio.run(Inference(suite, made, ScriptedSimulator(), tmp_path, ROOT).run())
    assert done.status == Status.TIMEOUT
    assert fake.deleted == ["chat-1"]
    task = opened[0].connection._task
    assert task is not None and task.done() and opened[0].connection.client is None


def test_missing_document_is_skipped_without_contacting_the_agent(
    fake: FakeAgent, tmp_path: Path
) -> None:
    fake.reset()
    suite = suite_of("csv_cell_lookup")
    suite.items = [suite.items[0].model_copy(update={"missing_documents": ["eval/gone.csv"]})]
    [done] = infer(suite, fake_target(fake), tmp_path)
    assert done.status == Status.SKIPPED_NO_DOCUMENT
    assert fake.calls == []


@pytest.mark.parametrize("where", ["url", "command"])
def test_unreachable_server_is_infra_error(where: str, tmp_path: Path) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}/mcp" if where == "url" else [str(tmp_path / "none")]
    [done] = infer(suite_of("csv_cell_lookup"), {"kind": "mcp", where: endpoint}, tmp_path)
    assert done.status == Status.INFRA_ERROR and "unreachable" in (done.error or "")


def test_target_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        MCPTarget({"target": {"kind": "mcp"}}, ROOT)
    with pytest.raises(ValueError, match="unknown name"):
        MCPTarget({"target": {"kind": "mcp", "url": "http://x/mcp", "tools": {"chat": "x"}}}, ROOT)
    one = MCPTarget({"target": {"kind": "mcp", "command": "agent --stdio"}}, ROOT)
    other = MCPTarget(
        {"target": {"kind": "mcp", "command": "agent --stdio", "tools": RENAMED_TOOLS}}, ROOT
    )
    assert one.participant.protocol == "mcp-stdio"
    assert one.participant.config_digest != other.participant.config_digest
    assert TRANSPORTS == ("stdio", "http")
