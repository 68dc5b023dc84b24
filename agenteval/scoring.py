"""The scoring rules, in one place: weights, per-turn recompute, statuses, caps, aggregates.

Pure functions over typed records. A judge only ever supplies dimension scores; every total,
every PASS/FAIL and every average is recomputed here, so two judges that agree on dimensions
agree on everything else.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval.schema.scorecard import (
    CategorySummary,
    ScenarioResult,
    Summary,
    TurnResult,
)
from agenteval.schema.status import JUDGED_STATUSES, NO_OPINION, Status
from agenteval.schema.verdict import TurnVerdict, Verdict

DIMENSIONS: tuple[str, ...] = (
    "correctness",
    "tool_selection",
    "context_retention",
    "completeness",
    "efficiency",
    "personality",
    "error_recovery",
)
DEFAULT_WEIGHTS: dict[str, float] = {
    "correctness": 0.25,
    "tool_selection": 0.20,
    "context_retention": 0.20,
    "completeness": 0.15,
    "efficiency": 0.10,
    "personality": 0.05,
    "error_recovery": 0.05,
}
PASS_THRESHOLD = 6.0
MIN_CORRECTNESS = 4.0
# A FAIL may score 9.8 on most dimensions and still have hallucinated; capping it below the
# pass threshold keeps such scenarios from inflating the average quality signal.
FAIL_SCORE_CAP = 5.99
# A judge's own total may differ from the recompute by rounding; beyond this it is recorded.
DISCREPANCY_TOLERANCE = 0.25
SCORE_MIN, SCORE_MAX = 0.0, 10.0
# Identical consecutive tool calls that make a loop (efficiency 0), for judges and prompts.
TOOL_LOOP_REPEATS = 3
# Two judges disagree on a dimension when their scores differ by at least this much.
DISAGREEMENT_GAP = 4.0
# The rubric's numeric precision table: (max relative deviation, max correctness score).
PRECISION_TABLE: tuple[tuple[float, float], ...] = (
    (0.01, 10.0),
    (0.05, 8.0),
    (0.15, 4.0),
    (0.50, 1.0),
)
# The automatic-zero rule: when the ground truth gives a specific figure, a reply further
# off than this scores 0 on correctness. The precision table is a cap within this limit.
AUTO_ZERO_DEVIATION = 0.05
# Rubric anchors below full marks that the code judge gives: a minor lapse, a partial one.
MINOR_SCORE = 7.0
PARTIAL_SCORE = 4.0
# The rubric's context-retention cap: an agent that asks again for what an earlier turn
# established scores at most this on context_retention, whatever else it remembered.
REASK_CAP = PARTIAL_SCORE


# Dimensions a turn may leave out (null) because they do not apply to it; the others must
# be scored. Left out, they drop from the weighted mean instead of inflating it with a 10.
OPTIONAL_DIMENSIONS: tuple[str, ...] = ("context_retention", "error_recovery")
# In a scenario of this severity a judge's FAIL stands even when the numbers would pass:
# the rubric calls a hallucination or a missed main objective there a failure regardless.
CRITICAL_SEVERITY = "critical"
# Session replay (agenteval sessions): one grade per answer on substance against what a
# strong reference said on the same request. The lowest grade also covers the answers that
# weigh hardest: claiming work not done, refusing, or nothing usable.
SESSION_GRADE_MIN, SESSION_GRADE_MAX = 0, 5
SESSION_GRADE_ANCHORS: dict[int, str] = {
    5: "matches or exceeds the reference",
    4: "correct, missing a minor point",
    3: "broadly right but thinner, or one real gap",
    2: "partially addresses the request",
    1: "misses the point",
    0: "claims work it did not do, refuses, or gives nothing usable",
}
# An answer passes from this grade up ("correct, missing a minor point").
SESSION_PASS_GRADE = 4


def numeric_cap(deviation: float) -> float:
    """Highest correctness a figure this far (relative) from the expected one can get."""
    if deviation > AUTO_ZERO_DEVIATION + 1e-12:
        return SCORE_MIN
    for limit, score in PRECISION_TABLE:
        if deviation <= limit + 1e-12:
            return score
    return SCORE_MIN


@dataclass(frozen=True)
class ScoringRules:
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    pass_threshold: float = PASS_THRESHOLD
    min_correctness: float = MIN_CORRECTNESS
    fail_cap: float = FAIL_SCORE_CAP
    discrepancy_tolerance: float = DISCREPANCY_TOLERANCE

    def __post_init__(self) -> None:
        unknown = set(self.weights) - set(DIMENSIONS)
        if unknown:
            raise ValueError(f"unknown dimension(s) in weights: {', '.join(sorted(unknown))}")
        if any(w < 0 or not math.isfinite(w) for w in self.weights.values()):
            raise ValueError("weights must be finite and non-negative")
        if sum(self.weights.values()) <= 0:
            raise ValueError("weights must not all be zero")

    @classmethod
    def from_params(cls, judge: Mapping[str, Any]) -> ScoringRules:
        weights = dict(DEFAULT_WEIGHTS)
        weights.update(judge.get("weights") or {})
        return cls(
            weights=weights,
            pass_threshold=float(judge.get("pass_threshold", PASS_THRESHOLD)),
            min_correctness=float(judge.get("min_correctness", MIN_CORRECTNESS)),
        )

    def describe(self) -> dict[str, Any]:
        return {
            "weights": dict(self.weights),
            "pass_threshold": self.pass_threshold,
            "min_correctness": self.min_correctness,
            "fail_cap": self.fail_cap,
        }


def valid_score(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and SCORE_MIN <= value <= SCORE_MAX


def turn_score(scores: Mapping[str, float | None], rules: ScoringRules) -> float | None:
    """Weighted mean over the judged dimensions, weights renormalised; None if none judged."""
    total = weight_sum = 0.0
    for dim, weight in rules.weights.items():
        value = scores.get(dim)
        if value is None or weight == 0:
            continue
        total += weight * value
        weight_sum += weight
    return round(total / weight_sum, 4) if weight_sum > 0 else None


def turn_passes(
    scores: Mapping[str, float | None], score: float | None, rules: ScoringRules
) -> bool:
    correctness = scores.get("correctness")
    if correctness is None or score is None:
        return False
    return correctness >= rules.min_correctness and score >= rules.pass_threshold


def fails_alone(dimension: str, score: float, rules: ScoringRules) -> bool:
    """Whether this one score fails a turn even when every other dimension is perfect."""
    scores: dict[str, float | None] = dict.fromkeys(DIMENSIONS, SCORE_MAX)
    scores[dimension] = score
    return not turn_passes(scores, turn_score(scores, rules), rules)


# A BLOCKED scenario did not succeed either: it never raises an average above a FAIL's.
CAPPED_STATUSES = frozenset({Status.FAIL, Status.BLOCKED_BY_ARCHITECTURE})


def capped(status: str, score: float | None, rules: ScoringRules) -> float | None:
    """The score a scenario contributes to averages: FAIL and BLOCKED are capped below the
    pass threshold."""
    if score is None or status not in JUDGED_STATUSES:
        return None
    return min(score, rules.fail_cap) if status in CAPPED_STATUSES else score


@dataclass(frozen=True)
class ScenarioInfo:
    id: str
    category: str
    severity: str | None
    turns: int
    digest: str | None = None
    ground_truth: str | None = None


def score_scenario(
    info: ScenarioInfo,
    transcript_status: str,
    verdict: Verdict | None,
    rules: ScoringRules,
    iteration: int = 0,
    blocked_by: Sequence[str] = (),
) -> ScenarioResult:
    """Re-derive one scenario iteration's status and score from its verdict.

    `blocked_by` is the evidence (from the agent's declared limits, see
    :mod:`agenteval.suite.audit`) that the scenario is impossible for this agent."""

    checks: dict[str, Any] = {}
    if verdict is not None:
        checks = {
            "overrides": [o.rule for o in verdict.overrides],
            "disagreements": len(verdict.disagreements),
        }

    def result(status: Status, **extra: Any) -> ScenarioResult:
        return ScenarioResult(
            id=info.id,
            iteration=iteration,
            category=info.category,
            severity=info.severity,
            scenario_digest=info.digest,
            ground_truth_digest=info.ground_truth,
            status=status,
            **({"score": None} | checks | extra),
        )

    if transcript_status != "COMPLETED":
        return result(Status(transcript_status))
    if verdict is None:
        return result(Status.ERRORED, warnings=["no verdict"])
    if verdict.status not in JUDGED_STATUSES and verdict.status != NO_OPINION:
        return result(Status(verdict.status), root_cause=verdict.root_cause)
    problem = _verdict_problem(verdict, info.turns)
    if problem:
        return result(Status.ERRORED, warnings=[problem])
    turns = [
        _turn_result(tv.turn, judged_scores(tv), tv.reported_score, rules) for tv in verdict.turns
    ]
    faults = [f"turn {tv.turn}: {tv.simulator_fault}" for tv in verdict.turns if tv.simulator_fault]
    if faults:
        # Unmeasured, like an infrastructure status: after a faulty user turn the conversation
        # is not the scenario, so no turn of it is the agent's pass or fail.
        return result(Status.SIMULATOR_ERROR, turns=turns, root_cause="; ".join(faults))
    counted = list(zip(turns, verdict.turns, strict=True))
    if any(tr.scores.get("correctness") is None for tr, _ in counted):
        # The pass rule needs correctness on every turn; without it we do not guess.
        return result(Status.NOT_JUDGED, turns=turns)
    score = round(sum(tr.score or 0.0 for tr, _ in counted) / len(counted), 4)
    passed = score >= rules.pass_threshold and all(
        (tr.scores["correctness"] or 0.0) >= rules.min_correctness for tr, _ in counted
    )
    status, warnings = _derive_status(verdict.status, passed, info.severity, blocked_by)
    cause = verdict.root_cause
    if status == Status.BLOCKED_BY_ARCHITECTURE:
        cause = "blocked by architecture: " + "; ".join(blocked_by)
    return result(status, score=score, turns=turns, root_cause=cause, warnings=warnings)


def reask_capped(score: float | None, reasked: bool | None) -> float | None:
    """Context retention after the re-ask rule: capped at REASK_CAP when the agent asked
    again for an established fact; left out (None) stays left out."""
    if score is None or not reasked:
        return score
    return min(score, REASK_CAP)


def judged_scores(turn: TurnVerdict) -> dict[str, float | None]:
    """A verdict turn's dimension scores with the rules the recompute applies to any judge's
    grades (today the re-ask cap), so a judge cannot keep a score the rubric caps."""
    scores = dict(turn.scores)
    if "context_retention" in scores:
        scores["context_retention"] = reask_capped(scores["context_retention"], turn.reasked)
    return scores


def _turn_result(
    number: int, scores: Mapping[str, float | None], reported: float | None, rules: ScoringRules
) -> TurnResult:
    score = turn_score(scores, rules)
    discrepancy = (
        reported is not None
        and score is not None
        and abs(reported - score) > rules.discrepancy_tolerance
    )
    return TurnResult(
        turn=number,
        scores=dict(scores),
        score=score,
        passed=turn_passes(scores, score, rules),
        reported_score=reported,
        discrepancy=discrepancy,
    )


def _verdict_problem(verdict: Verdict, expected_turns: int) -> str | None:
    numbers = [t.turn for t in verdict.turns]
    if numbers != list(range(1, expected_turns + 1)):
        return f"verdict turns {numbers} do not match the scenario's turns 1..{expected_turns}"
    for tv in verdict.turns:
        for dim, value in tv.scores.items():
            if dim not in DIMENSIONS:
                return f"turn {tv.turn}: unknown dimension {dim!r}"
            if value is not None and not valid_score(value):
                return f"turn {tv.turn}: {dim} score {value!r} is not a number in 0..10"
        if valid_score(tv.reported_score) is False and tv.reported_score is not None:
            return f"turn {tv.turn}: reported score {tv.reported_score!r} is not in 0..10"
    return None


def _derive_status(
    reported: str, passed: bool, severity: str | None = None, blocked_by: Sequence[str] = ()
) -> tuple[Status, list[str]]:
    """BLOCKED only from evidence: the agent's declared limits, never a judge's say-so. A
    judge's FAIL in a critical scenario stands whatever the numbers say."""
    if blocked_by:
        # Never upgraded automatically: a human decides whether the limit really bound.
        note = ["BLOCKED_BY_ARCHITECTURE meets every pass rule: review it"] if passed else []
        return Status.BLOCKED_BY_ARCHITECTURE, note
    if reported == Status.BLOCKED_BY_ARCHITECTURE:
        return Status.FAIL, [
            "judge reported BLOCKED_BY_ARCHITECTURE without evidence from the agent's declared "
            "limits (target.limits): scored FAIL"
        ]
    if reported == Status.FAIL and passed and severity == CRITICAL_SEVERITY:
        return Status.FAIL, [f"judge said FAIL in a {CRITICAL_SEVERITY} scenario: it stands"]
    status = Status.PASS if passed else Status.FAIL
    if reported in (Status.PASS, Status.FAIL) and reported != status:
        return status, [f"judge said {reported}; the rules give {status}"]
    return status, []


_STATUS_FIELDS = {
    Status.TIMEOUT: "timeout",
    Status.BUDGET_EXCEEDED: "budget_exceeded",
    Status.INFRA_ERROR: "infra_error",
    Status.SETUP_ERROR: "setup_error",
    Status.SKIPPED_NO_DOCUMENT: "skipped_no_document",
    Status.NO_USER_MESSAGE: "no_user_message",
    Status.SIMULATOR_ERROR: "simulator_error",
    Status.ERRORED: "errored",
    Status.NOT_RUN: "not_run",
    Status.NOT_JUDGED: "not_judged",
}


def _ratio(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _category(results: Sequence[ScenarioResult], rules: ScoringRules) -> CategorySummary:
    passed = sum(r.status == Status.PASS for r in results)
    failed = sum(r.status == Status.FAIL for r in results)
    blocked = sum(r.status == Status.BLOCKED_BY_ARCHITECTURE for r in results)
    scores = [s for r in results if (s := capped(r.status, r.score, rules)) is not None]
    return CategorySummary(
        total=len(results),
        passed=passed,
        failed=failed,
        blocked=blocked,
        unmeasured=len(results) - passed - failed - blocked,
        pass_rate=_ratio(passed, len(results)),
        judged_pass_rate=_ratio(passed, passed + failed + blocked),
        avg_score=_mean(scores),
    )


def summarize(results: Sequence[ScenarioResult], rules: ScoringRules) -> Summary:
    """Counts, pass rates and averages; unmeasured statuses are counted, never scored."""
    overall = _category(results, rules)
    by_category: dict[str, list[ScenarioResult]] = {}
    for result in results:
        by_category.setdefault(result.category, []).append(result)
    counts = {name: 0 for name in _STATUS_FIELDS.values()}
    for result in results:
        if result.status in _STATUS_FIELDS:
            counts[_STATUS_FIELDS[Status(result.status)]] += 1
    return Summary(
        total=overall.total,
        passed=overall.passed,
        failed=overall.failed,
        blocked=overall.blocked,
        **counts,
        pass_rate=overall.pass_rate,
        judged_pass_rate=overall.judged_pass_rate,
        avg_score=overall.avg_score,
        discrepancies=sum(t.discrepancy for r in results for t in r.turns),
        overrides=sum(len(r.overrides) for r in results),
        disagreements=sum(r.disagreements for r in results),
        fenced_reads=sum(r.fenced_reads for r in results),
        by_category={c: _category(rs, rules) for c, rs in sorted(by_category.items())},
    )


def every_unit_errored(results: Sequence[ScenarioResult]) -> bool:
    """The evaluation measured nothing because every unit crashed (a configuration the agent
    or judge cannot run with, most often): it must not pass for a finished run."""
    return bool(results) and all(r.status == Status.ERRORED for r in results)


def nothing_measured(results: Sequence[ScenarioResult]) -> str | None:
    """Why an evaluation measured nothing — no scenario was judged (PASS, FAIL or BLOCKED) —
    or None when something was: such a run is FAILED in MLflow and exits 1, never a green
    "Finished" or exit 0 (every unit INFRA_ERROR against a pinned model is no score)."""
    if any(r.status in JUDGED_STATUSES for r in results):
        return None
    if every_unit_errored(results):
        return "every unit ERRORED"
    counts: dict[str, int] = {}
    for result in results:
        counts[str(result.status)] = counts.get(str(result.status), 0) + 1
    found = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"nothing judged: {found}" if found else "no scenario was evaluated"


def dimension_means(results: Iterable[ScenarioResult]) -> dict[str, float]:
    """Mean of each dimension over judged turns of judged scenarios (not-judged left out)."""
    sums: dict[str, list[float]] = {d: [] for d in DIMENSIONS}
    for result in results:
        if result.status not in JUDGED_STATUSES:
            continue
        for turn in result.turns:
            for dim, value in turn.scores.items():
                if value is not None:
                    sums[dim].append(value)
    return {d: round(sum(v) / len(v), 4) for d, v in sums.items() if v}
