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

from agenteval.controls.agreement import estimate, self_consistency
from agenteval.controls.build import build
from agenteval.controls.load import LoadedControl
from agenteval.findings import BINDING_FINDINGS
from agenteval.judges.base import Judge
from agenteval.judges.code import CodeJudge, judge_transcript
from agenteval.schema.controls import Control
from agenteval.schema.corpus import Manifest
from agenteval.schema.status import JUDGED_STATUSES, NO_OPINION, Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict
from agenteval.scoring import ScoringRules, fails_alone, judged_scores, turn_passes, turn_score

DEFERRED = "deferred"
Pair = tuple[SuiteItem, Transcript]


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
    certain: str | None = None  # the binding code rule that settles this control, if any
    code: str | None = None  # the code judge's own verdict on it: pass | fail | deferred

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
    scores = judged_scores(turn)  # the recompute's rules, as a scorecard would apply them
    score = turn_score(scores, rules)
    if scores.get("correctness") is None:
        why = turn.reasons.get("correctness", "correctness not judged")
        return Graded(DEFERRED, score, scores, dict(turn.reasons), why)
    passed = turn_passes(scores, score, rules)
    return Graded("pass" if passed else "fail", score, scores, dict(turn.reasons))


def code_certain(control: Control, code: Verdict, rules: ScoringRules) -> str | None:
    """The rule that makes a control *code-certain*, or None.

    A control is code-certain when its label is fail and the code judge's verdict on its
    judged turn carries a binding finding (findings.BINDING_FINDINGS) on a dimension the
    label names as failing, whose score alone fails the turn by the scoring rules (every
    other dimension at 10 would not save it). On these controls a hybrid judge must never
    pass the reply, whatever the model says. Derived from the code judge's own findings,
    never listed by hand.
    """
    if control.label.verdict != "fail" or not code.turns:
        return None
    turn = code.turns[-1]
    for dim in control.label.failing:
        rule, score = turn.findings.get(dim), turn.scores.get(dim)
        if rule in BINDING_FINDINGS and score is not None and fails_alone(dim, score, rules):
            return rule
    return None


def pairs_of(controls: Sequence[LoadedControl], manifest: Manifest, root: Path) -> list[Pair]:
    return [build(c.control, manifest, root) for c in controls]


async def judge_controls(
    judge: Judge,
    controls: Sequence[LoadedControl],
    manifest: Manifest,
    root: Path,
    rules: ScoringRules,
    repeats: int = 1,
    concurrency: int = 4,
    pairs: Sequence[Pair] | None = None,
) -> list[Outcome]:
    """Every control judged `repeats` times (independent samples for a stochastic judge);
    `pairs` replaces the built (item, transcript) pairs (the bias probes alter them)."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    built = list(pairs) if pairs is not None else pairs_of(controls, manifest, root)
    code = CodeJudge().participant

    async def one(index: int, iteration: int) -> Graded:
        item, transcript = built[index]
        sample = transcript.model_copy(update={"iteration": iteration})
        async with semaphore:
            verdict = await judge.judge(item, sample)
        return grade(verdict, rules)

    outcomes = []
    for loaded, (item, transcript) in zip(controls, built, strict=True):
        c = loaded.control
        outcome = Outcome(c.id, c.klass, loaded.split, c.label.verdict, list(c.label.failing),
                          {str(d): r for d, r in c.label.scores.items()})  # fmt: skip
        by_code = judge_transcript(item, transcript, code)
        outcome.certain = code_certain(c, by_code, rules)
        outcome.code = grade(by_code, rules).verdict
        outcomes.append(outcome)
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
    certain = [o for o in outcomes if o.certain]
    return {
        "controls": len(outcomes),
        "judged": len(judged),
        "coverage": _rate(len(judged), len(outcomes)),
        **stats,
        "confusion": table,
        "false_passes": table["fail"]["pass"],
        "false_pass_rate": _rate(table["fail"]["pass"], wrong),
        "false_pass_interval": _wilson(table["fail"]["pass"], wrong, conf),
        "false_fails": table["pass"]["fail"],
        "false_fail_rate": _rate(table["pass"]["fail"], right),
        "score_range_violations": sum(len(o.out_of_range()) for o in judged),
        "code_certain": {
            "controls": len(certain),
            "false_passes": sum(o.first.verdict == "pass" for o in certain),
            "rules": dict(sorted(Counter(o.certain for o in certain if o.certain).items())),
        },
        "code_settled": code_settled(outcomes),
    }


def code_settled(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The judge beside the code judge alone, on the controls the code judge settles (its
    verdict is pass or fail): a judge that adds a model to code must not do worse there.
    Agreement is over the controls each judged; a deferral counts against coverage."""
    settled = [o for o in outcomes if o.code not in (None, DEFERRED)]
    judged = [o for o in settled if o.first.verdict != DEFERRED]
    return {
        "controls": len(settled),
        "judged": len(judged),
        "agreement": _rate(sum(o.first.verdict == o.label for o in judged), len(judged)),
        "false_passes": sum(o.label == "fail" and o.first.verdict == "pass" for o in settled),
        "code_agreement": _rate(sum(o.code == o.label for o in settled), len(settled)),
        "code_false_passes": sum(o.label == "fail" and o.code == "pass" for o in settled),
    }


def _wilson(k: int, n: int, conf: float) -> dict[str, float | None]:
    if not n:
        return {"low": None, "high": None}
    from agenteval.stats import wilson_interval

    low, high = wilson_interval(k, n, conf)
    return {"low": round(low, 4), "high": round(high, 4)}


def consistency(outcomes: Sequence[Outcome], conf: float = 0.95) -> dict[str, Any] | None:
    """Self-consistency over repeats: flip rate, score SEM and ICC of turn scores."""
    verdicts = [[g.verdict for g in o.repeats] for o in outcomes]
    scores = [[g.score for g in o.repeats] for o in outcomes]
    return self_consistency(verdicts, scores, conf)


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
