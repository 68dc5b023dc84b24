"""A dead backend is never a measurement: every unit whose model call failed is unmeasured,
a run that measured nothing exits 3 with the reason, and a partial one says how much in its
headline. The backend is a loopback port nothing listens on (connection refused at once).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from servers import OpenAIServer, server_error
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.fileio import read_json

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def dead_url() -> str:
    with socket.socket() as sock:  # a port just free: nothing listens on it once closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(autouse=True)
def at_root() -> object:
    before = Path.cwd()
    os.chdir(ROOT)
    yield
    os.chdir(before)


def test_memory_on_a_dead_model_measures_nothing(dead_url: str, tmp_path: Path) -> None:
    out = tmp_path / "memory"
    argv = [
        "memory",
        "run",
        "--suite",
        "full",
        "--scenario",
        "sam_family_health",
        "--no-track",
        "--out",
        str(out),
        "--set",
        f"memory.model.base_url={dead_url}",
        "--set",
        "run.max_attempts=1",
        "--set",
        f"run.cache_dir={tmp_path / 'cache'}",
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 3, result.output
    assert isinstance(result.exception, SystemExit)
    assert "nothing measured: 20 of 20 checks unmeasured: model backend failed" in result.output
    assert "0 failed" in result.output  # no failure is the memory's
    results = read_json(out / "results.json")  # what ran is on disk, marked
    assert results["counts"]["failed"] == 0 and results["counts"]["passed"] == 0


def test_throughput_on_a_dead_endpoint_measures_nothing(dead_url: str, tmp_path: Path) -> None:
    argv = [
        "bench",
        "throughput",
        "--endpoint-url",
        dead_url,
        "--model",
        "m",
        "--concurrency",
        "1",
        "--repeats",
        "1",
        "--no-track",
        "--out",
        str(tmp_path / "tp"),
        "--set",
        "throughput.ids=[e01, e02]",
        "--set",
        "throughput.warmup=0",
        "--set",
        "throughput.max_attempts=1",
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 3, result.output
    assert isinstance(result.exception, SystemExit)
    assert "nothing measured: 2 of 2 requests unmeasured:" in result.output


def test_throughput_partly_measured_says_so(tmp_path: Path) -> None:
    """The scripted loopback failing every 2nd request: measured, and the headline says how
    much was not."""
    argv = [
        "bench",
        "throughput",
        "--concurrency",
        "1",
        "--repeats",
        "1",
        "--no-track",
        "--out",
        str(tmp_path / "tp"),
        "--set",
        "throughput.ids=[e01, e02, e03, e04]",
        "--set",
        "throughput.warmup=0",
        "--set",
        "throughput.max_attempts=1",
        "--set",
        "throughput.endpoints=[{name: lb, kind: loopback, protocol: openai, "
        "script: {fail_every: 2}}]",
    ]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0, result.output
    assert "2 of 4 requests unmeasured:" in result.output


def test_qa_on_a_dead_agent_measures_nothing(dead_url: str, tmp_path: Path) -> None:
    """Every attempt's agent call refused: each attempt is unmeasured (INFRA_ERROR), never a
    wrong answer, and a run with no evaluated attempt exits 3 saying why."""
    argv = ["qa", "--no-track", "--out", str(tmp_path / "qa"), "--k", "1",
            "--set", "target.kind=chat", "--set", f"target.base_url={dead_url}",
            "--set", "target.model=m", "--set", "qa.ids=[cw_battery_warranty, fo_core_hours]",
            "--set", "run.max_attempts=1",
            "--set", f"run.cache_dir={tmp_path / 'cache'}"]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 3, result.output
    assert isinstance(result.exception, SystemExit)
    assert "nothing measured: 2 of 2 attempts unmeasured: INFRA_ERROR: model backend failed" in (
        result.output
    )
    metrics = read_json(tmp_path / "qa/metrics.json")  # written, and no attempt scored wrong
    assert metrics["correct.native@1"]["value"] is None
    assert metrics["correct.native@1"]["error"] == 2


def test_a_scenario_run_on_an_agent_answering_500_measures_nothing(tmp_path: Path) -> None:
    """A loopback agent that answers 500 on every call: the units are INFRA_ERROR (the
    backend's fault, not ERRORED as the agent's), and the run exits 3 with the reason."""
    with OpenAIServer(reply_fn=lambda _body: server_error(500)) as server:
        argv = ["run", "--out", str(tmp_path / "run"), "--no-progress",
                "--scenario", "quarterly_revenue_lookup"]  # fmt: skip
        for key, value in {"target.kind": "chat", "target.model": "m",
                           "target.base_url": server.base_url, "run.max_attempts": "1",
                           "run.cache_dir": str(tmp_path / "cache"), "suite.iterations": "1",
                           "tracking.enabled": "false"}.items():  # fmt: skip
            argv += ["--set", f"{key}={value}"]
        result = CliRunner().invoke(app, argv)
    assert result.exit_code == 3, result.output
    assert "nothing measured: 1 of 1 scenarios unmeasured: 1 INFRA_ERROR" in result.output
    assert "model backend failed" in result.output


def test_coverage_says_how_much_and_refuses_nothing() -> None:
    from agenteval.measured import Coverage

    partial = Coverage(45, 105, "backend unreachable", "checks")
    assert partial.line() == "45 of 105 checks unmeasured: backend unreachable"
    assert not partial.nothing
    assert Coverage(0, 3, "").line() is None and not Coverage(0, 3, "").nothing
    assert Coverage(3, 3, "refused").nothing and Coverage(0, 0, "").nothing  # nothing ran
    assert Coverage(0, 0, "").refusal() == "nothing measured: no unit ran"
