"""Expectations for a model and suite: proposing from several runs, gating a run, and the
harness x model report (costs with their source, n/a never $0.00)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks import gate as gating
from agenteval.benchmarks.tasks.report import comparison_rows, fmt_cost, write_comparison
from agenteval.benchmarks.tasks.score import draws
from agenteval.schema.task_results import TaskResult, TaskScorecard
from agenteval.schema.transcript import Participant

ROOT = Path(__file__).resolve().parents[1]
JUDGE = Participant(kind="tasks-llm", model="judge-model", config_digest="j")
HARNESS = Participant(kind="chat", model="agent-model", config_digest="a")


def row(
    task: str,
    result: str = "PASS",
    repeat: int = 0,
    quality: float | None = 4.0,
    tokens: int | None = 1000,
    steps: int = 5,
    wall: float | None = 10.0,
    verified: bool | None = True,
    misreported: int = 0,
    cost: float | None = 0.01,
) -> TaskResult:
    return TaskResult(
        task_id=task,
        repeat=repeat,
        kind="coding" if verified is not None else "question",
        result=result,
        verified=verified,
        judge_status="judged" if quality else "unjudged",
        quality=quality,
        steps=steps,
        total_tokens=tokens,
        wall_seconds=wall,
        misreported=["claim"] * misreported,
        cost_usd=cost,
        cost_source="harness_counts" if cost is not None else None,
    )


def card(
    rows: list[TaskResult],
    repeats: int = 1,
    model: str = "agent-model",
    judge: Participant = JUDGE,
    commit: str = "abc",
) -> TaskScorecard:
    return TaskScorecard(
        suite="core",
        task_ids=sorted({r.task_id for r in rows}),
        harness=HARNESS,
        model=model,
        judge=judge,
        judge_model=judge.model,
        repeats=repeats,
        measured_on={"commit": commit, "machine": "ci-1"},
        draws=draws(rows, repeats),
        tasks=rows,
    )


GOOD = [row("a"), row("b"), row("c", verified=None, tokens=500), row("d", "FAIL", verified=False)]


def test_propose_takes_the_worst_floor_and_costliest_ceiling_then_headroom() -> None:
    worse = [
        row("a"),
        row("b", "FAIL", verified=False, steps=9, tokens=3000, wall=40.0),
        row("c", verified=None, quality=3.0),
        row("d", "FAIL", verified=False, misreported=1),
    ]
    proposal = gating.propose([("run1", card(GOOD)), ("run2", card(worse, commit="def"))])
    assert proposal.min_passed == 2 - 1 and proposal.min_verified == 1 - 1
    assert proposal.min_quality == pytest.approx((4 + 4 + 3 + 4) / 4 - 0.5 - 0.0, abs=0.01)
    assert proposal.max_misreported == 1 + 1
    assert proposal.max_total_tokens == int(-(-(1000 + 3000 + 1000 + 1000) * 1.35 // 1))
    assert proposal.max_steps == int(-(-(5 + 9 + 5 + 5) * 1.35 // 1))
    assert proposal.max_wall_seconds == pytest.approx((10 + 40 + 10 + 10) * 1.5)
    assert proposal.measured.passed == 2 and proposal.measured_on["commit"] == "abc,def"
    assert {t.id: t.result for t in proposal.tasks}["b"] == "PASS 1/2"
    with pytest.raises(gating.ExpectationsError, match="model differs"):
        gating.propose([("run1", card(GOOD)), ("run3", card(GOOD, model="other"))])


def test_a_run_is_gated_on_every_limit_and_unjudged_fails_quality() -> None:
    expect = gating.propose([("main", card(GOOD))])
    assert gating.check(card(GOOD), expect).status == "pass"
    fewer = [row("a", "FAIL", verified=False), row("b", "FAIL", verified=False), *GOOD[2:]]
    outcome = gating.check(card(fewer), expect)
    assert outcome.status == "fail"
    assert {c.name for c in outcome.checks if not c.ok} == {"r0 passed", "r0 verified"}
    unjudged = [row("a", quality=None), *GOOD[1:]]
    missed = [c for c in gating.check(card(unjudged), expect).checks if not c.ok]
    assert [c.name for c in missed] == ["r0 quality"] and "not graded: a" in missed[0].note
    no_tokens = [row(t.task_id, t.result, tokens=None, verified=t.verified) for t in GOOD]
    missed = [c for c in gating.check(card(no_tokens), expect).checks if not c.ok]
    assert [c.name for c in missed] == ["r0 total_tokens"] and missed[0].actual == "n/a"
    timeout = [row("a", "TIMEOUT", verified=False), *GOOD[1:]]
    assert "r0 measured" in {c.name for c in gating.check(card(timeout), expect).checks if not c.ok}
    unverified_ungated = expect.model_copy(update={"min_verified": None})
    check = next(
        c for c in gating.check(card(fewer), unverified_ungated).checks if c.name == "r0 verified"
    )
    assert check.ok and check.note == "not gated yet"


def test_another_model_or_judge_is_not_comparable() -> None:
    expect = gating.propose([("main", card(GOOD))])
    other_judge = Participant(kind="tasks-llm", model="another-judge", config_digest="k")
    outcome = gating.check(card(GOOD, judge=other_judge), expect)
    assert outcome.status == "not_comparable" and "judge_model" in outcome.reason
    assert gating.check(card(GOOD), None).status == "not_gated"


def _cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenteval", "tasks", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_gate_command_exit_codes(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "scorecard.json").write_text(card(GOOD).model_dump_json(by_alias=True))
    proposal = tmp_path / "expect.json"
    done = _cli("gate", str(run), "--propose", str(proposal), cwd=tmp_path)
    assert done.returncode == 0 and "NOT GATED" in done.stdout  # no file for this model yet
    assert _cli("gate", str(run), "--expect", str(proposal), "--enforce").returncode == 0
    worse = tmp_path / "worse"
    worse.mkdir()
    fewer = [row("a", "FAIL", verified=False), row("b", "FAIL", verified=False), *GOOD[2:]]
    (worse / "scorecard.json").write_text(card(fewer).model_dump_json(by_alias=True))
    assert _cli("gate", str(worse), "--expect", str(proposal)).returncode == 0  # reports only
    done = _cli("gate", str(worse), "--expect", str(proposal), "--enforce")
    assert done.returncode == 1 and "MISS r0 passed" in done.stdout
    assert _cli("gate", str(run), "--expect", str(tmp_path / "nope.json")).returncode == 2
    other = json.loads(proposal.read_text()) | {"judge_model": "another-judge"}
    proposal.write_text(json.dumps(other))
    assert _cli("gate", str(run), "--expect", str(proposal), "--enforce").returncode == 3
    proposal.write_text('{"suite": "core",\n "min_passed": "many"}\n')
    done = _cli("gate", str(run), "--expect", str(proposal))
    assert done.returncode == 2 and f"{proposal}:2: min_passed" in done.stderr


def test_report_shows_costs_with_their_source_and_na(tmp_path: Path) -> None:
    assert fmt_cost(None, []) == "n/a"
    assert fmt_cost(0.095, ["harness_counts"]) == "$0.0950 (harness counts x rate card)"
    assert "list price" in fmt_cost(1.2, ["api_equivalent"])
    uncounted = [
        row(r.task_id, r.result, tokens=None, cost=None, verified=r.verified) for r in GOOD
    ]
    cc = card(uncounted, model="claude-x")
    cc.harness = Participant(kind="claude-code", model="claude-x", config_digest="c")
    rows = comparison_rows([card(GOOD), cc, card(GOOD, commit="x")])
    assert [(r["harness"], r["draws"]) for r in rows] == [("chat", 2), ("claude-code", 1)]
    written = write_comparison([card(GOOD), cc], tmp_path)
    markdown = (tmp_path / "report.md").read_text()
    chat, claude = markdown.splitlines()[4:6]
    assert chat.startswith("| chat | agent-model | core | 1 | 3.0/4 | 0.75 |")
    assert "(harness counts x rate card)" in chat
    assert claude.startswith("| claude-code | claude-x |") and "| n/a |" in claude
    assert "$0.00" not in markdown
    html = (tmp_path / "report.html").read_text()
    assert "<svg" in html and "claude-code" in html
    assert {p.name for p in written} == {"report.md", "report.html", "pass_rate.svg"}
