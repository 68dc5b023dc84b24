"""Simulator `scripted`: replays the scenario's own text, no model involved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.transcript import Participant, TranscriptTurn
from agenteval.simulators.base import UserMessage


class ScriptedSimulator:
    """Sends `user_message` when the scenario has one, else the turn's objective verbatim."""

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
        text = turn.user_message if turn.user_message else turn.objective
        return UserMessage(text)
