"""Judging: grade stored transcripts without calling the agent again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agenteval.fileio import GroupCommitWriter, group_commit, sha256_text
from agenteval.judges.base import Judge
from agenteval.layout import load_transcript, load_verdict_file, transcript_path
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict


@dataclass(frozen=True)
class Case:
    """One transcript to grade and the file its verdict goes to."""

    item: SuiteItem
    transcript: Transcript
    path: Path


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


def _order(case: Case) -> str:
    # A stable order that interleaves mixed-in controls with the real transcripts.
    return sha256_text(f"{case.item.scenario.id}:{case.transcript.iteration}")


async def judge_cases(
    cases: Sequence[Case],
    judge: Judge,
    writer: GroupCommitWriter,
    *,
    concurrency: int = 4,
    on_done: Callable[[Verdict], None] | None = None,
) -> list[Verdict]:
    """A verdict per case (in the order given), reusing stored ones that are still valid;
    new verdicts are committed through `writer` (each case's path must lie under its
    journal's folder)."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    notify = on_done or (lambda _v: None)

    async def one(case: Case) -> Verdict:
        stored = load_verdict_file(case.path)
        if stored is not None and _still_valid(stored, case.item, case.transcript, judge):
            notify(stored)  # a judge call costs money: never pay twice for the same grade
            return stored
        async with semaphore:
            verdict = await judge.judge(case.item, case.transcript)
        verdict.ground_truth_digest = case.item.ground_truth_digest
        await writer.write(case.path, verdict)  # scrubbed, journaled and renamed off the loop
        notify(verdict)
        return verdict

    order = sorted(range(len(cases)), key=lambda i: _order(cases[i]))
    done = await asyncio.gather(*(one(cases[i]) for i in order))
    by_index = dict(zip(order, done, strict=True))
    return [by_index[i] for i in range(len(cases))]


async def run_judging(
    suite: Suite,
    transcripts: Path,
    verdicts: Path,
    judge: Judge,
    *,
    concurrency: int = 4,
    on_done: Callable[[Verdict], None] | None = None,
    extra: Sequence[Case] = (),
) -> list[Verdict]:
    """One verdict per stored transcript of the suite; a missing transcript is left unjudged.

    `extra` cases (labelled controls, judge.controls_per_run) are judged in the same batch,
    by the same judge, interleaved with the real ones; only the suite's verdicts are returned.
    Verdicts are committed in groups through data/.verdicts.journal (see GroupCommitWriter).
    """
    cases = []
    for item in suite.items:
        for iteration in range(suite.iterations):
            transcript = load_transcript(transcripts, item.scenario.id, iteration)
            if transcript is not None:
                path = transcript_path(verdicts, item.scenario.id, iteration)
                cases.append(Case(item, transcript, path))
    async with group_commit(verdicts.parent / f".{verdicts.name}.journal") as writer:
        judged = await judge_cases(
            [*cases, *extra], judge, writer, concurrency=concurrency, on_done=on_done
        )
    return judged[: len(cases)]


class JudgingStopped(Exception):
    """The judge's quota or credentials failed: verdicts written so far are kept (resumable)."""
