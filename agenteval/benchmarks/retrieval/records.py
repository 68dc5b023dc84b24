"""Retrieval benchmark labels: questions over pinned documents with their evidence quotes.

The quote is what a retrieved chunk must cover (at least half of it) to count as a hit; it
is checked against the text extracted from the document on every run, so a label can never
silently score against the wrong passage.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class EvidenceQuestion(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    question: str = Field(min_length=1)
    document: str = Field(description="Repository-relative path of the pinned document.")
    quote: str = Field(min_length=8, description="Evidence, verbatim up to whitespace.")
    answer: str = Field(min_length=1)
    aliases: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)


class EvidenceSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    notes: str | None = None
    questions: list[EvidenceQuestion] = Field(min_length=1)
