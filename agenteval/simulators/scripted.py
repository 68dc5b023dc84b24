"""Simulator `scripted`: replays the scenario's own text, no model involved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.transcript import Participant, TranscriptTurn
from agenteval.simulators.base import UserMessage


class ScriptedSimulator:
    """Sends each turn's scripted `user_message` verbatim, no model involved.

    It never sends an objective ("Ask about Q3 revenue") as if a user had said it: a scenario
    with a turn lacking `user_message` is left unmeasured (NO_USER_MESSAGE) by the engine;
    `simulator.kind: llm` (the local model of `agenteval serve-local` will do) writes them.
    """

    writes_messages = False

    def __init__(self, params: dict[str, Any] | None = None, root: Path | None = None) -> None:
        code = code_of(__name__)
        self.participant = Participant(
            kind="scripted", config_digest=digest_of({"code": code}), details={"code": code}
        )

    async def message(
        self,
        scenario: Scenario,
        turn: Turn,
        history: list[TranscriptTurn],
        iteration: int,
        seed: int = 0,
    ) -> UserMessage:
        if not turn.user_message:
            raise ValueError(f"turn {turn.turn} has no user_message to replay")
        return UserMessage(turn.user_message)
