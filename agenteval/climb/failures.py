"""Train failures: their failure class, the root-cause rollup, and what a proposer may read.

A failure's class comes from the scorecard: an unmeasured status is its own class; a FAIL is
classed by its first failing turn, by correctness when that is below the minimum (refused an
answerable question, answered an unanswerable one, a wrong value, the answer missing, no
commitment) and otherwise by its weakest dimension. What a proposer reads is the train
transcript (question, reply) and the class, with every reference answer removed by the
guard's own value reader (one matcher: what the guard refuses in an edit, `redact` removes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.climb.guard import Material, normal
from agenteval.layout import load_transcript
from agenteval.schema.scorecard import ScenarioResult, Scorecard, TurnResult
from agenteval.schema.status import Status

REMOVED = "[reference removed]"
# Reason wording of the code judge (agenteval.judges.correctness) -> failure class.
CORRECTNESS_CLASSES = (
    (re.compile(r"refused|lazy refusal"), "refused an answerable question"),
    (re.compile(r"answered although|guess"), "answered what the documents do not say"),
    (re.compile(r"instead of|denies|names .* only to deny"), "stated a wrong value"),
    (
        re.compile(r"conflicting values|alternatives|one alternative"),
        "did not commit to one answer",
    ),
    (re.compile(r"absent|does not state|missing phrases|part of"), "left the answer out"),
)


def _failing_turn(result: ScenarioResult, min_correctness: float) -> TurnResult | None:
    return next((t for t in result.turns if not t.passed), None)


def failure_class(result: ScenarioResult, reason: str | None, min_correctness: float = 4.0) -> str:
    if result.status == Status.PASS:
        return "passed"
    if result.status != Status.FAIL:
        return result.status.lower().replace("_", " ")
    turn = _failing_turn(result, min_correctness)
    if turn is None:
        return "scenario score below the pass threshold"
    correctness = turn.scores.get("correctness")
    if correctness is not None and correctness < min_correctness:
        text = (reason or "").lower()
        for pattern, name in CORRECTNESS_CLASSES:
            if pattern.search(text):
                return name
        return "incorrect (other)"
    scored = {d: s for d, s in turn.scores.items() if s is not None}
    weakest = min(scored, key=lambda d: scored[d]) if scored else "score"
    return f"weak {weakest.replace('_', ' ')}"


def _reason_of_turn(root_cause: str | None, turn: int) -> str | None:
    if not root_cause:
        return None
    parts = [p.strip() for p in root_cause.split(";")]
    return next((p for p in parts if p.startswith(f"turn {turn}:")), root_cause)


_TURN_LABEL = re.compile(r"^\s*turn \d+:\s*")


def redact(text: str, material: Material) -> str:
    """The text with every ground-truth value of every split removed, read as the guard reads
    an edit (`climb.meaning`: "sixteen weeks" goes as surely as "16 weeks", a small number
    too), and whatever a judge quotes as expected. A leading "turn N:" is a label, kept."""
    label = _TURN_LABEL.match(text)
    head, body = (label.group(0), text[label.end() :]) if label else ("", text)
    out = material.values.redact(body, REMOVED)
    return head + re.sub(r"expected '[^']*'", f"expected {REMOVED}", out)


@dataclass(frozen=True)
class Failure:
    scenario: str
    iteration: int
    category: str
    failure_class: str
    turn: int | None
    question: str | None  # the user's message of the failing turn
    reply: str | None  # what the agent answered
    reason: str | None  # the judge's reason, references removed

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def failures(
    card: Scorecard, transcripts: Path, material: Material, min_correctness: float = 4.0
) -> list[Failure]:
    """Every non-passing train iteration, readable without its reference answers."""
    out = []
    for result in card.scenarios:
        if result.status == Status.PASS:
            continue
        turn = _failing_turn(result, min_correctness)
        number = turn.turn if turn else None
        reason = _reason_of_turn(result.root_cause, number) if number else result.root_cause
        said = load_transcript(transcripts, result.id, result.iteration)
        spoken = next((t for t in (said.turns if said else []) if t.turn == number), None)
        out.append(
            Failure(
                result.id,
                result.iteration,
                result.category,
                failure_class(result, reason, min_correctness),
                number,
                spoken.user_message if spoken else None,
                redact(spoken.response, material)[:600] if spoken else None,
                redact(reason, material) if reason else None,
            )
        )
    return out


def rollup(found: Iterable[Failure]) -> list[dict[str, Any]]:
    """Failures grouped by class, largest first: count, scenarios and one example reason."""
    groups: dict[str, list[Failure]] = {}
    for failure in found:
        groups.setdefault(failure.failure_class, []).append(failure)
    rows = []
    for name, members in groups.items():
        rows.append(
            {
                "failure_class": name,
                "iterations": len(members),
                "scenarios": sorted({m.scenario for m in members}),
                "categories": sorted({m.category for m in members}),
                "example": next((m.reason for m in members if m.reason), None),
            }
        )
    return sorted(rows, key=lambda r: (-r["iterations"], r["failure_class"]))


def unique_per_scenario(found: Sequence[Failure]) -> list[Failure]:
    """One failure per scenario (its first failing iteration), for a proposer's prompt."""
    seen: dict[str, Failure] = {}
    for failure in found:
        seen.setdefault(failure.scenario, failure)
    return list(seen.values())


__all__ = ["REMOVED", "Failure", "failure_class", "failures", "normal", "redact", "rollup"]
