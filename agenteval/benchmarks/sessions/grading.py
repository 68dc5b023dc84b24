"""Grading the replayed answers and the planted control answers in one batch.

A case is graded from its stored transcript only (a new judge re-grades without calling the
agent again); a stored grade is reused while the transcript and the judge's configuration
are the same, so a resumed run never pays twice. Controls go through the same judge, shown
exactly like real cases.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from agenteval.benchmarks.sessions.controls import control_cases
from agenteval.benchmarks.sessions.extract import tool_target
from agenteval.benchmarks.sessions.judge import Case, Graded, SessionJudge, case_text
from agenteval.fileio import digest_of
from agenteval.layout import load_transcript
from agenteval.schema.sessions import (
    CaseResult,
    SessionCase,
    SessionControl,
    SessionResults,
    ToolUse,
)
from agenteval.schema.status import COMPLETED
from agenteval.schema.transcript import Participant, Transcript

MISSING_PREFIX = "missing on disk: "
NOT_REPLAYED = "no transcript: the replay did not reach this case (stopped early?)"


def tools_of(transcript: Transcript) -> list[ToolUse]:
    last = transcript.turns[-1]
    return [ToolUse(name=c.name, target=tool_target(c.arguments)) for c in last.tool_calls]


def blank(case: SessionCase, transcript: Transcript | None) -> CaseResult:
    """The case's result before judging: not run, or replayed and waiting for a grade."""
    if transcript is None:
        return CaseResult(case_id=case.id, outcome="not_run", status="NOT_RUN", reason=NOT_REPLAYED)
    result = CaseResult(
        case_id=case.id,
        outcome="not_run",
        status=transcript.status,
        transcript_digest=digest_of(transcript),
    )
    if transcript.status != COMPLETED or not transcript.turns:
        # The engine names a missing repository as a missing document; say it plainly.
        error = (transcript.error or "").removeprefix(MISSING_PREFIX)
        result.reason = error or f"{transcript.status}: no reply"
        return result
    last = transcript.turns[-1]
    result.outcome, result.answer = "unjudged", last.response
    result.tools, result.usage = tools_of(transcript), last.usage
    return result


def apply(result: CaseResult, graded: Graded) -> CaseResult:
    result.judge_usage = graded.usage
    if graded.judgment is None:
        result.outcome, result.reason = "unjudged", graded.error
        result.judge_replies = graded.replies
        return result
    j = graded.judgment
    result.outcome, result.grade, result.rationale = "judged", j.grade, j.rationale
    result.claimed_unmade_work, result.refused = j.claimed_unmade_work, j.refused
    result.reason = None
    return result


def _stored(path: Path, judge: Participant) -> dict[str, CaseResult]:
    """Grades of an earlier run by the same judge configuration, by case id."""
    try:
        earlier = SessionResults.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not earlier.judge.same_as(judge):
        return {}
    return {r.case_id: r for r in [*earlier.results, *earlier.controls] if r.outcome == "judged"}


async def _grade_all(
    judge: SessionJudge,
    pending: list[tuple[CaseResult, Case]],
    concurrency: int,
) -> None:
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(result: CaseResult, case: Case) -> None:
        async with semaphore:
            apply(result, await judge.grade(case))

    await asyncio.gather(*(one(r, c) for r, c in pending))


def grade(
    judge: SessionJudge,
    cases: Sequence[SessionCase],
    controls: Sequence[SessionControl],
    transcripts: Path,
    earlier: Path,
    concurrency: int,
) -> tuple[list[CaseResult], list[CaseResult]]:
    """(case results, control results): every replayed answer and planted answer graded."""
    stored = _stored(earlier, judge.participant)
    results: list[CaseResult] = []
    control_results: list[CaseResult] = []
    pending: list[tuple[CaseResult, Case]] = []
    for case in cases:
        result = blank(case, load_transcript(transcripts, case.id, 0))
        results.append(result)
        if result.outcome == "not_run":
            continue
        assert result.answer is not None
        seen = stored.get(case.id)
        if seen is not None and seen.transcript_digest == result.transcript_digest:
            results[-1] = seen
            continue
        shown = Case(case.request, list(case.context), case.reference.answer,
                     list(case.reference.tools), result.answer, result.tools)  # fmt: skip
        pending.append((result, shown))
    for result_id, kind, shown in control_cases(controls):
        result = CaseResult(case_id=result_id, outcome="unjudged", status=COMPLETED,
                            answer=shown.answer, tools=shown.tools, control=kind,
                            transcript_digest=digest_of(case_text(shown)))  # fmt: skip
        control_results.append(result)
        seen = stored.get(result_id)
        if seen is not None and seen.transcript_digest == result.transcript_digest:
            control_results[-1] = seen
        else:
            pending.append((result, shown))
    asyncio.run(_grade_all(judge, pending, concurrency))
    return results, control_results
