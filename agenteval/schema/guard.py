"""eval/climb/guard_controls.yaml: labelled edits that measure the hillclimb guard.

Each control is a line a proposer might add to an agent's prompt, labelled `encodes` (it
restates a scenario's answer, asks its question again, or sends the agent to the answer
files) or `honest` (a generic instruction that must pass). `agenteval climb guard-check`
tunes the guard's question similarity on the dev half and reports detection and false
refusals on the held half.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class GuardControl(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="Stable: it deals the split.")
    label: Literal["encodes", "honest"]
    form: Literal["value", "question", "path", "generic"] = Field(
        description="value: an answer reworded; question: a question reworded (with or "
        "without its answer); path: the answer files; generic: an honest instruction."
    )
    scenario: str | None = Field(
        None, description="The scenario a value or question control encodes."
    )
    text: str = Field(min_length=1, description="The line added to the prompt.")

    @model_validator(mode="after")
    def _consistent(self) -> GuardControl:
        if (self.label == "honest") != (self.form == "generic"):
            raise ValueError("an honest control has form generic, and only an honest one")
        if (self.form in ("value", "question")) != (self.scenario is not None):
            raise ValueError("value and question controls name their scenario, others do not")
        return self


class GuardControlFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    controls: list[GuardControl] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> GuardControlFile:
        ids = [c.id for c in self.controls]
        duplicated = sorted({i for i in ids if ids.count(i) > 1})
        if duplicated:
            raise ValueError(f"duplicate control ids: {', '.join(duplicated)}")
        return self
