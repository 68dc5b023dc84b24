"""`agenteval retry` in a DVC workspace: units that ended INFRA_ERROR / ERRORED / TIMEOUT are
sent again on request, and only those.

An OpenAI-compatible server on 127.0.0.1 fails two scenarios (one with HTTP 500, one by
dropping the connection) during the first `dvc repro`; the stage records them, DVC's lock
is consistent, and a plain `dvc repro` sends nothing. Once the server is healthy,
`agenteval retry` sends exactly those scenarios' requests (counted at the server), and
dvc.lock is brought up to date by DVC itself.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from servers import Drop, OpenAIServer, Raw, Reply, server_error

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", ".ci-venv*", "data", "runs", "mlflow.db*", ".git", ".*cache*", "__pycache__",
    "reports", "mlartifacts", "pipelines",
)  # fmt: skip
HEALTHY = ("parental_leave_lookup", "negation_motor_type")
FAILS_500 = "hallucination_resistance"
DROPPED = "concise_answer"  # two turns: its conversation needs two requests
UP_TO_DATE = "Data and pipelines are up to date."


class FlakyEndpoint:
    """Answers "ok", except, while `failing`, for the conversations of two scenarios; counts
    the requests of every scenario (told apart by the conversation's first user message)."""

    def __init__(self, first_messages: dict[str, str]) -> None:
        self.scenario_of = {text: sid for sid, text in first_messages.items()}
        self.failing = True
        self.seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self.server = OpenAIServer(reply_fn=self.answer)

    def answer(self, body: Any) -> Reply | Raw | Drop:
        first = next(m["content"] for m in body["messages"] if m["role"] == "user")
        scenario = self.scenario_of.get(first, f"unknown: {first[:60]}")
        with self._lock:
            self.seen[scenario] += 1
        if self.failing and scenario == FAILS_500:
            return server_error(500)
        if self.failing and scenario == DROPPED:
            return Drop()
        return Reply("The policy gives 16 weeks.")

    def take(self) -> Counter[str]:
        with self._lock:
            seen, self.seen = self.seen, Counter()
        return seen


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUTF8="1", DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def sh(cmd: list[str], cwd: Path) -> str:
    done = run(cmd, cwd)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def retry(repo: Path, *args: str) -> str:
    return sh([sys.executable, "-m", "agenteval", "retry", *args], repo)


def first_messages() -> dict[str, str]:
    found = {}
    for path in (ROOT / "eval/scenarios").rglob("*.yaml"):
        scenario = yaml.safe_load(path.read_text())
        if isinstance(scenario, dict) and scenario.get("id") in (*HEALTHY, FAILS_500, DROPPED):
            found[scenario["id"]] = scenario["turns"][0]["user_message"]
    assert len(found) == 4, found
    return found


@pytest.fixture()
def endpoint() -> Any:
    flaky = FlakyEndpoint(first_messages())
    with flaky.server:
        yield flaky


def workspace(tmp_path: Path, base_url: str) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=IGNORE)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["suite"]["ids"] = [*HEALTHY, FAILS_500, DROPPED]
    params["target"] |= {"kind": "chat", "protocol": "openai", "model": "fake",
                         "base_url": base_url}  # fmt: skip
    params["run"] |= {"max_attempts": 1, "request_timeout_s": 10}
    params["tracking"]["enabled"] = False  # tracking has its own tests; here it only slows
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    sh(["git", "init", "-q"], repo)
    sh([*git, "add", "-A"], repo)
    sh([*git, "commit", "-qm", "copy"], repo)
    return repo


def transcript(repo: Path, scenario: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((repo / f"data/transcripts/{scenario}/0.json").read_text())
    return found


def test_retry_sends_exactly_the_units_that_failed(tmp_path: Path, endpoint: FlakyEndpoint) -> None:
    repo = workspace(tmp_path, endpoint.server.base_url)
    out = sh(["dvc", "repro"], repo)
    first = endpoint.take()
    assert set(first) == {*HEALTHY, FAILS_500, DROPPED}, first
    failed = {s: transcript(repo, s)["status"] for s in (FAILS_500, DROPPED)}
    assert set(failed.values()) <= {"INFRA_ERROR", "ERRORED"}, failed
    assert all(transcript(repo, s)["status"] == "COMPLETED" for s in HEALTHY)
    assert "(run.retry_statuses): send again with: agenteval retry" in out
    # The failures are recorded results: the lock is consistent and a repro sends nothing.
    assert sh(["dvc", "status", "dvc.yaml"], repo).strip() == UP_TO_DATE
    assert "Running stage" not in sh(["dvc", "repro"], repo)
    assert endpoint.take() == {}

    listed = retry(repo, "--dry-run")
    assert f"retry {FAILS_500}#0: {failed[FAILS_500]}" in listed
    assert f"retry {DROPPED}#0: {failed[DROPPED]}" in listed
    assert "2 unit(s) to send again" in listed and endpoint.take() == {}

    kept = {s: (repo / f"data/transcripts/{s}/0.json").stat().st_mtime_ns for s in HEALTHY}
    endpoint.failing = False
    out = retry(repo)
    # Exactly the failed units' conversations: one request per turn, nothing else.
    assert endpoint.take() == {FAILS_500: 1, DROPPED: 2}, out
    assert "$ dvc repro --force --single-item infer" in out
    for scenario in (FAILS_500, DROPPED):
        again = transcript(repo, scenario)
        assert again["status"] == "COMPLETED" and again["attempts"] == 2
        assert [a["status"] for a in again["earlier_attempts"]] == [failed[scenario]]
    assert {s: (repo / f"data/transcripts/{s}/0.json").stat().st_mtime_ns for s in HEALTHY} == (
        kept
    )
    card = json.loads((repo / "reports/scorecard.json").read_text())
    assert not [r for r in card["scenarios"] if r["status"] in ("ERRORED", "INFRA_ERROR")]
    # DVC ran the stages itself: the lock records the new outputs.
    assert sh(["dvc", "status", "dvc.yaml"], repo).strip() == UP_TO_DATE
    assert "nothing to retry" in retry(repo) and endpoint.take() == {}


def test_agenteval_run_names_the_retry_and_resume_sends_only_those(
    tmp_path: Path, endpoint: FlakyEndpoint
) -> None:
    """The one-directory chain behaves as the stages do: a run names what a retry would
    send, and `agenteval run --resume` sends exactly that."""
    from typer.testing import CliRunner

    from agenteval.cli import app

    out = tmp_path / "run"
    args = ["run", "--out", str(out), "--no-progress"]
    for scenario in (*HEALTHY, FAILS_500, DROPPED):
        args += ["--scenario", scenario]
    for key, value in {
        "target.kind": "chat", "target.protocol": "openai", "target.model": "fake",
        "target.base_url": endpoint.server.base_url, "run.max_attempts": "1",
        "run.cache_dir": str(tmp_path / "cache"), "tracking.enabled": "false",
    }.items():  # fmt: skip
        args += ["--set", f"{key}={value}"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    assert f"send again with: agenteval run --resume {out}" in first.output
    assert set(endpoint.take()) == {*HEALTHY, FAILS_500, DROPPED}
    endpoint.failing = False
    again = CliRunner().invoke(app, ["run", "--resume", str(out), "--no-progress"])
    assert again.exit_code == 0, again.output
    assert endpoint.take() == {FAILS_500: 1, DROPPED: 2}
    assert "send again with" not in again.output
