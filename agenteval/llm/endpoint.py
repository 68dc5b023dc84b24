"""Endpoint configuration: which model, where, and which environment variable holds the key.

The key itself never lives on an Endpoint. Endpoints are dumped into run provenance and
configs, so they name the variable (`api_key_env`) and the clients read its value only at
the moment a request is built.
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agenteval.llm.private import PrivateScrubber
from agenteval.llm.retry import QuotaExhausted
from agenteval.llm.scrub import SECRET_FIELD_NAME, Scrubber

Protocol = Literal["openai", "anthropic"]

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Endpoint(BaseModel):
    """A model behind an OpenAI-compatible or Anthropic Messages API.

    `params` are request fields sent with every call (temperature, max_tokens, top_p and
    any provider-specific extras such as seed or top_k).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    protocol: Protocol = "openai"
    params: dict[str, Any] = Field(default_factory=dict)
    # The model's own address when requests travel through a relay (the tasks' model
    # gateway, on a port picked per run): the reply cache is keyed by it, so two runs through
    # two gateways share their entries. Never dumped: provenance names the route taken.
    model_url: str | None = Field(None, exclude=True)

    @field_validator("api_key_env")
    @classmethod
    def _env_name_not_key(cls, value: str | None) -> str | None:
        # A key pasted here by mistake would end up in every provenance record, so refuse
        # anything that is not a plain variable name or that looks like a secret.
        if value is None:
            return None
        if not _ENV_NAME.match(value) or Scrubber().leaks(value):
            raise ValueError(
                "api_key_env must be the NAME of an environment variable holding the key, "
                "not the key itself"
            )
        return value

    @field_validator("params")
    @classmethod
    def _no_secrets_in_params(cls, value: dict[str, Any]) -> dict[str, Any]:
        for name in value:
            if SECRET_FIELD_NAME.search(name):
                raise ValueError(
                    f"params must not carry credentials ({name!r}); put the key in an "
                    "environment variable and name it in api_key_env"
                )
        return value

    @property
    def effective_base_url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URLS[self.protocol]).rstrip("/")

    @property
    def public_base_url(self) -> str:
        """The base URL without user-info or query string, which can carry credentials."""
        parts = urlsplit(self.effective_base_url)
        host = parts.hostname or ""
        netloc = f"{host}:{parts.port}" if parts.port else host
        return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))

    @property
    def cache_base_url(self) -> str:
        """The base URL the reply cache is keyed by: the model's own, past any relay."""
        if self.model_url is None:
            return self.public_base_url
        own = self.model_copy(update={"base_url": self.model_url, "model_url": None})
        return own.public_base_url

    def describe(self) -> dict[str, str]:
        """Provenance record: enough to tell endpoints apart, nothing secret."""
        return {"protocol": self.protocol, "model": self.model, "base_url": self.public_base_url}

    def label(self) -> str:
        """Short human-readable name used in error messages."""
        return f"{self.protocol}:{self.model}@{self.public_base_url}"

    def limit_key(self) -> tuple[str, str, str]:
        return (self.protocol, self.public_base_url, self.model)

    def read_api_key(self) -> str | None:
        """The key from the environment, read now; None when the endpoint needs no key."""
        if self.api_key_env is None:
            return None
        value = os.environ.get(self.api_key_env, "").strip()
        if not value:
            raise QuotaExhausted(
                f"{self.label()}: environment variable {self.api_key_env} is not set",
                reason="credential",
            )
        return value

    def scrubber(self) -> Scrubber:
        """A scrubber that knows this endpoint's key (read now) as well as secret shapes."""
        envs = [self.api_key_env] if self.api_key_env else []
        return Scrubber.from_environment(envs)

    def cache_scrubber(self) -> PrivateScrubber:
        """What the response cache stores this endpoint's replies with: the sessions' own
        scrubber (personal data included) knowing this endpoint's key, read now."""
        return PrivateScrubber([self.api_key_env] if self.api_key_env else [])
