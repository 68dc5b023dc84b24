"""Quota or budget exhausted mid-run: new units stop, in-flight ones end, the rest is NOT_RUN,
the run exits 3 with the exact resume command, and the resume sends only what is missing —
counted at the server, request by request.

The agent is the chat harness on a local OpenAI-compatible server that starts answering 429
`insufficient_quota` after N requests; the runs go through the real command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from servers.common import Reply
from servers.openai_server import OpenAIServer, quota_exhausted

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-Qu0taRe5ume7Kq2Wm4Xz8Rb3Nv6Hy1Jc"
CATEGORY = "personality"


def turns_of(scenario_id: str) -> int:
    path = next((ROOT / "eval/scenarios").rglob(f"{scenario_id}.yaml"))
    return len(yaml.safe_load(path.read_text())["turns"])


class Quota:
    """Answers `allowance` requests, then 429 insufficient_quota until topped up."""

    def __init__(self, allowance: int) -> None:
        self.allowance, self.answered, self.refused = allowance, 0, 0
        self.lock = threading.Lock()

    def __call__(self, _request: Any) -> Any:
        with self.lock:
            if self.answered >= self.allowance:
                self.refused += 1
                return quota_exhausted()
            self.answered += 1
        return Reply("That is not in the documents.")


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, QUOTA_KEY=KEY, PYTHONUTF8="1", PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "agenteval", "run", "--no-progress", *args]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def first_run(server: OpenAIServer, out: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    base = {"target.kind": "chat", "target.protocol": "openai", "target.model": "quota-model",
            "target.base_url": server.base_url, "target.api_key_env": "QUOTA_KEY",
            "run.cache_dir": "null", "run.max_attempts": "1",
            "tracking.enabled": "false"}  # fmt: skip
    args = ["--out", str(out), "--category", CATEGORY]
    for assignment in [f"{k}={v}" for k, v in base.items()] + list(sets):
        args += ["--set", assignment]
    return cli(*args)


def statuses(out: Path) -> dict[str, str]:
    card = json.loads((out / "scorecard.json").read_text())
    return {r["id"]: r["status"] for r in card["scenarios"]}


def conversed(out: Path) -> set[str]:
    """Units whose conversation finished (whatever the judge then made of it)."""
    found = out.glob("data/transcripts/*/0.json")
    return {p.parent.name for p in found if json.loads(p.read_text())["status"] == "COMPLETED"}


@pytest.mark.parametrize("concurrency", [1, 3])
def test_quota_stop_then_resume_sends_exactly_the_missing_requests(
    tmp_path: Path, concurrency: int
) -> None:
    quota = Quota(allowance=4)
    with OpenAIServer(reply_fn=quota, api_key=KEY) as server:
        out = tmp_path / "run"
        stopped = first_run(server, out, f"run.concurrency={concurrency}")
        assert stopped.returncode == 3, stopped.stderr
        assert f"resume with: agenteval run --resume {out}" in stopped.stderr.splitlines()
        assert "insufficient_quota" in stopped.stderr
        before = statuses(out)
        done = conversed(out)
        missing = set(before) - done
        assert done and missing
        assert set(before[s] for s in missing) <= {"INFRA_ERROR", "NOT_RUN"}
        # only units already in flight met the refusal; nothing started after the stop
        assert quota.refused <= concurrency
        assert list(before.values()).count("INFRA_ERROR") <= concurrency
        if concurrency == 1:
            assert "NOT_RUN" in before.values()
        sent_before = server.request_count
        quota.allowance = 10**6  # the quota resets
        resumed = cli("--resume", str(out))
        assert resumed.returncode == 0, resumed.stderr
        resent = server.request_count - sent_before
    # one request per turn of each unit without a result, and not one more
    assert resent == sum(turns_of(s) for s in missing)
    after = statuses(out)
    assert {s: after[s] for s in done} == {s: before[s] for s in done}
    assert conversed(out) == set(after)


def test_a_run_budget_stop_is_resumable_and_the_resume_finishes_the_cut_unit(
    tmp_path: Path,
) -> None:
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents."), api_key=KEY) as server:
        out = tmp_path / "run"
        # 12 + 7 tokens at $1000 per million: $0.019 a request; the third crosses $0.05
        prices = json.dumps({"quota-model": {"input_per_mtok": 1000, "output_per_mtok": 1000}})
        stopped = first_run(server, out, "run.concurrency=1", "run.budget_usd_total=0.05",
                            f"run.prices={prices}")  # fmt: skip
        assert stopped.returncode == 3, stopped.stderr
        assert "run budget $0.05 reached" in stopped.stderr
        assert server.request_count == 3
        before = statuses(out)
        assert "BUDGET_EXCEEDED" in before.values() and "NOT_RUN" in before.values()
        cut = [s for s, v in before.items() if v == "BUDGET_EXCEEDED"]
        stored = json.loads((out / f"data/transcripts/{cut[0]}/0.json").read_text())
        assert stored["resumable"] is True  # cut by the run's budget, not its own
        resumed = cli("--resume", str(out))
        # each invocation may spend up to the budget: the resume goes on from the cut unit
        # and stops again three requests further
        assert resumed.returncode == 3 and server.request_count == 6
        after = list(statuses(out).values())
        assert after.count("NOT_RUN") < list(before.values()).count("NOT_RUN")
