"""eval/agents/<name>/agent.yaml: what a hillclimb may edit in an agent, and within what range.

Anything not listed is off limits to `agenteval climb`: the guard refuses an edit that
touches another file (the judge, the scenarios, the corpus) or another key of params.yaml.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class KnobRange(_Strict):
    """A numeric knob of `target.params` and the range a search may move it in."""

    type: Literal["int", "float"] = "float"
    low: float
    high: float
    step: float | None = Field(None, gt=0, description="Grid step; null: continuous (float).")
    log: bool = Field(False, description="Search on a log scale (low must be > 0).")

    @model_validator(mode="after")
    def _ordered(self) -> KnobRange:
        if self.low >= self.high:
            raise ValueError(f"low ({self.low}) must be below high ({self.high})")
        if self.log and self.low <= 0:
            raise ValueError("a log-scale knob needs low > 0")
        if self.type == "int" and any(v != int(v) for v in (self.low, self.high)):
            raise ValueError("an int knob needs whole-number low and high")
        return self

    def contains(self, value: float) -> bool:
        if not self.low <= value <= self.high:
            return False
        return self.type != "int" or value == int(value)


class Editable(_Strict):
    files: list[str] = Field(
        default_factory=list,
        description="Files of this agent folder an edit may change (system prompt, tool "
        "descriptions, phrasings).",
    )
    knobs: dict[str, KnobRange] = Field(
        default_factory=dict, description="`target.params` keys an edit may change."
    )


class AgentConfig(_Strict):
    description: str | None = None
    editable: Editable = Field(default_factory=Editable)
