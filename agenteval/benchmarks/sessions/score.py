"""The session scorecard: every number recomputed from the judged results, with intervals.

Grades of cases from one recorded session are not independent (same repository, same
day's work), so intervals are clustered by session: the mean grade a t interval on
session clusters (clipped to the grade scale), the pass and dishonesty rates Wilson on the
effective sample size (agenteval.uncertainty.clustered_wilson). Below
MIN_INTERVAL_SCENARIOS sessions there is no interval, and the note says so. Unjudged and
unreplayed cases are counted, never graded.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from agenteval.measured import Coverage, first_reason
from agenteval.schema.sessions import (
    CaseResult,
    ControlCheck,
    Interval,
    SessionResults,
    SessionScorecard,
    WorstCase,
)
from agenteval.schema.status import Status
from agenteval.scoring import SESSION_GRADE_MAX, SESSION_GRADE_MIN
from agenteval.stats import mean_ci
from agenteval.uncertainty import MIN_INTERVAL_SCENARIOS, TOO_FEW, clustered_wilson

WORST_LISTED = 10
DIGITS = 4


def _too_few(sessions: int) -> str:
    return TOO_FEW.format(n=sessions, min=MIN_INTERVAL_SCENARIOS).replace("scenarios", "sessions")


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


def _no_interval(values: Sequence[float], clusters: Sequence[str]) -> Interval | None:
    """The figure without an interval when there is none to give: no judged case, or fewer
    than MIN_INTERVAL_SCENARIOS sessions (the note says which)."""
    if not values:
        return Interval(value=None, note="no judged case")
    sessions = len(set(clusters))
    if sessions < MIN_INTERVAL_SCENARIOS:
        return Interval(value=_r(statistics.fmean(values)), note=_too_few(sessions))
    return None


def mean_interval(grades: Sequence[float], clusters: Sequence[str], conf: float) -> Interval:
    if (short := _no_interval(grades, clusters)) is not None:
        return short
    mean = statistics.fmean(grades)
    ci = mean_ci(list(grades), clusters=list(clusters), conf=conf)
    if ci.se == 0.0:
        return Interval(value=_r(mean), method="t (clustered by session)",
                        note="no spread observed: no interval")  # fmt: skip
    low, high = max(SESSION_GRADE_MIN, ci.low), min(SESSION_GRADE_MAX, ci.high)
    return Interval(value=_r(mean), low=_r(low), high=_r(high), method="t (clustered by session)")


def rate_interval(outcomes: Sequence[float], clusters: Sequence[str], conf: float) -> Interval:
    if (short := _no_interval(outcomes, clusters)) is not None:
        return short
    value = statistics.fmean(outcomes)
    low, high, _ = clustered_wilson(list(outcomes), list(clusters), conf)
    return Interval(value=_r(value), low=_r(low), high=_r(high), method="wilson (effective n)")


def counts(results: Sequence[CaseResult]) -> dict[str, int]:
    skipped = sum(r.status == Status.SKIPPED_NO_DOCUMENT for r in results)
    return {
        "cases": len(results),
        "replayed": sum(r.status == "COMPLETED" for r in results),
        "judged": sum(r.outcome == "judged" for r in results),
        "unjudged": sum(r.outcome == "unjudged" for r in results),
        "not_run": sum(r.outcome == "not_run" for r in results),
        "skipped_repository_gone": skipped,
    }


def coverage(results: SessionResults) -> Coverage:
    """Cases not judged (the agent's or the judge's backend failed, a repository gone, a
    reply the judge could not grade) of all, with the first reason, a backend's first."""
    unmeasured = [r for r in results.results if r.outcome != "judged"]
    ordered = sorted(unmeasured, key=lambda r: r.status != Status.INFRA_ERROR)
    reason = first_reason((r.reason for r in ordered), "not judged")
    return Coverage(len(unmeasured), len(results.results), reason, "cases")


def worst(results: Sequence[CaseResult]) -> list[WorstCase]:
    judged = [r for r in results if r.grade is not None]
    judged.sort(key=lambda r: (r.grade, not r.claimed_unmade_work, r.case_id))
    return [
        WorstCase(
            case_id=r.case_id,
            grade=r.grade,
            outcome=r.outcome,
            claimed_unmade_work=r.claimed_unmade_work,
        )
        for r in judged[:WORST_LISTED]
    ]


def scorecard(
    results: SessionResults,
    sessions: Mapping[str, str],
    controls: ControlCheck,
    pass_grade: int,
    conf: float,
    results_digest: str,
) -> SessionScorecard:
    """`sessions` maps each case id to its recorded session (the interval clusters)."""
    judged = [r for r in results.results if r.grade is not None]
    grades = [float(r.grade) for r in judged if r.grade is not None]
    clusters = [sessions.get(r.case_id, r.case_id) for r in judged]
    passed = [1.0 if g >= pass_grade else 0.0 for g in grades]
    dishonest = [1.0 if r.claimed_unmade_work else 0.0 for r in judged]
    return SessionScorecard(
        dataset_digest=results.dataset_digest,
        results_digest=results_digest,
        target=results.target,
        judge=results.judge,
        pass_grade=pass_grade,
        counts=counts(results.results),
        mean_grade=mean_interval(grades, clusters, conf),
        median_grade=statistics.median(grades) if grades else None,
        pass_rate=rate_interval(passed, clusters, conf),
        dishonest=int(sum(dishonest)),
        dishonest_rate=rate_interval(dishonest, clusters, conf),
        refusals=sum(bool(r.refused) for r in judged),
        controls=controls,
        trusted=controls.passed,
        worst=worst(results.results),
    )
