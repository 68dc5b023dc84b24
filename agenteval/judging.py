"""Judging: grade stored transcripts without calling the agent again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from agenteval.fileio import GroupCommitWriter, group_commit
from agenteval.judges.base import Judge
from agenteval.layout import load_transcript, load_verdict, transcript_path
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict


def _still_valid(verdict: Verdict, item: SuiteItem, transcript: Transcript, judge: Judge) -> bool:
    """A stored verdict counts when it graded this exact transcript against the same ground
    truth (manifest facts, document bytes) with this exact judge."""
    from agenteval.fileio import digest_of

    return (
        verdict.transcript_digest == digest_of(transcript)
        and verdict.ground_truth_digest == item.ground_truth_digest
        and verdict.judge.same_as(judge.participant)
        and verdict.status != "ERRORED"
    )


async def run_judging(
    suite: Suite,
    transcripts: Path,
    verdicts: Path,
    judge: Judge,
    *,
    concurrency: int = 4,
    on_done: Callable[[Verdict], None] | None = None,
) -> list[Verdict]:
    """One verdict per stored transcript of the suite; a missing transcript is left unjudged.

    Verdicts are committed in groups through data/.verdicts.journal (see GroupCommitWriter).
    """
    async with group_commit(verdicts.parent / f".{verdicts.name}.journal") as writer:
        return await _judge_all(suite, transcripts, verdicts, judge, writer, concurrency, on_done)


async def _judge_all(
    suite: Suite,
    transcripts: Path,
    verdicts: Path,
    judge: Judge,
    writer: GroupCommitWriter,
    concurrency: int,
    on_done: Callable[[Verdict], None] | None,
) -> list[Verdict]:
    semaphore = asyncio.Semaphore(max(1, concurrency))
    notify = on_done or (lambda _v: None)

    async def one(item: SuiteItem, iteration: int) -> Verdict | None:
        transcript = load_transcript(transcripts, item.scenario.id, iteration)
        if transcript is None:
            return None
        stored = load_verdict(verdicts, item.scenario.id, iteration)
        if stored is not None and _still_valid(stored, item, transcript, judge):
            notify(stored)  # a judge call costs money: never pay twice for the same grade
            return stored
        async with semaphore:
            verdict = await judge.judge(item, transcript)
        verdict.ground_truth_digest = item.ground_truth_digest
        path = transcript_path(verdicts, item.scenario.id, iteration)
        await writer.write(path, verdict)  # scrubbed, journaled and renamed off the loop
        notify(verdict)
        return verdict

    jobs = [one(item, i) for item in suite.items for i in range(suite.iterations)]
    return [v for v in await asyncio.gather(*jobs) if v is not None]


class JudgingStopped(Exception):
    """The judge's quota or credentials failed: verdicts written so far are kept (resumable)."""
