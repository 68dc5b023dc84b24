"""Client for the Anthropic Messages API through the official `anthropic` SDK.

The SDK is imported on first use because importing it takes well over a second, which
every CLI invocation would otherwise pay even when no Anthropic endpoint is configured.
SDK retries are disabled (max_retries=0): the shared retry loop owns retrying so both
protocols follow one policy and quota errors are never retried.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from agenteval.llm.base import BaseChatClient, ClientOptions, ParsedReply, Streamed
from agenteval.llm.endpoint import Endpoint
from agenteval.llm.retry import QuotaExhausted, RetryableFailure, classify_status, is_quota_body
from agenteval.llm.types import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolCallRequest,
    ToolMessage,
    ToolSpec,
    Usage,
    UserMessage,
    normalise_finish_reason,
)

# The Messages API requires max_tokens; used when params do not set it.
DEFAULT_MAX_TOKENS = 4096
# Sent when the endpoint names no key variable. Passing None instead would make the SDK
# search ANTHROPIC_API_KEY and credential files, which may belong to another endpoint.
_NO_KEY = "no-key-configured"
# Fields passed to messages.create by name; everything else rides in extra_body so that
# request params work whatever this SDK version's signature accepts.
_NAMED_FIELDS = ("model", "max_tokens", "messages")


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    """(wire role, content blocks) for one non-system message."""
    if isinstance(message, UserMessage):
        return "user", [{"type": "text", "text": message.content}] if message.content else []
    if isinstance(message, AssistantMessage):
        blocks: list[dict[str, Any]] = []
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        for call in message.tool_calls:
            blocks.append(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            )
        return "assistant", blocks
    assert isinstance(message, ToolMessage)
    result: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": message.content,
    }
    if message.is_error:
        result["is_error"] = True
    return "user", [result]


def wire_messages(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system prompt, messages) in Messages API form.

    System messages are hoisted into the top-level `system` field, the only place the API
    accepts them. Consecutive same-role turns are merged because tool results travel as
    user-role blocks and must sit in the one user turn that follows the tool calls.
    """
    system = [m.content for m in messages if isinstance(m, SystemMessage) and m.content]
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            continue
        role, blocks = _blocks(message)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": role, "content": blocks})
    return ("\n\n".join(system) if system else None), wire


def wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters}


def output_config_for(
    response_format: Mapping[str, Any] | None, existing: Any
) -> dict[str, Any] | None:
    """Translate an OpenAI-style json_schema response_format into `output_config.format`.

    `json_object` has no Anthropic counterpart and is left to the prompt.
    """
    if not response_format or response_format.get("type") != "json_schema":
        return None
    spec = response_format.get("json_schema") or {}
    schema = spec.get("schema", spec) if isinstance(spec, Mapping) else {}
    config = dict(existing) if isinstance(existing, Mapping) else {}
    config["format"] = {"type": "json_schema", "schema": dict(schema)}
    return config


def _usage_fields(usage: Any) -> dict[str, int]:
    """The counts an event's usage object carries (None fields left out: a message_delta
    repeats only the output count)."""
    names = ("input_tokens", "output_tokens", "cache_read_input_tokens",
             "cache_creation_input_tokens")  # fmt: skip
    found = {name: getattr(usage, name, None) for name in names}
    return {name: int(value) for name, value in found.items() if value is not None}


def parse_usage(raw: Any) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    usage = Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
        cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
    )
    # Some Anthropic-compatible servers report zeros when they did not count at all.
    return None if usage.is_empty() else usage


def parse_response(data: Any, *, where: str) -> ParsedReply:
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise RetryableFailure(f"{where}: reply has no content blocks")
    texts: list[str] = []
    calls: list[ToolCallRequest] = []
    for index, block in enumerate(data["content"]):
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") == "tool_use":
            raw_input = block.get("input")
            calls.append(
                ToolCallRequest(
                    id=block.get("id") or f"toolu_{index}",
                    name=block.get("name") or "",
                    arguments=raw_input if isinstance(raw_input, dict) else {},
                    raw_arguments=None if isinstance(raw_input, dict) else json.dumps(raw_input),
                )
            )
    return ParsedReply(
        text="".join(texts),
        tool_calls=calls,
        usage=parse_usage(data.get("usage")),
        model=str(data.get("model") or ""),
        finish_reason=normalise_finish_reason(data.get("stop_reason")),
    )


class AnthropicClient(BaseChatClient):
    protocol = "anthropic"

    def __init__(self, endpoint: Endpoint, options: ClientOptions | None = None) -> None:
        super().__init__(endpoint, options)
        self._sdk: Any = None

    def _base_sdk(self) -> Any:
        if self._sdk is None:
            import anthropic

            self._sdk = anthropic.AsyncAnthropic(
                api_key=_NO_KEY,
                base_url=self.endpoint.effective_base_url,
                max_retries=0,
                timeout=self.options.timeout,
            )
        return self._sdk

    def prepare(self) -> None:
        # Import and build the SDK client here so the one-off import cost is not counted
        # as model latency.
        self._base_sdk()

    def build_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        response_format: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        params = dict(self.endpoint.params)
        system, wire = wire_messages(messages)
        body: dict[str, Any] = params
        body["model"] = self.endpoint.model
        body["max_tokens"] = int(params.get("max_tokens") or DEFAULT_MAX_TOKENS)
        body["messages"] = wire
        if system is not None:
            body["system"] = system
        if tools:
            body["tools"] = [wire_tool(t) for t in tools]
        output_config = output_config_for(response_format, params.get("output_config"))
        if output_config is not None:
            body["output_config"] = output_config
        return body

    def _call(self, body: dict[str, Any]) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """(SDK client carrying the key, named fields, extra body) for one request."""
        key = self.endpoint.read_api_key()
        # A per-call copy carries the key just for this request, so it is read from the
        # environment at call time and never kept on a long-lived object.
        sdk = self._base_sdk().with_options(api_key=key) if key else self._base_sdk()
        named = {name: body[name] for name in _NAMED_FIELDS}
        extra = {k: v for k, v in body.items() if k not in _NAMED_FIELDS}
        return sdk, named, extra

    async def send(self, body: dict[str, Any]) -> ParsedReply:
        sdk, named, extra = self._call(body)
        try:
            raw = await sdk.messages.with_raw_response.create(**named, extra_body=extra or None)
            data = await raw.json()
        except Exception as exc:
            raise self._failure(exc) from None
        return parse_response(data, where=self.where)

    async def send_stream(self, body: dict[str, Any]) -> Streamed:
        """The Messages API's events: message_start (input usage), content_block_delta
        (text), message_delta (stop reason, output usage), message_stop."""
        sdk, named, extra = self._call(body)
        sent_at = time.perf_counter()
        parts: list[str] = []
        first: float | None = None
        model, stop = "", None
        counts: dict[str, int] = {}
        try:
            stream = await sdk.messages.create(**named, stream=True, extra_body=extra or None)
            async for event in stream:
                if event.type == "message_start":
                    model = event.message.model
                    counts.update(_usage_fields(event.message.usage))
                elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                    if event.delta.text:
                        first = first or time.perf_counter()
                        parts.append(event.delta.text)
                elif event.type == "message_delta":
                    stop = event.delta.stop_reason or stop
                    counts.update(_usage_fields(event.usage))
        except Exception as exc:
            raise self._failure(exc) from None
        if stop is None:
            raise RetryableFailure(f"{self.where}: the stream ended without a stop reason")
        return Streamed(
            text="".join(parts), usage=parse_usage(counts or None), model=model,
            finish_reason=normalise_finish_reason(stop), sent_at=sent_at,
            first_token_at=first, done_at=time.perf_counter(), deltas=len(parts),
        )  # fmt: skip

    def _failure(self, exc: Exception) -> Exception:
        """The LLMError the shared retry loop acts on, for an exception of the SDK (any
        other exception is returned as it is)."""
        import anthropic

        where = self.where
        if isinstance(exc, anthropic.APIStatusError) and exc.status_code < 300:
            # An error event inside a stream that had begun (overloaded, API error).
            detail = self.scrub_text(f"{where}: error event in the stream: {exc}")[:600]
            if is_quota_body(detail):
                return QuotaExhausted(detail)
            return RetryableFailure(detail)
        if isinstance(exc, anthropic.APIStatusError):
            return classify_status(
                exc.status_code,
                exc.response.text,
                dict(exc.response.headers),
                where=where,
                scrub=self.scrub_text,
            )
        if isinstance(exc, anthropic.APITimeoutError):
            return RetryableFailure(f"{where}: timed out after {self.options.timeout}s")
        if isinstance(exc, anthropic.APIConnectionError):
            detail = self.scrub_text(f"{type(exc).__name__}: {exc}")
            return RetryableFailure(f"{where}: connection failed: {detail}")
        if isinstance(exc, ValueError):
            return RetryableFailure(f"{where}: reply body is not JSON")
        return exc

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None
