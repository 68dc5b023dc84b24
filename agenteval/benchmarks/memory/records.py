"""Memory benchmark files: scenarios (one person's chats over weeks or months, probes at
points in time) and the results of a run (`agenteval memory`).

A scenario is a timeline on a simulated clock. Each chat is a fresh agent on the one shared
store: its turns say what the user wrote, what the agent looked up (the tool record), the
documents in play, the reply, the model's extraction answer (scripted for the `pr` suite,
plausible mistakes included) and the explicit memory calls the agent made. Probes ask, at a
moment, what the agent is shown for a request and what the store holds.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agenteval.schema.memory_items import (
    Candidate,
    Document,
    ItemKind,
    StoredItem,
    ToolRecord,
)
from agenteval.schema.transcript import Participant

Metric = Literal["shown_recall", "shown_clean", "store_accuracy", "answer_accuracy"]
METRICS: tuple[Metric, ...] = ("shown_recall", "shown_clean", "store_accuracy", "answer_accuracy")
ID = r"^[a-z0-9][a-z0-9_-]*$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MemoryCall(_Strict):
    """An explicit memory call the agent made in the turn (remember / update / forget...)."""

    op: Literal["remember", "update", "complete", "cancel", "forget"]
    text: str | None = None
    key: str | None = None
    kind: ItemKind = "fact"
    due: datetime | None = None
    about: str | None = Field(None, description="forget: the topic to forget.")

    @model_validator(mode="after")
    def _complete(self) -> MemoryCall:
        if self.op == "forget" and not self.about:
            raise ValueError("forget needs `about`, the topic to forget")
        if self.op == "remember" and not self.text:
            raise ValueError("remember needs text")
        if self.op in ("update", "complete", "cancel") and not (self.key or self.text):
            raise ValueError(f"{self.op} needs a key or a text naming the item")
        return self

    def candidate(self) -> Candidate:
        assert self.op != "forget"
        return Candidate(
            op=self.op, kind=self.kind, text=self.text, key=self.key, source="agent", due=self.due
        )


class Turn(_Strict):
    user: str = Field(min_length=1, description="What the user wrote.")
    minutes: int = Field(0, ge=0, description="Minutes after the chat started.")
    tools: list[ToolRecord] = Field(default_factory=list)
    documents: list[Document] = Field(default_factory=list)
    answer: str = Field(min_length=1, description="The agent's reply (scripted).")
    extract: list[Candidate] = Field(
        default_factory=list, description="pr: the model's extraction answer for this turn."
    )
    calls: list[MemoryCall] = Field(default_factory=list)


class Chat(_Strict):
    id: str = Field(pattern=ID)
    at: datetime
    turns: list[Turn] = Field(min_length=1)
    consolidate: list[Candidate] = Field(
        default_factory=list,
        description="pr: the model's answer if this chat's upkeep asks it to consolidate.",
    )


class Match(_Strict):
    """Words that must appear together in one line shown, or in one stored item."""

    all: list[str] = Field(default_factory=list, description="Every phrase appears.")
    any: list[str] = Field(default_factory=list, description="At least one phrase appears.")
    none: list[str] = Field(default_factory=list, description="No phrase appears (context).")
    scope: Literal["beliefs", "all"] = Field(
        "beliefs", description="store: beliefs (facts, lessons, reminders) or all (chat logs too)."
    )

    @model_validator(mode="after")
    def _something(self) -> Match:
        if not (self.all or self.any):
            raise ValueError("a match needs `all` or `any` phrases")
        return self

    def label(self) -> str:
        words = " + ".join(self.all) + (" + one of " + "/".join(self.any) if self.any else "")
        return words.lstrip(" +") + (f" (not with {'/'.join(self.none)})" if self.none else "")


def as_match(value: str | Match) -> Match:
    return Match(all=[value]) if isinstance(value, str) else value


class Expect(_Strict):
    must: list[str | Match] = Field(default_factory=list)
    must_not: list[str | Match] = Field(default_factory=list)


class AnswerExpect(_Strict):
    truth: str = Field(min_length=1, description="The short answer a good reply gives.")
    aliases: list[str] = Field(default_factory=list)
    wrong: list[str] = Field(
        default_factory=list, description="Stale or foreign values a reply must not assert."
    )


class Probe(_Strict):
    id: str = Field(pattern=ID)
    at: datetime
    request: str = Field(min_length=1)
    why: str = Field(min_length=1, description="What the probe checks, in words.")
    shown: Expect | None = None
    store: Expect | None = None
    answer: AnswerExpect | None = None

    @model_validator(mode="after")
    def _checks_something(self) -> Probe:
        if self.shown is None and self.store is None and self.answer is None:
            raise ValueError("a probe needs shown, store or answer")
        return self


class MemoryScenario(_Strict):
    id: str = Field(pattern=ID)
    title: str = Field(min_length=1)
    person: str = Field(min_length=1)
    stresses: list[str] = Field(
        min_length=1, description="What the scenario stresses, a line each."
    )
    chats: list[Chat] = Field(min_length=1)
    probes: list[Probe] = Field(min_length=1)

    @model_validator(mode="after")
    def _timeline(self) -> MemoryScenario:
        for earlier, later in zip(self.chats, self.chats[1:], strict=False):
            if later.at <= earlier.at:
                raise ValueError(f"chat {later.id} starts at or before chat {earlier.id}")
        for name, ids in (
            ("chat", [c.id for c in self.chats]),
            ("probe", [p.id for p in self.probes]),
        ):
            repeated = sorted({i for i in ids if ids.count(i) > 1})
            if repeated:
                raise ValueError(f"{name} ids repeated: {repeated}")
        first = self.chats[0].at
        early = [p.id for p in self.probes if p.at < first]
        if early:
            raise ValueError(f"probes before the first chat: {early}")
        return self


# -- results ---------------------------------------------------------------------------------
class CheckResult(BaseModel):
    id: str = Field(description="<scenario>/<probe>/<metric>/<n>: stable for the gate.")
    metric: Metric
    expect: str = Field(description="The check in words.")
    ok: bool | None = Field(description="None: not measured (a judge could not settle it).")
    why: str = Field(description="The evidence: what matched, or what was missing.")


class ProbeResult(BaseModel):
    id: str
    at: datetime
    request: str
    why: str
    metrics: dict[str, float | None]
    checks: list[CheckResult]
    shown: str = Field(description="Everything the agent was shown for the request.")
    answer: str | None = Field(None, description="full: the model's answer.")


class WriteRecord(BaseModel):
    turn: int | None = Field(description="Turn index; None for the chat's upkeep.")
    via: Literal["extract", "call", "consolidate"]
    op: str
    kind: str | None = None
    key: str | None = None
    text: str | None = None
    outcome: Literal["stored", "updated", "refused", "missing", "forgotten"]
    reason: str | None = None


class ChatLog(BaseModel):
    id: str
    at: datetime
    turns: int
    upkeep: dict[str, int] = Field(default_factory=dict, description="What upkeep changed.")
    writes: list[WriteRecord] = Field(default_factory=list)
    model_errors: list[str] = Field(default_factory=list, description="full: unusable replies.")


class ScenarioResult(BaseModel):
    id: str
    title: str
    digest: str = Field(description="sha256 of the scenario file.")
    stresses: list[str]
    metrics: dict[str, float | None] = Field(description="Share of each metric's checks passed.")
    passed: int
    failed: int
    unmeasured: int
    probes: list[ProbeResult] = Field(description="Worst first.")
    chats: list[ChatLog]
    store: list[StoredItem] = Field(description="The store after the last event.")


class MemoryResults(BaseModel):
    format: Literal["agenteval.memory.results/1"] = "agenteval.memory.results/1"
    kind: Literal["memory"] = "memory"
    suite: Literal["pr", "full"]
    memory: Participant
    model: Participant
    scenarios_digest: dict[str, str] = Field(description="Scenario id -> sha256 of its file.")
    metrics: dict[str, float | None]
    counts: dict[str, int]
    checks: dict[str, bool | None] = Field(
        description="Every check id -> passed (None: unmeasured)."
    )
    scenarios: list[ScenarioResult] = Field(description="Worst first.")
