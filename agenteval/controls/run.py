"""Judging controls with any judge, and what the verdicts say about that judge.

The judge is whatever `make_judge(params, root)` builds: it gets each control as the same
(SuiteItem, Transcript) pair a real run produces, with no agent and no simulator involved.
A turn the judge could not grade on correctness is deferred: it counts against coverage,
never as a pass or a fail.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.controls.agreement import estimate, icc_oneway
from agenteval.controls.build import build
from agenteval.controls.load import LoadedControl
from agenteval.judges.base import Judge
from agenteval.schema.corpus import Manifest
from agenteval.schema.status import JUDGED_STATUSES, NO_OPINION, Status
from agenteval.schema.verdict import Verdict
from agenteval.scoring import ScoringRules, turn_passes, turn_score

DEFERRED = "deferred"


@dataclass
class Graded:
    """One judging of one control's judged turn."""

    verdict: str  # pass | fail | deferred
    score: float | None
    scores: dict[str, float | None]
    reasons: dict[str, str]
    deferral: str | None = None


@dataclass
class Outcome:
    id: str
    klass: str
    split: str
    label: str
    failing: list[str]
    ranges: Mapping[str, tuple[float, float]]
    repeats: list[Graded] = field(default_factory=list)

    @property
    def first(self) -> Graded:
        return self.repeats[0]

    def out_of_range(self) -> list[str]:
        found = []
        for dim, (low, high) in self.ranges.items():
            value = self.first.scores.get(dim)
            if value is not None and not low <= value <= high:
                found.append(f"{dim}={value:g} not in [{low:g}, {high:g}]")
        return found


def grade(verdict: Verdict, rules: ScoringRules) -> Graded:
    """The judged (last) turn's pass/fail by the scoring rules, or deferred with the reason."""
    # NOT_JUDGED may come from earlier turns alone; only the judged (last) turn counts here.
    if verdict.status not in (*JUDGED_STATUSES, NO_OPINION, Status.NOT_JUDGED):
        why = verdict.error or verdict.root_cause or verdict.status
        return Graded(DEFERRED, None, {}, {}, f"{verdict.status}: {why}")
    if not verdict.turns:
        return Graded(DEFERRED, None, {}, {}, "no turn graded")
    turn = verdict.turns[-1]
    score = turn_score(turn.scores, rules)
    if turn.scores.get("correctness") is None:
        why = turn.reasons.get("correctness", "correctness not judged")
        return Graded(DEFERRED, score, dict(turn.scores), dict(turn.reasons), why)
    passed = turn_passes(turn.scores, score, rules)
    return Graded("pass" if passed else "fail", score, dict(turn.scores), dict(turn.reasons))


async def judge_controls(
    judge: Judge,
    controls: Sequence[LoadedControl],
    manifest: Manifest,
    root: Path,
    rules: ScoringRules,
    repeats: int = 1,
    concurrency: int = 4,
) -> list[Outcome]:
    """Every control judged `repeats` times (independent samples for a stochastic judge)."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    pairs = [build(c.control, manifest, root) for c in controls]

    async def one(index: int, iteration: int) -> Graded:
        item, transcript = pairs[index]
        sample = transcript.model_copy(update={"iteration": iteration})
        async with semaphore:
            verdict = await judge.judge(item, sample)
        return grade(verdict, rules)

    outcomes = []
    for loaded in controls:
        c = loaded.control
        outcomes.append(
            Outcome(c.id, c.klass, loaded.split, c.label.verdict, list(c.label.failing),
                    {str(d): r for d, r in c.label.scores.items()})
        )  # fmt: skip
    jobs = [(i, k) for k in range(repeats) for i in range(len(controls))]
    results = await asyncio.gather(*(one(i, k) for i, k in jobs))
    for (i, _k), graded in zip(jobs, results, strict=True):
        outcomes[i].repeats.append(graded)
    return outcomes


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _confusion(outcomes: Sequence[Outcome]) -> dict[str, dict[str, int]]:
    table = {label: {"pass": 0, "fail": 0, DEFERRED: 0} for label in ("pass", "fail")}
    for o in outcomes:
        table[o.label][o.first.verdict] += 1
    return table


def summarize(
    outcomes: Sequence[Outcome], resamples: int = 2000, conf: float = 0.95, seed: int = 0
) -> dict[str, Any]:
    """Agreement (raw, kappa, AC1 with intervals), confusion, error rates and coverage."""
    judged = [o for o in outcomes if o.first.verdict != DEFERRED]
    labels = [int(o.label == "pass") for o in judged]
    verdicts = [int(o.first.verdict == "pass") for o in judged]
    table = _confusion(outcomes)
    wrong = table["fail"]["pass"] + table["fail"]["fail"]
    right = table["pass"]["pass"] + table["pass"]["fail"]
    stats = {
        name: estimate(name, labels, verdicts, resamples, conf, seed).as_dict()
        for name in ("agreement", "kappa", "ac1")
    }
    return {
        "controls": len(outcomes),
        "judged": len(judged),
        "coverage": _rate(len(judged), len(outcomes)),
        **stats,
        "confusion": table,
        "false_passes": table["fail"]["pass"],
        "false_pass_rate": _rate(table["fail"]["pass"], wrong),
        "false_fails": table["pass"]["fail"],
        "false_fail_rate": _rate(table["pass"]["fail"], right),
        "score_range_violations": sum(len(o.out_of_range()) for o in judged),
    }


def consistency(outcomes: Sequence[Outcome]) -> dict[str, Any] | None:
    """Self-consistency over repeats: identical-verdict share and ICC of turn scores."""
    k = min((len(o.repeats) for o in outcomes), default=0)
    if k < 2:
        return None
    same = sum(len({g.verdict for g in o.repeats[:k]}) == 1 for o in outcomes)
    rows = [
        [g.score for g in o.repeats[:k]]
        for o in outcomes
        if all(g.score is not None for g in o.repeats[:k])
    ]
    return {
        "repeats": k,
        "identical_verdicts": _rate(same, len(outcomes)),
        "icc_scores": icc_oneway(rows),  # type: ignore[arg-type]
        "scored_controls": len(rows),
    }


def by_class(outcomes: Sequence[Outcome]) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[Outcome]] = {}
    for o in outcomes:
        groups.setdefault(o.klass, []).append(o)
    rows = {}
    for name, group in sorted(groups.items()):
        judged = [o for o in group if o.first.verdict != DEFERRED]
        agree = sum(o.first.verdict == o.label for o in judged)
        rows[name] = {
            "controls": len(group),
            "judged": len(judged),
            "coverage": _rate(len(judged), len(group)),
            "agreement": _rate(agree, len(judged)),
            "false_passes": sum(o.label == "fail" and o.first.verdict == "pass" for o in group),
            "false_fails": sum(o.label == "pass" and o.first.verdict == "fail" for o in group),
        }
    return rows


def details(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Per control: label, verdict, scores and reasons, for reading disagreements."""
    rows = []
    for o in outcomes:
        g = o.first
        rows.append(
            {
                "id": o.id,
                "class": o.klass,
                "split": o.split,
                "label": o.label,
                "failing": o.failing,
                "verdict": g.verdict,
                "agrees": None if g.verdict == DEFERRED else g.verdict == o.label,
                "score": g.score,
                "scores": g.scores,
                "deferral": g.deferral,
                "reasons": g.reasons,
                "out_of_range": o.out_of_range(),
                "repeat_verdicts": dict(Counter(r.verdict for r in o.repeats)),
            }
        )
    return rows
