"""Scenario files: a persona, documents to index, and turns with objectives and ground truth.

Files written for the reference system load unmodified: every field they use is modelled, and
keys we do not know are kept (``extra="allow"``) so the validator can warn about them instead
of failing.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SEVERITIES = ("critical", "high", "medium", "low", "standard")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class IndexDocument(_Open):
    corpus_doc: str | None = Field(None, description="Manifest document id this path belongs to.")
    path: str = Field(description="File to index, relative to the repository root.")


class Setup(_Open):
    index_documents: list[IndexDocument] = Field(
        description="Documents indexed before the first turn; [] makes the agent discover them."
    )
    memory_clear: bool | None = Field(None, description="Clear agent memory before the run.")


class GroundTruth(_Open):
    doc_id: str | None = None
    fact_id: str | None = None
    fact_ids: list[str] | None = None
    expected_answer: str | None = Field(
        None, description="Canonical answer; explicit null means the answer is NOT in the corpus."
    )
    answer_unknown: bool = Field(
        False,
        description="Derived: true when expected_answer was written as null (the agent must "
        "say it does not know).",
    )
    expected_phrases: list[str] | None = None
    expected_behavior: str | None = None
    note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _mark_explicit_null(cls, data: Any) -> Any:
        # "expected_answer: null" and "no expected_answer" mean different things; keep the
        # difference once the YAML mapping is gone.
        if isinstance(data, dict) and "answer_unknown" not in data:
            data = dict(data)
            data["answer_unknown"] = "expected_answer" in data and data["expected_answer"] is None
        return data

    @field_validator("expected_answer", mode="before")
    @classmethod
    def _scalar_to_text(cls, value: Any) -> Any:
        # YAML turns `expected_answer: 15` into an int; the answer is still text to match.
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        return value

    @property
    def all_fact_ids(self) -> list[str]:
        ids = list(self.fact_ids or [])
        if self.fact_id and self.fact_id not in ids:
            ids.insert(0, self.fact_id)
        return ids


class Turn(_Open):
    turn: int = Field(description="1-based position; turns are numbered 1..N.")
    objective: str
    user_message: str | None = None
    persona: str | None = Field(
        None, description="This turn's persona, when it differs from the scenario's."
    )
    ground_truth: GroundTruth | None = None
    success_criteria: str | None = None
    expected_tools: list[str] | None = None
    forbidden_tools: list[str] | None = None


class CapturedFrom(_Open):
    """The real session a scenario was drafted from (the reference system writes this form)."""

    session_id: str | None = Field(None, description="The session, trace or log it came from.")
    title: str | None = None
    captured_at: str | None = Field(None, description="When it was captured (ISO 8601, UTC).")

    @field_validator("captured_at", mode="before")
    @classmethod
    def _timestamp_to_text(cls, value: Any) -> Any:
        # YAML reads an unquoted ISO timestamp as a datetime; the file meant the text.
        if isinstance(value, dt.datetime | dt.date):
            return value.isoformat()
        return value


class Scenario(_Open):
    id: str
    name: str | None = None
    category: str
    severity: str | None = None
    description: str | None = None
    persona: str
    agent_type: str | None = None
    setup: Setup
    turns: list[Turn] = Field(min_length=1)
    expected_outcome: str | None = None
    captured_from: str | CapturedFrom | None = Field(
        None, description="A session id, or {session_id, title, captured_at} (captured files)."
    )
    note: str | None = None
    # Our own optional fields.
    source: str | None = Field(
        None,
        description="Where the scenario came from: session, issue, hand or synthetic, "
        "optionally followed by ': <link>'.",
    )
    difficulty_rationale: str | None = None
    forbidden_tools: list[str] | None = Field(
        None, description="Tools the agent must not call in any turn."
    )
    tags: list[str] = Field(default_factory=list)

    @field_validator("persona")
    @classmethod
    def _persona_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("persona must be a non-empty string")
        return value

    def persona_of(self, turn: Turn) -> str:
        return turn.persona or self.persona

    def forbidden_for(self, turn: Turn) -> list[str]:
        return sorted(set(self.forbidden_tools or []) | set(turn.forbidden_tools or []))
