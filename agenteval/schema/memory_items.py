"""What a memory keeps and is offered, shared by the memory adapters (agenteval.memory) and
the memory benchmark's scenarios and results (agenteval.benchmarks.memory.records): a tool
call and a document in play, a candidate memory the model proposes, an item in the store."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ITEM_KINDS = ("fact", "preference", "lesson", "reminder")
ItemKind = Literal["fact", "preference", "lesson", "reminder"]
Source = Literal["user", "document", "tool", "agent"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolRecord(_Strict):
    """A call the agent made during the turn, with what it returned."""

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    result: str = Field("", description="What the tool returned (or its error text).")


class Document(_Strict):
    """A document in play during the turn: pasted by the user or read by the agent."""

    title: str = Field(min_length=1)
    text: str = Field(min_length=1)


class Candidate(_Strict):
    """One memory the model proposes: what extraction or consolidation answered."""

    op: Literal["remember", "update", "complete", "cancel"] = Field(
        "remember", description="remember a new item; update, complete or cancel a known one."
    )
    kind: ItemKind = "fact"
    text: str | None = Field(None, description="The memory in words (required to remember).")
    key: str | None = Field(
        None, description="The slot it fills (home_city, employer, dentist): one value per key."
    )
    about: str = Field("user", description="Whose fact it is, as the model attributed it.")
    source: Source = Field("user", description="Where the model says it found it.")
    due: datetime | None = Field(None, description="reminder: when it is due.")

    @model_validator(mode="after")
    def _complete(self) -> Candidate:
        if self.op == "remember" and not self.text:
            raise ValueError("remember needs text")
        if self.op != "remember" and not (self.key or self.text):
            raise ValueError(f"{self.op} needs a key or a text naming the item")
        return self


class StoredItem(BaseModel):
    id: str
    kind: str
    text: str
    key: str | None = None
    about: str | None = None
    status: str | None = None
    due: datetime | None = None
    updated: datetime | None = None
