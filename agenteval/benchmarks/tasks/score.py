"""Attempt records and grades into results: PASS only when every check holds.

A coding task PASSes when its attempt COMPLETED, every `expect` check held and nothing ran
after the answer on things the request never touched. A question task PASSes when every
`must_establish` point is established (and nothing ran after the answer): code settles the
points it can read (`points`), the judge only the ones code left open; a point code found not
established FAILs whatever the judge says. With points open and no usable grade it is
NOT_JUDGED, and with a judge backend that failed, INFRA_ERROR: unmeasured, never a FAIL.
An attempt that did not complete keeps its unmeasured status. The judge's four dimensions
never decide a task: they are its quality.
"""

from __future__ import annotations

import socket
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agenteval.benchmarks.tasks.points import read_answer
from agenteval.benchmarks.tasks.rules import read_attempt
from agenteval.measured import Coverage, first_reason
from agenteval.schema.status import Status
from agenteval.schema.task_records import DIMENSIONS, TaskAttempt, TaskGrade
from agenteval.schema.task_results import Draw, TaskResult
from agenteval.schema.tasks import Task
from agenteval.stamps import code_stamp, commits_of
from agenteval.stats import wilson_interval

DIGITS = 4


def points_result(task: Task, answer: str | None, grade: TaskGrade | None) -> tuple[str, list[str]]:
    """Code settles every point it can read (`points`); a judge, when one graded, only the
    points code left open: it adds to what code settled, never overturns it."""
    readings = read_answer(task.must_establish, answer, task.prompt)
    judged = grade.established if grade is not None and grade.status == "judged" else None
    if judged is not None and len(judged) != len(readings):
        judged = None
    verdicts: list[tuple[bool | None, str]] = []
    for i, reading in enumerate(readings):
        if reading.established is not None or judged is None:
            verdicts.append((reading.established, f"code: {reading.reason}"))
        else:
            verdicts.append((judged[i], "the judge"))
    failed = [f"{i + 1} ({why})" for i, (ok, why) in enumerate(verdicts) if ok is False]
    if failed:
        return Status.FAIL, [f"must_establish point(s) not established: {'; '.join(failed)}"]
    open_points = [i + 1 for i, (ok, _) in enumerate(verdicts) if ok is None]
    if not open_points:
        return Status.PASS, []
    if grade is not None and grade.status == "error":
        return Status.INFRA_ERROR, [f"the judge's backend failed: {grade.reason}"]
    why = grade.reason if grade is not None and grade.reason else "no usable grade"
    return Status.NOT_JUDGED, [f"point(s) {open_points} need a judge, not judged: {why}"]


def task_result(task: Task, attempt: TaskAttempt, grade: TaskGrade | None) -> TaskResult:
    coding = task.kind == "coding"
    reading = read_attempt(attempt, coding)
    reasons: list[str] = []
    result: str
    if attempt.status != "COMPLETED":
        result = attempt.status
        reasons.append(f"{attempt.status}: {attempt.error or 'no detail'}")
    elif coding:
        result = Status.PASS if reading.checks_ok else Status.FAIL
        reasons += reading.failed_checks
    else:
        result, why = points_result(task, attempt.final_answer, grade)
        reasons += why
    if reading.after_answer and result in (Status.PASS, Status.FAIL):
        result = Status.FAIL
        reasons.append(f"tool calls after the answer on untouched things: {reading.after_answer}")
    judged = grade is not None and grade.status == "judged" and grade.scores is not None
    scores = grade.scores.model_dump() if judged and grade and grade.scores else None
    usage = attempt.usage
    stamped = content_stamp(attempt)
    return TaskResult(
        task_id=task.id,
        repeat=attempt.repeat,
        kind=task.kind,
        result=str(result),
        reasons=reasons,
        verified=reading.verified,
        after_answer=reading.after_answer,
        misreported=reading.misreported,
        judge_status=grade.status if grade is not None else "not_asked",
        scores=scores,
        quality=round(statistics.fmean(scores[d] for d in DIMENSIONS), DIGITS) if scores else None,
        steps=len(attempt.calls),
        total_tokens=usage.total_tokens if usage else None,
        cost_usd=usage.cost_usd if usage else None,
        cost_source=usage.cost_source if usage else None,
        cost_provenance=usage.cost_provenance if usage else None,
        wall_seconds=attempt.wall_seconds,
        changed_files=attempt.changed_files,
        commit=attempt.commit,
        ran_at=attempt.started_at,
        code_stamp=stamped[0] if stamped else None,
    )


def content_stamp(attempt: TaskAttempt) -> tuple[str, dict[str, str]] | None:
    """An attempt with no commit is stamped by its harness's code (agenteval.stamps), when
    the harness names it; None: it has a commit, or nothing says where it ran."""
    if attempt.commit is not None:
        return None
    return code_stamp(attempt.harness.details.get("code"))


@dataclass(frozen=True)
class UnitStamps:
    """Where a scorecard's attempts ran: their commits in order, their content stamps with
    the files each covers, and how many carry neither (unknown, never taken to be HEAD)."""

    commits: list[str]
    code_stamps: dict[str, dict[str, str]]
    unstamped: int
    units: dict[str, int]  # commit or content stamp -> its attempts


def unit_stamps(attempts: Sequence[TaskAttempt]) -> UnitStamps:
    code: dict[str, dict[str, str]] = {}
    units: Counter[str] = Counter()
    for attempt in attempts:
        stamped = content_stamp(attempt)
        if stamped is not None:
            code[stamped[0]] = stamped[1]
        key = attempt.commit or (stamped[0] if stamped else None)
        if key:
            units[key] += 1
    return UnitStamps(
        commits=commits_of((a.commit, a.started_at) for a in attempts),
        code_stamps=dict(sorted(code.items())),
        unstamped=len(attempts) - sum(units.values()),
        units=dict(units),
    )


def _sum_or_none(values: Sequence[float | int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def draw(repeat: int, rows: Sequence[TaskResult], conf: float = 0.95) -> Draw:
    passed = sum(r.result == Status.PASS for r in rows)
    failed = sum(r.result == Status.FAIL for r in rows)
    measured = passed + failed
    qualities = [r.quality for r in rows if r.quality is not None]
    tokens = _sum_or_none([r.total_tokens for r in rows])
    costs = [r.cost_usd for r in rows]
    # A partial sum would read as the run's price: n/a unless every task has a known cost.
    cost = None if any(c is None for c in costs) or not costs else sum(c for c in costs if c)
    walls = [r.wall_seconds for r in rows]
    interval = list(wilson_interval(passed, measured, conf)) if measured else None
    return Draw(
        repeat=repeat,
        tasks=len(rows),
        passed=passed,
        failed=failed,
        unmeasured=len(rows) - measured,
        coding=sum(r.kind == "coding" for r in rows),
        verified=sum(bool(r.verified) for r in rows if r.kind == "coding"),
        misreported=sum(bool(r.misreported) for r in rows),
        quality=round(statistics.fmean(qualities), DIGITS) if qualities else None,
        unjudged=sum(r.quality is None for r in rows),
        total_tokens=int(tokens) if tokens is not None else None,
        cost_usd=round(cost, 8) if cost is not None else None,
        cost_sources=sorted({r.cost_source for r in rows if r.cost_source}),
        steps=sum(r.steps for r in rows),
        wall_seconds=None
        if any(w is None for w in walls)
        else round(sum(w or 0 for w in walls), 3),
        pass_rate=round(passed / measured, DIGITS) if measured else None,
        pass_rate_interval=[round(x, DIGITS) for x in interval] if interval else None,
    )


def results(
    tasks: Sequence[Task],
    attempts: Sequence[TaskAttempt],
    grades: Mapping[tuple[str, int], TaskGrade],
) -> list[TaskResult]:
    by_id = {t.id: t for t in tasks}
    ordered = sorted(attempts, key=lambda a: (a.repeat, [t.id for t in tasks].index(a.task_id)))
    return [task_result(by_id[a.task_id], a, grades.get((a.task_id, a.repeat))) for a in ordered]


def draws(rows: Sequence[TaskResult], repeats: int, conf: float = 0.95) -> list[Draw]:
    return [draw(r, [row for row in rows if row.repeat == r], conf) for r in range(repeats)]


def coverage(rows: Sequence[TaskResult]) -> Coverage:
    """Attempts neither PASS nor FAIL (a backend that failed, a task not set up, a question
    not judged) of all, with the first reason, a backend's first: never the agent's failure."""
    unmeasured = [r for r in rows if r.result not in (Status.PASS, Status.FAIL)]
    ordered = sorted(unmeasured, key=lambda r: r.result != Status.INFRA_ERROR)
    reason = first_reason((r.reasons[0] if r.reasons else r.result for r in ordered), "")
    return Coverage(len(unmeasured), len(rows), reason, "task attempts")


def machine() -> str:
    return socket.gethostname()
