"""User simulators: who writes each user message. `scripted` replays the scenario's text."""

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

    async def message(
        self, scenario: Scenario, turn: Turn, history: list[TranscriptTurn], iteration: int
    ) -> UserMessage: ...


class ScriptedSimulator:
    """Sends `user_message` when the scenario has one, else the turn's objective verbatim."""

    def __init__(self, params: dict[str, Any] | None = None, root: Path | None = None) -> None:
        self.participant = Participant(kind="scripted")

    async def message(
        self, scenario: Scenario, turn: Turn, history: list[TranscriptTurn], iteration: int
    ) -> UserMessage:
        text = turn.user_message if turn.user_message else turn.objective
        return UserMessage(text)


REGISTRY = {
    "scripted": "agenteval.simulate:ScriptedSimulator",
    "llm": "agenteval.simulate_llm:LLMSimulator",
}


def make_simulator(params: dict[str, Any], root: Path) -> Simulator:
    simulator: Simulator = build(REGISTRY, "simulator", params, root)
    return simulator
