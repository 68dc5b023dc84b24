"""What every judge looks like to the judging step, and the registry keyed by `kind`."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from agenteval.registry import build
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, Transcript
from agenteval.schema.verdict import Verdict


class Judge(Protocol):
    participant: Participant

    async def judge(self, item: SuiteItem, transcript: Transcript) -> Verdict: ...


# kind -> "module:factory"; adding a judge is adding a module and a line here.
REGISTRY = {
    "code": "agenteval.judges.code:CodeJudge",
    "llm": "agenteval.judges.llm:LLMJudge",
}


def make_judge(params: dict[str, Any], root: Path) -> Judge:
    judge: Judge = build(REGISTRY, "judge", params, root)
    return judge
