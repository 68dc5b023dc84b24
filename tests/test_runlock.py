"""One evaluation per backend at a time: the lock, its holder, its release, the opt-out."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import OpenAIServer, Reply
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.pipeline import step_judge, step_report, step_score
from agenteval.runlock import EvalLocked, endpoint_key, eval_lock

ROOT = Path(__file__).resolve().parents[1]
HOLD = """
import sys, time
from agenteval.runlock import eval_lock
with eval_lock(sys.argv[1], "runs/holder"):
    print("held", flush=True)
    time.sleep(120)
"""


@pytest.fixture(autouse=True)
def lock_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "locks"
    monkeypatch.setenv("AGENTEVAL_LOCK_DIR", str(folder))
    monkeypatch.delenv("AGENTEVAL_NO_LOCK", raising=False)
    return folder


@pytest.fixture
def holder(request: pytest.FixtureRequest, lock_dir: Path) -> Iterator[subprocess.Popen[str]]:
    """Another process holding the lock of the endpoint named by the test's parameter."""
    endpoint = request.param
    env = dict(os.environ, AGENTEVAL_LOCK_DIR=str(lock_dir))
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, endpoint], env=env, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(timeout=10)


def test_endpoint_keys() -> None:
    assert endpoint_key({"kind": "builtin", "model": "builtin-bm25"}) is None
    chat = {"kind": "chat", "protocol": "openai", "model": "m", "base_url": "http://h:1/v1/"}
    assert endpoint_key(chat) == "openai:http://h:1/v1"
    assert endpoint_key(chat | {"model": "other"}) == endpoint_key(chat)  # one backend
    assert endpoint_key({"kind": "mcp", "url": "http://h:2/mcp"}) == "mcp:http://h:2/mcp"
    assert endpoint_key({"kind": "mcp", "command": ["agent", "--stdio"]}) == (
        "mcp-stdio:agent --stdio"
    )


@pytest.mark.parametrize("holder", ["openai:http://127.0.0.1:9/v1"], indirect=True)
def test_a_held_lock_names_its_holder_and_dies_with_it(
    holder: subprocess.Popen[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(EvalLocked) as refused, eval_lock("openai:http://127.0.0.1:9/v1"):
        pass
    assert refused.value.holder["pid"] == holder.pid
    assert "runs/holder" in str(refused.value) and f"pid {holder.pid}" in str(refused.value)
    with eval_lock("openai:http://127.0.0.1:10/v1"):  # another backend: free
        pass
    monkeypatch.setenv("AGENTEVAL_NO_LOCK", "1")
    with eval_lock("openai:http://127.0.0.1:9/v1"):  # opted out: separate backends
        pass
    monkeypatch.delenv("AGENTEVAL_NO_LOCK")
    os.kill(holder.pid, signal.SIGKILL)  # no cleanup code runs
    holder.wait(timeout=10)
    deadline = time.monotonic() + 5
    while True:
        try:
            with eval_lock("openai:http://127.0.0.1:9/v1"):
                break
        except EvalLocked:
            assert time.monotonic() < deadline, "the lock outlived its dead holder"
            time.sleep(0.05)


def test_the_lock_is_released_on_exit() -> None:
    with eval_lock("anthropic:http://127.0.0.1:11"):
        pass
    with eval_lock("anthropic:http://127.0.0.1:11"):
        pass


def test_run_refuses_while_its_backend_is_busy_and_judging_does_not_lock(
    tmp_path: Path,
) -> None:
    with OpenAIServer(reply_fn=lambda _b: Reply(text="That is not in the documents.")) as server:
        key = endpoint_key({"kind": "chat", "protocol": "openai", "base_url": server.base_url,
                            "model": "m"})  # fmt: skip
        assert key is not None
        args = ["run", "--scenario", "admit_missing_benefit", "--no-progress"]
        for setting in ("target.kind=chat", "target.protocol=openai", "target.model=m",
                        f"target.base_url={server.base_url}", "tracking.enabled=false",
                        f"run.cache_dir={tmp_path / 'cache'}"):  # fmt: skip
            args += ["--set", setting]
        out = tmp_path / "run"
        with eval_lock(key, "runs/other"):
            proc = subprocess.run(
                [sys.executable, "-m", "agenteval", *args, "--out", str(out)],
                cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
                env=dict(os.environ),
            )  # fmt: skip
            assert proc.returncode == 3, proc.stderr
            assert "not started: another evaluation is using " + key in proc.stderr
            assert "runs/other" in proc.stderr and server.request_count == 0
            builtin = CliRunner().invoke(  # the in-process builtin agent takes no lock
                app, ["run", "--scenario", "admit_missing_benefit", "--no-progress",
                      "--out", str(tmp_path / "builtin"), "--set", "tracking.enabled=false"],
            )  # fmt: skip
            assert builtin.exit_code == 0, builtin.output
        done = CliRunner().invoke(app, [*args, "--out", str(out)])
        assert done.exit_code == 0, done.output
        assert server.request_count > 0
        with eval_lock(key, "runs/other"):  # judging, scoring, reports, compare: no lock
            params = read_json(out / "params.json")
            layout = Layout.run_dir(ROOT, out)
            shutil.rmtree(layout.verdicts)
            assert step_judge(params, layout) == 1
            step_score(params, layout)
            step_report(layout)
            compared = CliRunner().invoke(
                app, ["compare", str(out), str(out), "--out", str(tmp_path / "c"), "--no-png"]
            )
            assert compared.exit_code == 0, compared.output
