"""The model's side of memory: extract memories from a turn, consolidate chat logs, and (in
the `full` suite) answer a probe's request from what memory showed.

`pr` uses `ScriptedModel`: each turn's `extract` and each chat's `consolidate` answer as the
scenario wrote them, plausible mistakes included; it answers nothing. `full` uses
`EndpointModel` on `memory.model` (the local model, `agenteval serve-local`): prompts in
eval/memory/prompts/*.md, replies as JSON under a schema; an unusable reply proposes nothing
and is recorded in the chat's `model_errors`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError

from agenteval.benchmarks.memory.records import Chat, MemoryScenario, Probe, Turn
from agenteval.benchmarks.memory.settings import MemoryModelParams, MemoryParams
from agenteval.fileio import code_of, digest_of
from agenteval.llm import LLMError, QuotaExhausted, UserMessage
from agenteval.llm.config import EndpointConfig
from agenteval.llm.prompts import load_prompt
from agenteval.memory.base import Shown
from agenteval.schema.memory_items import Candidate
from agenteval.schema.transcript import Participant

ROLE = "memory.model"
PROMPTS = {"extract": "extract.md", "consolidate": "consolidate.md", "answer": "answer.md"}
DOCUMENT_CHARS = 600  # of each document shown to the extracting model
MEMORIES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"enum": ["remember", "update", "complete", "cancel"]},
                    "kind": {"enum": ["fact", "preference", "lesson", "reminder"]},
                    "text": {"type": "string"},
                    "key": {"type": "string"},
                    "about": {"type": "string"},
                    "source": {"enum": ["user", "document", "tool"]},
                    "due": {"type": "string"},
                },
                "required": ["op", "kind", "text", "key", "about", "source", "due"],
            },
        }
    },
    "required": ["memories"],
}


class MemoryModel(Protocol):
    participant: Participant
    errors: list[str]
    # Calls the backend failed (unreachable, 5xx after retries): what the memory holds after
    # one is not the memory's doing, so every later probe of the scenario is unmeasured.
    backend_errors: list[str]

    async def extract(
        self, chat: Chat, index: int, shown: Shown, now: datetime
    ) -> list[Candidate]: ...

    async def consolidate(
        self, chat: str, notes: list[str], known: list[str], now: datetime
    ) -> list[Candidate]: ...

    async def answer(self, probe: Probe, shown: Shown) -> str | None: ...


class ScriptedModel:
    """The scenario's own answers: deterministic, offline, seconds for every scenario."""

    def __init__(self, scenario: MemoryScenario) -> None:
        self.participant = Participant(kind="scripted", details={"code": code_of(__name__)})
        self.chats = {c.id: c for c in scenario.chats}
        self.errors: list[str] = []
        self.backend_errors: list[str] = []

    async def extract(self, chat: Chat, index: int, shown: Shown, now: datetime) -> list[Candidate]:
        return list(chat.turns[index].extract)

    async def consolidate(
        self, chat: str, notes: list[str], known: list[str], now: datetime
    ) -> list[Candidate]:
        return list(self.chats[chat].consolidate)

    async def answer(self, probe: Probe, shown: Shown) -> str | None:
        return None


def _turn_text(turn: Turn) -> str:
    parts = [f"User: {turn.user}"]
    for tool in turn.tools:
        state = "ok" if tool.ok else "FAILED"
        parts.append(f"Tool {tool.name}({json.dumps(tool.arguments)}) {state}: {tool.result}")
    for doc in turn.documents:
        parts.append(f"Document {doc.title!r}: {doc.text[:DOCUMENT_CHARS]}")
    return "\n".join([*parts, f"Assistant: {turn.answer}"])


def parse_memories(text: str) -> tuple[list[Candidate], list[str]]:
    """Candidates from a model reply; each unusable part named, never guessed."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        return [], [f"not JSON ({exc})"]
    rows = value.get("memories") if isinstance(value, dict) else None
    if not isinstance(rows, list):
        return [], ["no `memories` list"]
    found, errors = [], []
    for index, row in enumerate(rows):
        if not isinstance(row, dict):
            errors.append(f"memory {index}: not an object")
            continue
        row = {k: v for k, v in row.items() if v not in ("", None)}
        if row.get("source") == "agent":  # a model cannot claim the agent's explicit calls
            row["source"] = "user"
        try:
            found.append(Candidate.model_validate(row))
        except ValidationError as exc:
            errors.append(f"memory {index}: {exc.errors()[0]['msg']}")
    return found, errors


class EndpointModel:
    """A model endpoint (the local model in `full`) answering through eval/prompts."""

    def __init__(self, section: MemoryModelParams, run: Mapping[str, Any], root: Path) -> None:
        endpoint = section.model_dump(mode="json", exclude_none=True)
        sections = {"run": run, ROLE: endpoint}
        self.config = EndpointConfig.from_params(sections, ROLE, root)
        folder = root / section.prompts
        self.prompts = {name: load_prompt(folder / file) for name, file in PROMPTS.items()}
        details = {
            "endpoint": self.config.describe(),
            "prompts": {k: p.sha256 for k, p in self.prompts.items()},
        }
        self.participant = Participant(
            kind="endpoint",
            model=self.config.endpoint.model,
            protocol=self.config.endpoint.protocol,
            config_digest=digest_of({**details, "code": code_of(__name__)}),
            details=details,
        )
        self.errors: list[str] = []
        self.backend_errors: list[str] = []

    async def _ask(
        self, prompt: str, values: dict[str, object], schema: dict[str, Any] | None
    ) -> str | None:
        client = await self.config.client()
        fmt = (
            None
            if schema is None
            else {
                "type": "json_schema",
                "json_schema": {"name": "memories", "strict": True, "schema": schema},
            }
        )
        try:
            completion = await client.complete(
                [UserMessage(content=self.prompts[prompt].render(values))], response_format=fmt
            )
        except QuotaExhausted:
            raise
        except LLMError as exc:
            self.errors.append(f"{prompt}: {type(exc).__name__}: {exc}")
            self.backend_errors.append(self.errors[-1])
            return None
        return completion.text

    async def _memories(self, prompt: str, values: dict[str, object]) -> list[Candidate]:
        reply = await self._ask(prompt, values, MEMORIES_SCHEMA)
        if reply is None:
            return []
        found, errors = parse_memories(reply)
        self.errors += [f"{prompt}: {e}" for e in errors]
        return found

    async def extract(self, chat: Chat, index: int, shown: Shown, now: datetime) -> list[Candidate]:
        turn = chat.turns[index]
        return await self._memories(
            "extract",
            {
                "now": f"{now:%Y-%m-%d %H:%M (%A)}",
                "memory": shown.text() or "(nothing yet)",
                "turn": _turn_text(turn),
            },
        )

    async def consolidate(
        self, chat: str, notes: list[str], known: list[str], now: datetime
    ) -> list[Candidate]:
        return await self._memories(
            "consolidate",
            {
                "now": f"{now:%Y-%m-%d}",
                "notes": "\n".join(notes),
                "known": "\n".join(f"- {k}" for k in known) or "(nothing)",
            },
        )

    async def answer(self, probe: Probe, shown: Shown) -> str | None:
        return await self._ask(
            "answer",
            {
                "now": f"{probe.at:%Y-%m-%d %H:%M (%A)}",
                "memory": shown.text() or "(nothing)",
                "request": probe.request,
            },
            None,
        )


def make_model(
    section: MemoryParams, run: Mapping[str, Any], root: Path, scenario: MemoryScenario
) -> MemoryModel:
    if section.suite == "pr":
        return ScriptedModel(scenario)
    return EndpointModel(section.model, run, root)
