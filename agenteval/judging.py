"""Judging: grade stored transcripts without calling the agent again."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from agenteval import stamps
from agenteval.fileio import GroupCommitWriter, group_commit, sha256_text
from agenteval.judges.base import Judge
from agenteval.layout import load_transcript, load_verdict_file, transcript_path
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict

T = TypeVar("T")


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
        and verdict.status not in ("ERRORED", "INFRA_ERROR")  # a judge fault is graded again
    )


def _order(case: Case) -> str:
    # A stable order that interleaves mixed-in controls with the real transcripts.
    return sha256_text(f"{case.item.scenario.id}:{case.transcript.iteration}")


async def judge_case(
    case: Case,
    judge: Judge,
    writer: GroupCommitWriter,
    semaphore: asyncio.Semaphore,
    notify: Callable[[Verdict], None],
    fresh: Callable[[Verdict], None] | None = None,
    commit: str | None = None,
) -> Verdict:
    """The case's verdict: the stored one if still valid, else a new one, committed (and
    then also told to `fresh`); `commit` stamps a model judge's new verdicts."""
    stored = load_verdict_file(case.path)
    if stored is not None and _still_valid(stored, case.item, case.transcript, judge):
        notify(stored)  # a judge call costs money: never pay twice for the same grade
        return stored
    async with semaphore:
        verdict = await judge.judge(case.item, case.transcript)
    verdict.ground_truth_digest = case.item.ground_truth_digest
    if commit is not None and judge.participant.protocol is not None:
        # A model judge's grade depends on when it was asked; the code judge's (no protocol)
        # is a function of its code digest, so stamping it would only make outputs differ.
        verdict.commit, verdict.judged_at = commit, stamps.now()
    await writer.write(case.path, verdict)  # scrubbed, journaled and renamed off the loop
    notify(verdict)
    if fresh is not None:
        fresh(verdict)
    return verdict


async def judge_cases(
    cases: Sequence[Case],
    judge: Judge,
    writer: GroupCommitWriter,
    *,
    concurrency: int = 4,
    on_done: Callable[[Verdict], None] | None = None,
    on_fresh: Callable[[Verdict], None] | None = None,
    fresh_cases: int | None = None,
    commit: str | None = None,
) -> list[Verdict]:
    """A verdict per case (in the order given), reusing stored ones that are still valid;
    new verdicts are committed through `writer` (each case's path must lie under its
    journal's folder). `on_fresh` hears of each new verdict of the first `fresh_cases`
    cases (all by default); `commit` stamps a model judge's new verdicts."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    notify = on_done or (lambda _v: None)
    told = len(cases) if fresh_cases is None else fresh_cases
    order = sorted(range(len(cases)), key=lambda i: _order(cases[i]))
    grading = [
        judge_case(
            cases[i], judge, writer, semaphore, notify, on_fresh if i < told else None, commit
        )
        for i in order
    ]
    done = await asyncio.gather(*grading)
    by_index = dict(zip(order, done, strict=True))
    return [by_index[i] for i in range(len(cases))]


def verdicts_journal(verdicts: Path) -> Path:
    return verdicts.parent / f".{verdicts.name}.journal"


async def run_judging(
    suite: Suite,
    transcripts: Path,
    verdicts: Path,
    judge: Judge,
    *,
    concurrency: int = 4,
    on_done: Callable[[Verdict], None] | None = None,
    extra: Sequence[Case] = (),
    on_fresh: Callable[[Verdict], None] | None = None,
    root: Path | None = None,
) -> list[Verdict]:
    """One verdict per stored transcript of the suite; a missing transcript is left unjudged.
    A model judge's new verdicts are stamped with the commit checked out at `root`.

    `extra` cases (labelled controls, judge.controls_per_run) are judged in the same batch,
    by the same judge, interleaved with the real ones; only the suite's verdicts are returned
    (and told to `on_fresh` when new). Verdicts are committed in groups through
    data/.verdicts.journal (see GroupCommitWriter).
    """
    cases = []
    for item in suite.items:
        for iteration in range(suite.iterations):
            transcript = load_transcript(transcripts, item.scenario.id, iteration)
            if transcript is not None:
                path = transcript_path(verdicts, item.scenario.id, iteration)
                cases.append(Case(item, transcript, path))
    async with group_commit(verdicts_journal(verdicts)) as writer:
        judged = await judge_cases(
            [*cases, *extra],
            judge,
            writer,
            concurrency=concurrency,
            on_done=on_done,
            on_fresh=on_fresh,
            fresh_cases=len(cases),
            commit=stamps.head(root) if root and judge.participant.protocol else None,
        )
    return judged[: len(cases)]


class JudgingStopped(Exception):
    """The judge's quota or credentials failed: verdicts written so far are kept (resumable)."""


class StreamJudging:
    """Judging that runs alongside inference, in its event loop: `add` (the engine's
    on_stored) starts grading each transcript as soon as its file is written, and `around`
    wraps the inference, then waits for the last verdict. Meant for a judge that calls no
    endpoint (judges.base.OVERLAPS_INFERENCE): its CPU then runs while the agent's requests
    are in flight. The verdicts are the ones run_judging would write for the same files."""

    def __init__(
        self,
        suite: Suite,
        verdicts: Path,
        judge: Judge,
        *,
        concurrency: int = 4,
        on_done: Callable[[Verdict], None] | None = None,
        extra: Sequence[Case] = (),
        on_fresh: Callable[[Verdict], None] | None = None,
    ) -> None:
        self.items = {item.scenario.id: item for item in suite.items}
        self.on_fresh = on_fresh  # new verdicts of the suite's transcripts (not the controls)
        self.verdicts, self.judge, self.extra = verdicts, judge, extra
        self.semaphore = asyncio.Semaphore(max(1, concurrency))
        self.notify = on_done or (lambda _v: None)
        self.writer: GroupCommitWriter | None = None
        self.pending: list[asyncio.Future[Verdict]] = []

    def add(self, transcript: Transcript) -> None:
        item = self.items[transcript.scenario_id]
        path = transcript_path(self.verdicts, transcript.scenario_id, transcript.iteration)
        self._start(Case(item, transcript, path), self.on_fresh)

    def _start(self, case: Case, fresh: Callable[[Verdict], None] | None = None) -> None:
        assert self.writer is not None, "add() is called from inside around()"
        grading = judge_case(case, self.judge, self.writer, self.semaphore, self.notify, fresh)
        self.pending.append(asyncio.ensure_future(grading))

    async def around(self, inference: Awaitable[T]) -> T:
        async with group_commit(verdicts_journal(self.verdicts)) as writer:
            self.writer = writer
            try:
                for case in self.extra:  # the controls need no inference: graded meanwhile
                    self._start(case)
                result = await inference
                await asyncio.gather(*self.pending)
            finally:
                for task in self.pending:
                    task.cancel()  # no-op for the finished ones
                await asyncio.gather(*self.pending, return_exceptions=True)
            self.writer = None
        return result
