"""The building blocks of the params models: a section that refuses unknown keys, the fields
every model endpoint has, the judge's dimension names."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Protocol = Literal["openai", "anthropic"]
DIMENSION_NAMES = Literal[
    "correctness",
    "tool_selection",
    "context_retention",
    "completeness",
    "efficiency",
    "personality",
    "error_recovery",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EndpointFields(_Section):
    """A model endpoint: what to call and how. The key is read from the variable named."""

    model: str | None = Field(None, description="Model name sent to the endpoint.")
    base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(
        None, description="NAME of the environment variable holding the key (never the key)."
    )
    protocol: Protocol | None = Field(None, description="openai (compatible) | anthropic")
