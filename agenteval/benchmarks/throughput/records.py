"""The throughput benchmark's workload: short emails, each with its triage label and the
reply a careful person would send (eval/throughput/emails.yaml)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TriageLabel = Literal["urgent", "billing", "support", "sales", "spam", "info"]
TRIAGE_LABELS: tuple[str, ...] = ("urgent", "billing", "support", "sales", "spam", "info")


class TriageEmail(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    label: TriageLabel = Field(description="The one label the prompt's rules give this email.")
    subject: str = Field(min_length=1)
    sender: str = Field(min_length=3)
    body: str = Field(min_length=10)
    reply: str = Field(min_length=1, description="A reply a careful person would send.")


class TriageWorkload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    emails: list[TriageEmail] = Field(min_length=1)
