"""Simulator controls (eval/simulator_controls/*.yaml): simulated-user messages labelled by
whether the simulator did its job for the scenario turn they were written for."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SimulatorCheck = Literal["asks_needed", "no_answer_leak", "no_early_stop", "in_persona"]


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SimulatorLabel(_Closed):
    ok: bool = Field(description="true: a good simulated message for this turn.")
    failing: list[SimulatorCheck] = Field(
        default_factory=list, description="The check(s) a bad message fails."
    )
    note: str | None = None

    @model_validator(mode="after")
    def _named(self) -> SimulatorLabel:
        if self.ok == bool(self.failing):
            raise ValueError("a bad message names its failing check(s); a good one names none")
        return self


class SimulatorControl(_Closed):
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    objective: str = Field(description="The scenario turn's objective, as the simulator got it.")
    persona: str = "power_user"
    expected_answer: list[str] = Field(
        default_factory=list, description="The turn's expected answer(s): never to be said."
    )
    last: bool = Field(True, description="The scenario's last turn (a goodbye is fine there).")
    message: str = Field(description="What the simulated user said.")
    label: SimulatorLabel


class SimulatorControlFile(_Closed):
    controls: list[SimulatorControl] = Field(min_length=1)
