"""What every user simulator looks like to the engine, and the registry keyed by `kind`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from agenteval.registry import build
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.transcript import Participant, TranscriptTurn


@dataclass(frozen=True)
class UserMessage:
    text: str
    fault: str | None = None  # set when the simulator knows it got this message wrong


class Simulator(Protocol):
    participant: Participant
    # False for a simulator that can only replay scripted `user_message`s: a turn without
    # one leaves its scenario unmeasured (NO_USER_MESSAGE) instead of sending the objective.
    writes_messages: bool

    async def message(
        self,
        scenario: Scenario,
        turn: Turn,
        history: list[TranscriptTurn],
        iteration: int,
        seed: int = 0,
    ) -> UserMessage: ...


REGISTRY = {
    "scripted": "agenteval.simulators.scripted:ScriptedSimulator",
    "llm": "agenteval.simulators.llm:LLMSimulator",
}


def make_simulator(params: dict[str, Any], root: Path) -> Simulator:
    simulator: Simulator = build(REGISTRY, "simulator", params, root)
    return simulator
