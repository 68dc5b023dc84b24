"""User simulators: who writes each user message. `scripted` replays the scenario's text."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

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

    def __init__(self, section: dict[str, Any] | None = None, root: Path | None = None) -> None:
        self.participant = Participant(kind="scripted")

    async def message(
        self, scenario: Scenario, turn: Turn, history: list[TranscriptTurn], iteration: int
    ) -> UserMessage:
        text = turn.user_message if turn.user_message else turn.objective
        return UserMessage(text)


REGISTRY = {"scripted": "agenteval.simulate:ScriptedSimulator"}


def make_simulator(section: dict[str, Any], root: Path) -> Simulator:
    kind = section.get("kind", "scripted")
    if kind not in REGISTRY:
        raise ValueError(f"unknown simulator kind {kind!r} (known: {', '.join(sorted(REGISTRY))})")
    module, _, name = REGISTRY[kind].partition(":")
    simulator: Simulator = getattr(importlib.import_module(module), name)(section, root)
    return simulator
