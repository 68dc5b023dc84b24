"""Tasks expectations: proposing limits from runs, and gating a run against them.

Expectations live in `eval/tasks/expectations/<model>.<suite>.json` and are tied to the
model, the harness, the suite and the judge's model: a run that differs in any of them is
*not comparable* (never a pass, never a miss). A run meets its expectations when every draw
(repeat) does:

* passed >= `min_passed`; verified coding tasks >= `min_verified` (absent: not gated yet,
  never fails); mean quality >= `min_quality`, and a task the judge could not grade fails
  this check rather than being skipped; misreported tasks <= `max_misreported`;
* total tokens <= `max_total_tokens` (a run that counted none cannot show it met the limit),
  tool calls <= `max_steps`, wall seconds <= `max_wall_seconds`.

`propose` writes limits every draw of several runs met: each floor the worst draw's, each
ceiling the costliest draw's, then one noisy draw's headroom (the scenario gate's constants:
one task may flip and one more change go unverified, quality may drop 0.5, tokens and steps
may grow 35%; runtime, which includes loading the model, 50%).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from agenteval.fileio import read_json
from agenteval.gate.expectations import FLIP_HEADROOM, SCORE_HEADROOM, USAGE_HEADROOM
from agenteval.schema.input_error import InputError
from agenteval.schema.located import load_located
from agenteval.schema.problems import Problem
from agenteval.schema.status import Status
from agenteval.schema.task_results import (
    Draw,
    TaskExpectations,
    TaskMeasure,
    TaskResult,
    TaskScorecard,
)

WALL_HEADROOM = 1.5
EXPECTATIONS_DIR = "eval/tasks/expectations"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]+")


class ExpectationsError(InputError):
    """Problems of an expectations file."""


def expectations_path(root: Path, model: str, suite: str) -> Path:
    return root / EXPECTATIONS_DIR / f"{_UNSAFE.sub('_', model)}.{suite}.json"


def load_expectations(path: Path) -> TaskExpectations:
    located = load_located(path)
    if isinstance(located, Problem):
        raise ExpectationsError([located])
    try:
        return TaskExpectations.model_validate(located.data)
    except ValidationError as exc:
        raise ExpectationsError(
            [
                located.problem(tuple(e["loc"]), f"{'.'.join(map(str, e['loc']))}: {e['msg']}")
                for e in exc.errors()
            ]
        ) from None


def load_scorecard(run: Path) -> TaskScorecard:
    """A run folder (or the scorecard.json itself) of `agenteval tasks run` or the pipeline."""
    path = run if run.is_file() else run / "scorecard.json"
    try:
        return TaskScorecard.model_validate(read_json(path))
    except (OSError, ValueError) as exc:
        raise ExpectationsError([Problem(str(path), 1, f"not a tasks scorecard: {exc}")]) from None


@dataclass
class Check:
    name: str
    limit: object
    actual: object
    ok: bool
    note: str = ""


@dataclass
class GateOutcome:
    status: str  # pass | fail | not_gated | not_comparable
    reason: str = ""
    checks: list[Check] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [
            f"tasks gate: {self.status.upper().replace('_', ' ')}"
            + (f" ({self.reason})" if self.reason else "")
        ]
        for c in self.checks:
            mark = "ok  " if c.ok else "MISS"
            note = f" ({c.note})" if c.note else ""
            actual = "n/a" if c.actual is None else c.actual
            out.append(f"  {mark} {c.name}: {actual} (limit {c.limit}){note}")
        return out


def identity_differences(card: TaskScorecard, expect: TaskExpectations) -> list[str]:
    pairs = [
        ("model", expect.model, card.model),
        ("suite", expect.suite, card.suite),
        ("harness", expect.harness, card.harness.kind),
        ("judge_model", expect.judge_model, card.judge.model),
    ]
    return [f"{name}: expected {a!r}, run has {b!r}" for name, a, b in pairs if a != b]


def _at_least(name: str, limit: float | int | None, actual: float | int | None) -> Check:
    if limit is None:
        return Check(name, "none", actual, True, "not gated yet")
    if actual is None:
        return Check(name, limit, "n/a", False, "not measured")
    return Check(name, limit, actual, actual >= limit)


def _at_most(name: str, limit: float | int | None, actual: float | int | None) -> Check:
    if limit is None:
        return Check(name, "none", actual, True, "not gated")
    if actual is None:
        return Check(name, limit, "n/a", False, "not counted")
    return Check(name, limit, actual, actual <= limit)


def _wall(prefix: str, expect: TaskExpectations, d: Draw) -> Check:
    if d.wall_seconds is None and expect.max_wall_seconds is not None:
        return Check(prefix + "wall_seconds", expect.max_wall_seconds, "n/a", True, "not timed")
    return _at_most(prefix + "wall_seconds", expect.max_wall_seconds, d.wall_seconds)


def draw_checks(d: Draw, expect: TaskExpectations, card: TaskScorecard) -> list[Check]:
    prefix = f"r{d.repeat} "
    rows = [r for r in card.tasks if r.repeat == d.repeat]
    unjudged = [r.task_id for r in rows if r.quality is None]
    quality = _at_least(prefix + "quality", expect.min_quality, d.quality)
    if expect.min_quality is not None and unjudged:
        quality = Check(quality.name, expect.min_quality, d.quality, False,
                        f"not graded: {', '.join(unjudged)}")  # fmt: skip
    no_judge = card.judge.model is None
    unmeasured = [
        r.task_id
        for r in rows
        if r.result not in (Status.PASS, Status.FAIL)
        and not (no_judge and r.result == Status.NOT_JUDGED)
    ]
    return [
        _at_least(prefix + "passed", expect.min_passed, d.passed),
        _at_least(prefix + "verified", expect.min_verified, d.verified),
        quality,
        _at_most(prefix + "misreported", expect.max_misreported, d.misreported),
        _at_most(prefix + "total_tokens", expect.max_total_tokens, d.total_tokens),
        _at_most(prefix + "steps", expect.max_steps, d.steps),
        _wall(prefix, expect, d),
        Check(
            prefix + "measured",
            "all",
            f"{len(rows) - len(unmeasured)}/{len(rows)}",
            not unmeasured,
            f"not measured: {', '.join(unmeasured)}" if unmeasured else "",
        ),
    ]


def check(card: TaskScorecard, expect: TaskExpectations | None) -> GateOutcome:
    if expect is None:
        return GateOutcome("not_gated", f"no expectations for {card.model} on {card.suite} yet")
    differences = identity_differences(card, expect)
    if differences:
        return GateOutcome("not_comparable", "; ".join(differences))
    checks = [c for d in card.draws for c in draw_checks(d, expect, card)]
    return GateOutcome("pass" if all(c.ok for c in checks) else "fail", "", checks)


def _same(cards: Sequence[tuple[str, TaskScorecard]]) -> None:
    first = cards[0][1]
    for source, card in cards[1:]:
        for name, a, b in (
            ("model", first.model, card.model),
            ("suite", first.suite, card.suite),
            ("harness", first.harness.kind, card.harness.kind),
            ("judge model", first.judge.model, card.judge.model),
            ("tasks", first.task_ids, card.task_ids),
        ):
            if a != b:
                raise ExpectationsError(
                    [Problem(source, 1, f"{name} differs from {cards[0][0]}: {a!r} vs {b!r}")]
                )


def _ceil(value: float | None, factor: float) -> int | None:
    return None if value is None else math.ceil(value * factor)


def _measure(task_id: str, mine: Sequence[TaskResult]) -> TaskMeasure:
    passes = sum(r.result == Status.PASS for r in mine)
    tokens = [r.total_tokens for r in mine if r.total_tokens is not None]
    walls = [r.wall_seconds for r in mine if r.wall_seconds is not None]
    qualities = [r.quality for r in mine if r.quality is not None]
    return TaskMeasure(
        id=task_id,
        result=f"PASS {passes}/{len(mine)}",
        verified=all(bool(r.verified) for r in mine) if mine[0].kind == "coding" else None,
        steps=max(r.steps for r in mine),
        total_tokens=max(tokens) if tokens else None,
        wall_seconds=max(walls) if walls else None,
        quality=min(qualities) if qualities else None,
    )


def propose(cards: Sequence[tuple[str, TaskScorecard]]) -> TaskExpectations:
    if not cards:
        raise ExpectationsError([Problem("propose", 1, "no runs given")])
    _same(cards)
    draws = [d for _, card in cards for d in card.draws]
    worst = min(draws, key=lambda d: (d.passed, d.verified))
    qualities = [d.quality for d in draws]
    tokens = [d.total_tokens for d in draws if d.total_tokens is not None]
    walls = [d.wall_seconds for d in draws if d.wall_seconds is not None]
    first = cards[0][1]
    rows = [r for _, card in cards for r in card.tasks]
    measures = []
    for task_id in first.task_ids:
        measures.append(_measure(task_id, [r for r in rows if r.task_id == task_id]))
    commits = sorted({c.measured_on.get("commit", "?") for _, c in cards})
    machines = sorted({c.measured_on.get("machine", "?") for _, c in cards})
    return TaskExpectations(
        suite=first.suite,
        model=first.model,
        harness=first.harness.kind,
        judge_model=first.judge.model,
        measured_on={"commit": ",".join(commits), "machine": ",".join(machines)},
        runs=[f"{source} r{d.repeat}" for source, card in cards for d in card.draws],
        measured=worst,
        tasks=measures,
        min_passed=max(0, min(d.passed for d in draws) - FLIP_HEADROOM),
        min_verified=max(0, min(d.verified for d in draws) - FLIP_HEADROOM),
        min_quality=None
        if any(q is None for q in qualities)
        else round(min(q for q in qualities if q is not None) - SCORE_HEADROOM, 2),
        max_misreported=max(d.misreported for d in draws) + FLIP_HEADROOM,
        max_total_tokens=_ceil(max(tokens), USAGE_HEADROOM) if tokens else None,
        max_steps=_ceil(max(d.steps for d in draws), USAGE_HEADROOM),
        max_wall_seconds=round(max(walls) * WALL_HEADROOM, 1) if walls else None,
    )
