"""The QA benchmark's judged attempt: how one attempt's final answer was graded, by the
code pre-check when code could settle it, else by the A/B/C judge. `unparsed` is its own
class: a judge reply without one clear letter is never counted as a letter. The task record
is shared with the retrieval benchmark (agenteval.benchmarks.questions)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from agenteval.schema.transcript import Participant, Usage

Letter = Literal["A", "B", "C"]
VerdictClass = Literal["A", "B", "C", "unparsed"]
# evaluated: a letter; error: inference or the judge call failed; unavailable: nothing
# could be measured without an error (missing document, pre-check deferred with no judge,
# a judge reply that never parsed).
AttemptStatus = Literal["evaluated", "error", "unavailable"]


class QAVerdict(BaseModel):
    task_id: str
    attempt: int
    task_digest: str
    transcript_digest: str | None = None
    judge: Participant
    status: AttemptStatus
    verdict: VerdictClass | None = Field(None, description="null when nothing was graded.")
    source: Literal["precheck", "judge"] | None = None
    rule: str | None = Field(None, description="Which pre-check rule, or why it deferred.")
    answer: str | None = Field(None, description="The final answer under test.")
    reason: str | None = None
    judge_replies: list[str] = Field(default_factory=list)
    usage: Usage | None = None

    @property
    def correct(self) -> int | None:
        """The binary observation: 1 only for A; None when the attempt was not evaluated."""
        if self.status != "evaluated":
            return None
        return 1 if self.verdict == "A" else 0
