"""The building blocks of the params models: a section that refuses unknown keys, the fields
every model endpoint has, the judge's dimension names."""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

Protocol = Literal["openai", "anthropic"]
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
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

    @field_validator("api_key_env")
    @classmethod
    def _a_name(cls, value: str | None) -> str | None:
        # The key's shape is checked again where the endpoint is built (llm.endpoint, with
        # the secret scrubber); a name is letters, digits and underscores, so a pasted key
        # with its dashes is refused here, before any work.
        if value is not None and not ENV_NAME.match(value):
            raise ValueError("expected the NAME of an environment variable, not the key itself")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        # Refused here, before any request: a URL no client can reach would otherwise fail
        # every call of a run and be counted (say) as the agent's or the memory's failure.
        if value is not None:
            parts = urlsplit(value)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError(f"expected an http:// or https:// URL with a host, got {value!r}")
        return value
