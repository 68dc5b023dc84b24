"""Pairwise verdicts: both orders, a disagreement between orders is a tie, position bias is
measured on paired controls; planted loopback judges whose bias is known exactly."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from servers import OpenAIServer, Reply

from agenteval.controls.build import fact_of
from agenteval.controls.load import load_controls
from agenteval.controls.pairs import ControlPair, judge_pairs, pairs_from, pairwise_report
from agenteval.fileio import read_json
from agenteval.judges.pairwise import PairOutcome, PairwiseJudge, position_bias, two_order
from agenteval.params import DEFAULTS, deep_merge
from agenteval.schema.corpus import Manifest

ROOT = Path(__file__).resolve().parents[1]
SHOWN = re.compile(r"## First reply\n(.*)\n\n## Second reply\n(.*)\Z", re.S)


def test_two_order_rule() -> None:
    assert two_order("first", "second") == "a"  # A chosen in both orders
    assert two_order("second", "first") == "b"
    assert two_order("first", "first") == "tie"  # followed the position: a tie
    assert two_order("tie", "first") == "tie"
    assert two_order(None, "first") is None  # unanswered: unmeasured, never a tie


def test_position_bias_counts_first_picks() -> None:
    always_first = [PairOutcome("first", "first")] * 10
    bias = position_bias(always_first)
    assert bias["first_rate"] == 1.0 and bias["flipped_with_order"] == 10
    assert bias["first_rate_low"] is not None and bias["first_rate_low"] > 0.5
    fair = [PairOutcome("first", "second"), PairOutcome("second", "first")]
    assert position_bias(fair)["first_rate"] == 0.5


@pytest.fixture(scope="module")
def held_pairs() -> list[ControlPair]:
    manifest = Manifest.model_validate(read_json(ROOT / "eval/corpus/manifest.json"))
    controls = load_controls(ROOT / "eval/judge_controls", manifest, ROOT)
    asked = {c.control.id: c.control.question or (fact_of(manifest, c.control.fact)[1].question
             if c.control.fact else "") for c in controls}  # fmt: skip
    pairs = [p for p in pairs_from(controls, asked) if p.split == "held"]
    assert len(pairs) >= 40
    return pairs[:40]


def biased_judge(good: set[str], share: float) -> Any:
    """Picks the better reply, except on `share` of cases (by a hash of the case) where it
    picks whichever reply it was shown first."""

    def reply(body: Any) -> Reply:
        case = body["messages"][-1]["content"]
        first, second = SHOWN.search(case).groups()  # type: ignore[union-attr]
        lazy = int(hashlib.sha256(case.encode()).hexdigest()[:8], 16) / 2**32 < share
        pick = "first" if lazy or first in good else "second" if second in good else "tie"
        return Reply(text=json.dumps({"winner": pick, "reason": "planted"}))

    return reply


def measure(pairs: list[ControlPair], share: float) -> dict[str, Any]:
    good = {p.a if p.better == "a" else p.b for p in pairs}
    with OpenAIServer(reply_fn=biased_judge(good, share)) as server:
        section = {"model": "pair-judge", "base_url": server.base_url, "protocol": "openai"}
        params = deep_merge(DEFAULTS, {"judge": section, "run": {"cache_dir": None}})
        judge = PairwiseJudge(params, ROOT)
        outcomes = asyncio.run(judge_pairs(judge, pairs))
        assert len(server.requests) == 2 * len(pairs)  # both orders, every pair
    return pairwise_report(pairs, outcomes)


def test_position_bias_is_measured_and_cancelled_by_the_two_order_rule(
    held_pairs: list[ControlPair],
) -> None:
    report = measure(held_pairs, share=0.4)
    bias = report["position_bias"]
    assert bias["first_rate_low"] > 0.5  # measured: it picks the first reply too often
    assert report["one_order"]["wrong"]["count"] > 0  # one order alone is fooled
    assert report["two_orders"]["wrong"]["count"] == 0  # both orders: never a wrong winner
    assert report["two_orders"]["tie"]["count"] > 0  # the position-driven picks became ties
    fair = measure(held_pairs, share=0.0)
    assert fair["two_orders"]["right"]["rate"] == 1.0
    assert fair["position_bias"]["first_rate"] == 0.5  # each order picks the better reply


def test_a_judge_that_always_picks_first_wins_nothing(held_pairs: list[ControlPair]) -> None:
    report = measure(held_pairs, share=1.0)
    assert report["position_bias"]["first_rate"] == 1.0
    assert report["two_orders"]["tie"]["rate"] == 1.0
    assert report["two_orders"]["right"]["count"] == report["two_orders"]["wrong"]["count"] == 0


def test_an_unreadable_answer_is_unmeasured_not_a_tie(held_pairs: list[ControlPair]) -> None:
    with OpenAIServer(reply_fn=lambda body: Reply(text="A is better")) as server:
        section = {"model": "pair-judge", "base_url": server.base_url, "protocol": "openai"}
        params = deep_merge(DEFAULTS, {"judge": section, "run": {"cache_dir": None}})
        outcomes = asyncio.run(judge_pairs(PairwiseJudge(params, ROOT), held_pairs[:2]))
    report = pairwise_report(held_pairs[:2], outcomes)
    assert report["unmeasured"] == 2 and report["two_orders"]["tie"]["count"] == 0


# -- agenteval compare --pairwise ---------------------------------------------------------------
def write_run(
    folder: Path, replies: dict[str, list[str]], status: str = "COMPLETED", sessions: bool = False
) -> None:
    from agenteval.fileio import write_json
    from agenteval.schema.transcript import Participant, Transcript, TranscriptTurn

    for scenario, said in replies.items():
        turns = [TranscriptTurn(turn=n, user_message=f"{scenario} question {n}", response=r)
                 for n, r in enumerate(said, 1)]  # fmt: skip
        transcript = Transcript(scenario_id=scenario, scenario_digest="d", status=status,
                                target=Participant(kind="builtin"),
                                simulator=Participant(kind="scripted"), turns=turns)  # fmt: skip
        where = folder / "transcripts" if sessions else folder / "data" / "transcripts"
        write_json(where / scenario / "0.json", transcript)
    if sessions:  # a sessions benchmark output: the dataset beside the replayed transcripts
        (folder / "dataset.json").write_text("{}", encoding="utf-8")


def test_compare_pairwise_gives_win_tie_loss_with_intervals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from agenteval.cli import app

    good = "The figure is 8.6 million."
    bad = "The figure is 11.2 million."
    a = {f"s{i}": [bad, good] for i in range(6)}
    b = {f"s{i}": [good, good] for i in range(6)}
    write_run(tmp_path / "a", a)
    write_run(tmp_path / "b", b)
    monkeypatch.chdir(ROOT)  # the CLI reads params.yaml from where it runs
    with OpenAIServer(reply_fn=biased_judge({good}, share=0.3)) as server:
        done = CliRunner().invoke(app, [
            "compare", "--pairwise", str(tmp_path / "a"), str(tmp_path / "b"),
            "--out", str(tmp_path / "out"), "--set", f"judge.base_url={server.base_url}",
            "--set", "judge.model=pair-judge", "--set", "judge.protocol=openai",
            "--set", "run.cache_dir=null"])  # fmt: skip
        missing = CliRunner().invoke(app, [
            "compare", "--pairwise", str(tmp_path / "nope"), str(tmp_path / "b"),
            "--set", f"judge.base_url={server.base_url}",
            "--set", "judge.model=pair-judge"])  # fmt: skip
    assert done.exit_code == 0, done.output
    report = json.loads((tmp_path / "out" / "pairwise.json").read_text())
    assert report["units"] == report["judged"] == 12
    # turn 1: B's right figure against A's wrong one; turn 2: the same reply on both sides
    assert report["b_losses"]["count"] == 0
    assert report["b_wins"]["count"] + report["ties"]["count"] == 12
    assert 0 < report["b_wins"]["count"] <= 6
    net = report["net_preference_b"]
    assert net["low"] is not None and net["low"] <= net["value"] <= net["high"]
    assert "B wins" in done.output
    assert missing.exit_code == 4 and "no transcripts" in missing.output
    assert isinstance(missing.exception, SystemExit)  # a message, no traceback


def write_tasks_run(folder: Path, answers: dict[str, str], status: str = "COMPLETED") -> None:
    from agenteval.benchmarks.tasks.runner import attempt_dir
    from agenteval.fileio import write_json
    from agenteval.schema.task_records import Answer, TaskAttempt
    from agenteval.schema.transcript import Participant

    for task, said in answers.items():
        attempt = TaskAttempt(task_id=task, task_digest="d", harness=Participant(kind="scripted"),
                              status=status if task != "t0" else "COMPLETED",
                              prompt=f"{task}: what is the figure?",
                              answers=[Answer(text=said, after_call=0)])  # fmt: skip
        write_json(attempt_dir(folder / "data", task, 0) / "attempt.json", attempt)


def test_compare_pairwise_on_tasks_runs_judges_their_answers(tmp_path: Path) -> None:
    from agenteval.gate.pairwise import PairwiseInputError, compare_pairwise, render_pairwise

    good, bad = "The figure is 8.6 million.", "The figure is 11.2 million."
    write_tasks_run(tmp_path / "a", {f"t{i}": bad for i in range(6)})
    write_tasks_run(tmp_path / "b", {**{f"t{i}": good for i in range(6)}, "t9": good})
    write_tasks_run(tmp_path / "c", {f"t{i}": good for i in range(6)}, status="INFRA_ERROR")
    with OpenAIServer(reply_fn=biased_judge({good}, share=0.3)) as server:
        section = {"model": "pair-judge", "base_url": server.base_url, "protocol": "openai"}
        params = deep_merge(DEFAULTS, {"judge": section, "run": {"cache_dir": None}})
        report = compare_pairwise(params, ROOT, tmp_path / "a", tmp_path / "b")
        unmeasured = compare_pairwise(params, ROOT, tmp_path / "a", tmp_path / "c")
        asked = [str(r.body) for r in server.requests]
    assert report["units"] == report["judged"] == 6 and report["left_out"] == {"in one run only": 1}
    # B's right figure beats A's wrong one, or ties where the judge followed the position
    assert report["b_losses"]["count"] == 0 and report["b_wins"]["count"] >= 3
    assert report["b_wins"]["count"] + report["ties"]["count"] == 6
    assert all("what is the figure?" in text for text in asked)  # the task's request is shown
    # an attempt that did not complete is unmeasured, never a loss or a tie
    assert unmeasured["units"] == 1
    assert unmeasured["left_out"] == {"not completed in both runs (unmeasured)": 5}
    assert "B wins" in render_pairwise(report)
    write_run(tmp_path / "s", {"s0": [good]})
    with pytest.raises(PairwiseInputError, match="tasks run"):
        compare_pairwise(params, ROOT, tmp_path / "a", tmp_path / "s")


def test_compare_pairwise_on_session_replays(tmp_path: Path) -> None:
    from agenteval.gate.pairwise import compare_pairwise

    good, bad = "The figure is 8.6 million.", "The figure is 11.2 million."
    write_run(tmp_path / "a", {f"case{i}": [good, bad] for i in range(4)}, sessions=True)
    write_run(tmp_path / "b", {f"case{i}": [good, good] for i in range(4)}, sessions=True)
    with OpenAIServer(reply_fn=biased_judge({good}, share=0.0)) as server:
        section = {"model": "pair-judge", "base_url": server.base_url, "protocol": "openai"}
        params = deep_merge(DEFAULTS, {"judge": section, "run": {"cache_dir": None}})
        report = compare_pairwise(params, ROOT, tmp_path / "a", tmp_path / "b")
    # the replayed context turn is the same on both sides (a tie); B's request reply wins
    assert report["units"] == report["judged"] == 8
    assert report["b_wins"]["count"] == 4 and report["ties"]["count"] == 4
    assert report["b_losses"]["count"] == 0
