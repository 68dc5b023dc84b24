"""What every judge looks like to the judging step (the registry is in `judges.base`)."""

from __future__ import annotations

from typing import Protocol

from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, Transcript
from agenteval.schema.verdict import Verdict


class Judge(Protocol):
    participant: Participant

    async def judge(self, item: SuiteItem, transcript: Transcript, sample: int = 0) -> Verdict:
        """Grade one transcript; `sample` numbers independent re-judgings (judge.repeats)."""
        ...
