"""The memory protocol every adapter speaks, and the registry keyed by `kind`.

A memory is driven on a simulated clock the benchmark owns: every call carries `now`, so
months pass in seconds while consolidation age, forget order and reminder windows behave as
they would. One store serves one person; each chat is a fresh agent on it (`start_chat`
opens a new connection, `end_chat` closes it). The operations:

- remember / update (and its complete / cancel forms) / forget: the writes;
- record_turn: the turn as it happened (what the user said, the tool record), for memories
  that keep chat logs;
- recall: what the agent is shown for a request (memory's system-prompt section plus the
  per-turn context), as lines;
- dump: everything the store holds;
- upkeep: consolidate and prune, run at the first message of every chat. Consolidation may
  ask the model (`Consolidator`); the benchmark hands it the scripted or the local model.

Writes carry the turn they came from (`TurnContext`) so a memory may check a proposed item
against what was actually said; the memory decides what to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from agenteval.registry import build
from agenteval.schema.memory_items import Candidate, Document, StoredItem, ToolRecord
from agenteval.schema.transcript import Participant

Outcome = Literal["stored", "updated", "refused", "missing", "forgotten"]


class MemoryServerError(RuntimeError):
    """The memory itself failed (a server's transport, protocol, a read tool's error, a reply
    that cannot be read): nothing was measured, so the run stops and says so."""


@dataclass(frozen=True)
class TurnContext:
    """The turn a write came from: what the user said and what was in play."""

    chat: str
    at: datetime
    user: str
    tools: tuple[ToolRecord, ...] = ()
    documents: tuple[Document, ...] = ()
    answer: str = ""


@dataclass(frozen=True)
class Written:
    outcome: Outcome
    reason: str | None = None
    count: int = 1


@dataclass
class Upkeep:
    """What upkeep did: counts by kind of change, and every proposal it wrote or refused."""

    counts: dict[str, int] = field(default_factory=dict)
    writes: list[tuple[Candidate, Written]] = field(default_factory=list)


@dataclass
class Shown:
    """What the agent is shown for one request: named sections of lines."""

    sections: dict[str, list[str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [line for lines in self.sections.values() for line in lines]

    def text(self) -> str:
        blocks = [
            f"## {name}\n" + "\n".join(f"- {line}" for line in lines)
            for name, lines in self.sections.items()
            if lines
        ]
        return "\n\n".join(blocks)


class Consolidator(Protocol):
    """The model's side of consolidation: chat notes in, proposed memories out."""

    async def consolidate(
        self, chat: str, notes: list[str], known: list[str], now: datetime
    ) -> list[Candidate]: ...


class Memory(Protocol):
    participant: Participant

    async def open(self, store: Path) -> None: ...

    async def start_chat(self, chat: str, now: datetime) -> None: ...

    async def end_chat(self) -> None: ...

    async def remember(
        self, candidate: Candidate, now: datetime, context: TurnContext | None
    ) -> Written: ...

    async def update(
        self, candidate: Candidate, now: datetime, context: TurnContext | None
    ) -> Written: ...

    async def forget(self, about: str, now: datetime) -> Written: ...

    async def record_turn(self, context: TurnContext) -> None: ...

    async def recall(self, request: str, now: datetime) -> Shown: ...

    async def dump(self, now: datetime) -> list[StoredItem]: ...

    async def upkeep(self, chat: str, now: datetime, model: Consolidator) -> Upkeep: ...

    async def close(self) -> None: ...


# kind -> "module:factory"; adding a memory is adding a module and a line here.
REGISTRY = {
    "reference": "agenteval.memory.reference:ReferenceMemory",
    "mcp": "agenteval.memory.mcp:MCPMemory",
}


def make_memory(section: Mapping[str, Any], root: Path) -> Memory:
    """The adapter `section` (params memory.adapter) describes; a wrong kind names itself."""
    kind = str(section.get("kind"))
    if kind not in REGISTRY:
        raise ValueError(
            f"memory.adapter.kind: unknown kind {kind!r} (known: {', '.join(REGISTRY)})"
        )
    memory: Memory = build(REGISTRY, "adapter", {"adapter": dict(section)}, root)
    return memory
