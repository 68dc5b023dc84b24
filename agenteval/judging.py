"""Judging: grade stored transcripts without calling the agent again."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from agenteval.engine import transcript_path
from agenteval.fileio import read_json, write_json
from agenteval.registry import build
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Participant, Transcript
from agenteval.schema.verdict import Verdict


class Judge(Protocol):
    participant: Participant

    async def judge(self, item: SuiteItem, transcript: Transcript) -> Verdict: ...


REGISTRY = {
    "code": "agenteval.judges.code:CodeJudge",
    "llm": "agenteval.judges.llm:LLMJudge",
}


def make_judge(params: dict[str, Any], root: Path) -> Judge:
    judge: Judge = build(REGISTRY, "judge", params, root)
    return judge


def load_transcript(folder: Path, scenario_id: str, iteration: int) -> Transcript | None:
    path = transcript_path(folder, scenario_id, iteration)
    try:
        return Transcript.model_validate(read_json(path))
    except (OSError, ValueError, ValidationError):
        return None


def load_verdict(folder: Path, scenario_id: str, iteration: int) -> Verdict | None:
    path = transcript_path(folder, scenario_id, iteration)
    try:
        return Verdict.model_validate(read_json(path))
    except (OSError, ValueError, ValidationError):
        return None


def _still_valid(verdict: Verdict, transcript: Transcript, judge: Judge) -> bool:
    """A stored verdict counts when it graded this exact transcript with this exact judge."""
    from agenteval.fileio import digest_of

    return (
        verdict.transcript_digest == digest_of(transcript)
        and verdict.judge == judge.participant
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
    """One verdict per stored transcript of the suite; a missing transcript is left unjudged."""
    semaphore = asyncio.Semaphore(max(1, concurrency))
    notify = on_done or (lambda _v: None)

    async def one(item: SuiteItem, iteration: int) -> Verdict | None:
        transcript = load_transcript(transcripts, item.scenario.id, iteration)
        if transcript is None:
            return None
        stored = load_verdict(verdicts, item.scenario.id, iteration)
        if stored is not None and _still_valid(stored, transcript, judge):
            notify(stored)  # a judge call costs money: never pay twice for the same grade
            return stored
        async with semaphore:
            verdict = await judge.judge(item, transcript)
        path = transcript_path(verdicts, item.scenario.id, iteration)
        await asyncio.to_thread(write_json, path, verdict)  # fsync off the event loop
        notify(verdict)
        return verdict

    jobs = [one(item, i) for item in suite.items for i in range(suite.iterations)]
    return [v for v in await asyncio.gather(*jobs) if v is not None]


class JudgingStopped(Exception):
    """The judge's quota or credentials failed: verdicts written so far are kept (resumable)."""
