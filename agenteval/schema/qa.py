"""Question-answering benchmark files: the task set and one judged attempt.

A task is one question with its ground truth; the shipped set is JSONL
(`eval/qa/tasks.jsonl`), one task per line. A verdict records how one attempt's final
answer was graded: by the code pre-check when code could settle it, else by the A/B/C
judge. `unparsed` is its own class: a judge reply without one clear letter is never
counted as a letter.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agenteval.schema.transcript import Participant, Usage

Letter = Literal["A", "B", "C"]
VerdictClass = Literal["A", "B", "C", "unparsed"]
# evaluated: a letter; error: inference or the judge call failed; unavailable: nothing
# could be measured without an error (missing document, pre-check deferred with no judge,
# a judge reply that never parsed).
AttemptStatus = Literal["evaluated", "error", "unavailable"]


class QATask(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    question: str = Field(min_length=1)
    answer: str = Field(min_length=1, description="The ground truth, as short as possible.")
    level: int = Field(ge=1, le=3, description="1 lookup, 2 inference or discovery, 3 multi-step.")
    files: list[str] = Field(
        default_factory=list,
        description="Repository-relative files indexed before the question; [] lets the "
        "agent discover its documents.",
    )
    aliases: list[str] = Field(
        default_factory=list, description="Other accepted forms of the answer."
    )

    @field_validator("answer", mode="before")
    @classmethod
    def _scalar_to_text(cls, value: object) -> object:
        # GAIA and hand-written JSON give numeric answers as numbers; they are text to match.
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value


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
