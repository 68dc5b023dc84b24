"""LLM endpoint clients shared by the chat agent, the user simulator and the judge.

client = make_client(Endpoint(model="qwen3", base_url="http://127.0.0.1:8000/v1"))
reply = await client.complete([{"role": "user", "content": "hi"}])
await client.aclose()
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from agenteval.llm.base import BaseChatClient, ChatClient, ClientOptions
from agenteval.llm.cache import ResponseCache
from agenteval.llm.cost import ModelPrice, PriceTable
from agenteval.llm.endpoint import Endpoint
from agenteval.llm.limits import GLOBAL_LIMITS, EndpointLimits
from agenteval.llm.retry import (
    BadRequest,
    LLMError,
    QuotaExhausted,
    RetryPolicy,
    TransientError,
)
from agenteval.llm.scrub import REDACTED, Scrubber
from agenteval.llm.types import (
    AssistantMessage,
    Completion,
    Message,
    MessageLike,
    SystemMessage,
    ToolCallRequest,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
)

__all__ = [
    "REDACTED",
    "AssistantMessage",
    "BadRequest",
    "BaseChatClient",
    "ChatClient",
    "ClientOptions",
    "Completion",
    "Endpoint",
    "EndpointLimits",
    "LLMError",
    "Message",
    "MessageLike",
    "ModelPrice",
    "PriceTable",
    "QuotaExhausted",
    "ResponseCache",
    "RetryPolicy",
    "Scrubber",
    "SystemMessage",
    "ToolCallRequest",
    "ToolMessage",
    "ToolSpec",
    "TransientError",
    "Usage",
    "UserMessage",
    "client_class",
    "make_client",
]


def make_client(
    endpoint: Endpoint | Mapping[str, Any],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    prices: PriceTable | Mapping[str, Any] | None = None,
    concurrency: int = 8,
    max_attempts: int = 5,
    backoff_base: float = 0.5,
    timeout: float = 60.0,
    estimate_missing_usage: bool = False,
    retry_policy: RetryPolicy | None = None,
    limits: EndpointLimits | None = None,
) -> BaseChatClient:
    """A ChatClient for `endpoint`'s protocol.

    `concurrency` bounds requests in flight per endpoint across all clients in the event
    loop (the first client to reach an endpoint sets its bound). `retry_policy`, when
    given, replaces max_attempts/backoff_base (tests use it to observe back-off delays).
    """
    ep = endpoint if isinstance(endpoint, Endpoint) else Endpoint.model_validate(dict(endpoint))
    options = ClientOptions(
        cache=ResponseCache(cache_dir) if cache_dir is not None else None,
        prices=prices if isinstance(prices, PriceTable) else PriceTable(prices),
        concurrency=concurrency,
        retry=retry_policy or RetryPolicy(max_attempts=max_attempts, backoff_base=backoff_base),
        timeout=timeout,
        estimate_missing_usage=estimate_missing_usage,
        limits=limits or GLOBAL_LIMITS,
    )
    return client_class(ep.protocol)(ep, options)


def client_class(protocol: str) -> type[BaseChatClient]:
    """The client class of `protocol`, its module (and HTTP stack) imported on first use."""
    if protocol == "anthropic":
        from agenteval.llm.anthropic_client import AnthropicClient

        return AnthropicClient
    from agenteval.llm.openai_compat import OpenAICompatClient

    return OpenAICompatClient
