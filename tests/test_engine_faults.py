"""Faults end in the right status with nothing lost or duplicated, over real local sockets.

The agent under test is the chat target pointed at a local OpenAI-compatible server; runs go
through the real command line in a subprocess, so exit codes and kill -9 are the real thing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from servers.common import Reply
from servers.openai_server import OpenAIServer, invalid_key, quota_exhausted

from agenteval import engine
from agenteval.layout import Layout
from agenteval.params import DEFAULTS, deep_merge
from agenteval.pipeline import run_evaluation

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-Fa9uLt7Kq2Wm4Xz8Rb3Nv6Hy1Jc5Pd0E"
CATEGORY = "personality"


def run_args(server: OpenAIServer, out: Path, cache: Path, *extra: str) -> list[str]:
    sets = {
        "target.kind": "chat", "target.protocol": "openai", "target.base_url": server.base_url,
        "target.model": "fault-model", "target.api_key_env": "FAULT_KEY",
        "run.concurrency": "1", "run.cache_dir": str(cache), "run.max_attempts": "1",
        "tracking.enabled": "false",
    }  # fmt: skip
    args = [sys.executable, "-m", "agenteval", "run", "--out", str(out), "--no-progress"]
    args += ["--category", CATEGORY]
    for key, value in sets.items():
        args += ["--set", f"{key}={value}"]
    return args + list(extra)


def cli(args: list[str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, FAULT_KEY=KEY, PYTHONUTF8="1")
    return subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def statuses(out: Path) -> dict[str, str]:
    card = json.loads((out / "scorecard.json").read_text())
    return {r["id"]: r["status"] for r in card["scenarios"]}


def user_messages(server: OpenAIServer) -> list[str]:
    """The last user message of every request: which scenario turn was sent."""
    seen = []
    for request in server.requests:
        body = request.json or {}
        users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
        seen.append(users[-1] if users else "")
    return seen


def test_quota_stops_the_run_with_exit_3_and_resume_finishes_it(tmp_path: Path) -> None:
    calls = {"n": 0, "quota": True}

    def reply(_request: Any) -> Any:
        calls["n"] += 1
        if calls["quota"] and calls["n"] == 3:
            return quota_exhausted()
        return Reply("That is not in the documents.")

    with OpenAIServer(reply_fn=reply, api_key=KEY) as server:
        out = tmp_path / "run"
        first = cli(run_args(server, out, tmp_path / "cache"))
        assert first.returncode == 3, first.stderr
        assert f"resume with: agenteval run --resume {out}" in first.stderr
        states = statuses(out)
        assert list(states.values()).count("INFRA_ERROR") == 1
        assert "NOT_RUN" in states.values()
        finished = [sid for sid, status in states.items() if status in ("PASS", "FAIL")]
        assert finished
        sent_before = user_messages(server)
        calls["quota"] = False
        resumed = cli([sys.executable, "-m", "agenteval", "run", "--resume", str(out),
                       "--no-progress"])  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        after = user_messages(server)[len(sent_before) :]
    final = statuses(out)
    assert set(final.values()) <= {"PASS", "FAIL", "NOT_JUDGED"}
    # Nothing finished before the stop was sent again: only the stopped scenarios' turns.
    assert after and not _messages_of(finished) & set(after)


def test_invalid_key_is_a_credential_stop(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=lambda _r: invalid_key(), api_key=KEY) as server:
        done = cli(run_args(server, tmp_path / "run", tmp_path / "cache"))
        assert server.request_count == 1  # no retry on a rejected key
    assert done.returncode == 3 and "quota or credential failure" in done.stderr
    assert KEY not in done.stderr + done.stdout


def test_kill_9_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents.", delay=0.4),
                      api_key=KEY) as server:  # fmt: skip
        out = tmp_path / "run"
        env = dict(os.environ, FAULT_KEY=KEY, PYTHONUTF8="1")
        proc = subprocess.Popen(run_args(server, out, tmp_path / "cache"), cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        transcripts = out / "data/transcripts"
        deadline = time.monotonic() + 240
        while len(list(transcripts.glob("*/0.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        done_before = {p: p.read_bytes() for p in transcripts.glob("*/0.json")}
        assert 2 <= len(done_before) < 6, "kill landed too late to test a resume"
        # Finished transcripts are made durable by the journal's fsync, not their own: a
        # power cut may lose a file written after it. Simulate that loss for one of them;
        # the resume must restore it from the journal instead of running it again.
        journal = out / "data" / ".transcripts.journal"
        assert journal.is_file()
        lost = sorted(done_before)[0]
        lost.unlink()
        sent_before = len(server.requests)
        resumed = cli([sys.executable, "-m", "agenteval", "run", "--resume", str(out),
                       "--no-progress"])  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
        resent = user_messages(server)[sent_before:]
    # Every transcript finished before the kill is untouched (or restored byte for byte);
    # none is half-written and the journal is gone once the run is complete.
    assert all(path.read_bytes() == data for path, data in done_before.items())
    assert not list(transcripts.rglob("*.tmp")) and not journal.exists()
    assert resent and not _messages_of([p.parent.name for p in done_before]) & set(resent)
    assert len(statuses(out)) == len(list(transcripts.glob("*/0.json")))


def _messages_of(scenario_ids: list[str]) -> set[str]:
    """Every user message the given scenarios send (their turns' scripted text)."""
    import yaml

    found: set[str] = set()
    for sid in scenario_ids:
        path = next((ROOT / "eval/scenarios").rglob(f"{sid}.yaml"))
        found |= {
            t.get("user_message") or t["objective"]
            for t in yaml.safe_load(path.read_text())["turns"]
        }
    return found


def _params(server: OpenAIServer, tmp: Path, **run: Any) -> dict[str, Any]:
    return deep_merge(
        DEFAULTS,
        {
            "suite": {"categories": [CATEGORY]},
            "target": {"kind": "chat", "protocol": "openai", "base_url": server.base_url,
                       "model": "priced-model", "api_key_env": "FAULT_KEY"},
            "run": {"concurrency": 1, "cache_dir": None, "max_attempts": 1,
                    "prices": {"priced-model": {"input_per_mtok": 1000.0,
                                                "output_per_mtok": 1000.0}}, **run},
            "tracking": {"enabled": False},
        },
    )  # fmt: skip


def test_scenario_budget_cuts_one_scenario(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULT_KEY", KEY)
    # usage 12 in + 7 out tokens at $1000/Mtok each = $0.019 per call.
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents."), api_key=KEY) as server:
        result = run_evaluation(_params(server, tmp_path, budget_usd_per_scenario=0.03),
                                Layout.run_dir(ROOT, tmp_path / "run"))  # fmt: skip
    by_status = {r.id: r.status for r in result.scorecard.scenarios}
    multi_turn = {"no_sycophancy_pushback", "concise_answer"} & set(by_status)
    assert multi_turn and all(by_status[s] == "BUDGET_EXCEEDED" for s in multi_turn)
    assert result.stop_reason is None
    assert result.scorecard.usage["cost_usd"] is not None


def test_run_budget_stops_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULT_KEY", KEY)
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents."), api_key=KEY) as server:
        result = run_evaluation(_params(server, tmp_path, budget_usd_total=0.05),
                                Layout.run_dir(ROOT, tmp_path / "run"))  # fmt: skip
        sent = server.request_count
    counts = [r.status for r in result.scorecard.scenarios]
    assert "BUDGET_EXCEEDED" in counts and "NOT_RUN" in counts
    assert result.stop_reason is not None and "run budget" in result.stop_reason
    assert sent == 3  # the third call crossed $0.05; nothing was sent after it


def test_slow_agent_times_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULT_KEY", KEY)
    # The scaling constants are configuration; shrink them so a timeout takes a second.
    for name in ("TIMEOUT_STARTUP_S", "TIMEOUT_PER_DOC_S", "TIMEOUT_PER_TURN_S"):
        monkeypatch.setattr(engine, name, 0)
    with OpenAIServer(reply_fn=lambda _r: Reply("late", delay=3.0), api_key=KEY) as server:
        params = _params(server, tmp_path)
        params["suite"] = {**params["suite"], "categories": [], "ids": ["honest_about_limits"]}
        params["run"]["timeout_s"] = 0.5
        result = run_evaluation(params, Layout.run_dir(ROOT, tmp_path / "run"))
    (only,) = result.scorecard.scenarios
    assert only.status == "TIMEOUT" and only.score is None
