"""Judge controls: labelled agent turns that measure a judge (eval/judge_controls/*.yaml).

A control is one scenario turn frozen with the agent's reply and tool calls, and a careful
grader's label by the rubric: pass or fail for the turn, the dimension that fails it, and
the score ranges the rubric allows. The controls runner turns each control into the same
(SuiteItem, Transcript) pair a real run produces and asks a judge to grade it.

Tool calls may be written short: a bare tool name (`query_documents`) is a successful call
whose arguments and result the runner fills in by really running the tool over the
control's documents; a mapping gives every field of a recorded call.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agenteval.schema.params_base import DIMENSION_NAMES
from agenteval.schema.scenario import GroundTruth

Verdict = Literal["pass", "fail"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ControlCall(_Closed):
    """A recorded tool call. `result: null` on a successful call: the runner runs the tool."""

    name: str
    arguments: dict[str, Any] | None = Field(
        None, description="null: the runner fills them (the question for query_documents)."
    )
    ok: bool = True
    result: Any = None
    error: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data


class EarlierTurn(_Closed):
    """A turn before the judged one: what the user said and what the agent answered."""

    user: str
    reply: str
    tool_calls: list[ControlCall] = Field(default_factory=list)
    ground_truth: GroundTruth | None = None


class Label(_Closed):
    verdict: Verdict = Field(description="The turn's verdict by the rubric: pass or fail.")
    failing: list[DIMENSION_NAMES] = Field(
        default_factory=list, description="The dimension(s) that fail the turn, if any."
    )
    scores: dict[DIMENSION_NAMES, tuple[float, float]] = Field(
        default_factory=dict,
        description="Allowed [low, high] score per dimension, by the rubric.",
    )
    note: str | None = Field(None, description="Why the grader labelled it so.")

    @field_validator("scores")
    @classmethod
    def _ranges(cls, value: dict[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        for dim, (low, high) in value.items():
            if not 0 <= low <= high <= 10:
                raise ValueError(
                    f"{dim}: range [{low}, {high}] must satisfy 0 <= low <= high <= 10"
                )
        return value

    @model_validator(mode="after")
    def _failing_named(self) -> Label:
        if self.verdict == "fail" and not self.failing:
            raise ValueError("a failing label names the failing dimension(s) in `failing`")
        return self


class Control(_Closed):
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    klass: str = Field(alias="class", description="The class of judge error it exercises.")
    fact: str | None = Field(
        None, description="Manifest fact id: gives the document, question and expected answer."
    )
    documents: list[str] = Field(
        default_factory=list, description="Manifest document ids (default: the fact's document)."
    )
    indexed: bool = Field(True, description="Documents are indexed before the conversation.")
    question: str | None = Field(None, description="The user's message (default: the fact's).")
    ground_truth: GroundTruth | None = Field(
        None, description="Overrides of the fact's ground truth (expected_answer, phrases...)."
    )
    success_criteria: str | None = None
    expected_tools: list[str] | None = None
    forbidden_tools: list[str] | None = None
    history: list[EarlierTurn] = Field(default_factory=list)
    reply: str
    tool_calls: list[ControlCall] = Field(
        default_factory=lambda: [ControlCall(name="query_documents")]
    )
    label: Label

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ControlFile(_Closed):
    """One YAML file of controls."""

    controls: list[Control] = Field(min_length=1)
