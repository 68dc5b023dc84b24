"""A dead backend is never a measurement: every unit whose model call failed is unmeasured,
a run that measured nothing exits 3 with the reason, and a partial one says how much in its
headline. The backend is a loopback port nothing listens on (connection refused at once).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
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
    assert "nothing measured: 20 of 20 unmeasured: model backend failed" in result.output
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
