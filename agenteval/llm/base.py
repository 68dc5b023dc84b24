"""What every chat client does regardless of wire format: cache, bound, retry, price.

Protocol clients only translate (build the request body, send one attempt, parse the
reply); keeping the rest here means both protocols behave identically under faults.
"""

from __future__ import annotations

import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from agenteval.llm.cache import ResponseCache, cache_key
from agenteval.llm.cost import PriceTable, estimate_tokens, price_completion
from agenteval.llm.endpoint import Endpoint
from agenteval.llm.limits import GLOBAL_LIMITS, EndpointLimits
from agenteval.llm.retry import RetryPolicy, call_with_retries
from agenteval.llm.scrub import MIN_SECRET_LEN, REDACTED
from agenteval.llm.types import (
    AssistantMessage,
    Completion,
    Message,
    MessageLike,
    ToolCallRequest,
    ToolSpec,
    Usage,
    as_messages,
    as_tool_specs,
)
from agenteval.llm.views import HeldSecrets

ToolsArg = Iterable[ToolSpec | Mapping[str, Any]] | None


@dataclass
class ParsedReply:
    """One provider reply, before accounting."""

    text: str
    tool_calls: list[ToolCallRequest]
    usage: Usage | None
    model: str
    finish_reason: str | None


@dataclass(frozen=True)
class Streamed:
    """One streamed reply and when its parts arrived (time.perf_counter seconds).

    `first_token_at` is the arrival of the first non-empty text delta, None when the server
    sent none or answered in one piece although streaming was asked for (no first token can
    be timed then). `attempts` counts the tries of the call, retries included.
    """

    text: str
    usage: Usage | None
    model: str
    finish_reason: str | None
    sent_at: float
    first_token_at: float | None
    done_at: float
    deltas: int
    attempts: int = 1


@dataclass
class ClientOptions:
    cache: ResponseCache | None = None
    prices: PriceTable | None = None
    concurrency: int = 8
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeout: float = 60.0
    # Off by default: a guessed cost must be asked for, otherwise missing usage is "n/a".
    estimate_missing_usage: bool = False
    limits: EndpointLimits = field(default_factory=lambda: GLOBAL_LIMITS)


@runtime_checkable
class ChatClient(Protocol):
    """What the chat agent, user simulator and judge program against."""

    endpoint: Endpoint

    async def complete(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: ToolsArg = None,
        response_format: Mapping[str, Any] | None = None,
        iteration: int = 0,
        seed: int = 0,
    ) -> Completion: ...

    async def aclose(self) -> None: ...


def _input_chars(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    chars = 0
    for message in messages:
        chars += len(message.content)
        if isinstance(message, AssistantMessage):
            chars += sum(len(json.dumps(c.arguments)) + len(c.name) for c in message.tool_calls)
    chars += sum(len(json.dumps(t.model_dump())) for t in tools)
    return chars


def _output_chars(reply: ParsedReply) -> int:
    calls = sum(len(json.dumps(c.arguments)) + len(c.name) for c in reply.tool_calls)
    return len(reply.text) + calls


class BaseChatClient(ABC):
    protocol: str

    def __init__(self, endpoint: Endpoint, options: ClientOptions | None = None) -> None:
        if endpoint.protocol != self.protocol:
            raise ValueError(f"{type(self).__name__} cannot serve a {endpoint.protocol} endpoint")
        self.endpoint = endpoint
        self.options = options or ClientOptions()
        # Every attempt names its endpoint (its limit slot, its error label): taken once,
        # since parsing the base URL each time was a tenth of an attempt's client-side cost.
        self.where = endpoint.label()
        self._limit_key = endpoint.limit_key()

    @abstractmethod
    def build_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        response_format: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        """The JSON request body, exactly as sent (it is also the cache key material)."""

    @abstractmethod
    async def send(self, body: dict[str, Any]) -> ParsedReply:
        """One HTTP attempt; raises RetryableFailure or another LLMError on failure."""

    @abstractmethod
    async def send_stream(self, body: dict[str, Any]) -> Streamed:
        """One streamed HTTP attempt (the protocol's server-sent events), timed as it
        arrives; raises RetryableFailure or another LLMError like `send`."""

    @abstractmethod
    async def aclose(self) -> None: ...

    def prepare(self) -> None:
        """One-off setup run before the first attempt, outside the timed section."""
        return None

    def scrub_text(self, text: str) -> str:
        """Error text with this endpoint's key and any secret shapes removed."""
        return self.endpoint.scrubber().scrub_text(text)

    async def complete(
        self,
        messages: Sequence[MessageLike],
        *,
        tools: ToolsArg = None,
        response_format: Mapping[str, Any] | None = None,
        iteration: int = 0,
        seed: int = 0,
    ) -> Completion:
        """Ask the model for the next turn; `iteration` and `seed` (the unit's) name the
        sample, so repeats and runs with other seeds never share a cached reply."""
        parsed_messages = as_messages(messages)
        specs = as_tool_specs(tools)
        body = self.build_body(parsed_messages, specs, response_format)
        cache = self.options.cache
        key = None
        if cache is not None:
            ep = self.endpoint
            key = cache_key(ep.protocol, ep.cache_base_url, ep.model, body, iteration, seed)
            hit = cache.get(key)
            if hit is not None:
                return self._reprice(hit)
        self.prepare()
        (reply, latency_ms), attempts = await call_with_retries(
            lambda: self._attempt(body), self.options.retry
        )
        completion = without_own_key(
            self._account(reply, latency_ms, attempts, parsed_messages, specs), self.endpoint
        )
        if cache is not None and key is not None:
            cache.put(key, completion, self.endpoint.cache_scrubber())
        return completion

    async def stream(self, messages: Sequence[MessageLike]) -> Streamed:
        """Ask for a reply streamed token by token, never from the response cache (what is
        measured is the endpoint); retried like `complete`, one endpoint slot per attempt."""
        body = self.build_body(as_messages(messages), [], None)
        self.prepare()

        async def attempt() -> Streamed:
            async with self.options.limits.slot(self._limit_key, self.options.concurrency):
                return await self.send_stream(body)

        reply, attempts = await call_with_retries(attempt, self.options.retry)
        return replace(reply, attempts=attempts)

    async def _attempt(self, body: dict[str, Any]) -> tuple[ParsedReply, float]:
        # The slot is held per attempt, not across back-off sleeps, so a client waiting
        # out a 429 does not stop others from using the endpoint.
        async with self.options.limits.slot(self._limit_key, self.options.concurrency):
            start = time.perf_counter()
            reply = await self.send(body)
            return reply, (time.perf_counter() - start) * 1000.0

    def _reprice(self, completion: Completion) -> Completion:
        # Prices are configuration, not model output: a cached reply is priced with the
        # table in force now, so fixing a rate does not require discarding the cache.
        estimated = completion.estimated_usage if self.options.estimate_missing_usage else None
        cost, source = price_completion(
            self.options.prices,
            (self.endpoint.model, completion.model),
            completion.usage,
            estimated,
        )
        return completion.model_copy(update={"cost_usd": cost, "cost_source": source})

    def _account(
        self,
        reply: ParsedReply,
        latency_ms: float,
        attempts: int,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
    ) -> Completion:
        estimated = None
        if reply.usage is None and self.options.estimate_missing_usage:
            estimated = Usage(
                input_tokens=estimate_tokens(_input_chars(messages, tools)),
                output_tokens=estimate_tokens(_output_chars(reply)),
            )
        cost, source = price_completion(
            self.options.prices, (self.endpoint.model, reply.model), reply.usage, estimated
        )
        return Completion(
            text=reply.text,
            tool_calls=reply.tool_calls,
            usage=reply.usage,
            estimated_usage=estimated,
            cost_usd=cost,
            cost_source=source,
            latency_ms=latency_ms,
            model=reply.model or self.endpoint.model,
            served_model=reply.model or None,
            cached=False,
            finish_reason=reply.finish_reason,
            attempts=attempts,
        )


def without_own_key(completion: Completion, endpoint: Endpoint) -> Completion:
    """The reply without the endpoint's own key, however it re-wraps it (`llm.views`): an
    endpoint that echoes its Authorization header would otherwise have its key sent back
    to it as the agent's own earlier turn of a conversation, and written where replies go."""
    env = endpoint.api_key_env
    key = os.environ.get(env, "").strip() if env else ""
    if len(key) < MIN_SECRET_LEN or not completion.text:
        return completion
    spans = HeldSecrets([key]).spans(completion.text)
    if not spans:
        return completion
    text = completion.text
    for start, end in reversed(spans):
        text = text[:start] + REDACTED + text[end:]
    return completion.model_copy(update={"text": text})
