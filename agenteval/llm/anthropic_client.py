"""Client for the Anthropic Messages API through the official `anthropic` SDK.

The SDK is imported on first use because importing it takes well over a second, which
every CLI invocation would otherwise pay even when no Anthropic endpoint is configured.
SDK retries are disabled (max_retries=0): the shared retry loop owns retrying so both
protocols follow one policy and quota errors are never retried.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from agenteval.llm.base import BaseChatClient, ClientOptions, ParsedReply
from agenteval.llm.endpoint import Endpoint
from agenteval.llm.retry import RetryableFailure, classify_status
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

    async def send(self, body: dict[str, Any]) -> ParsedReply:
        import anthropic

        where = self.where
        key = self.endpoint.read_api_key()
        # A per-call copy carries the key just for this request, so it is read from the
        # environment at call time and never kept on a long-lived object.
        sdk = self._base_sdk().with_options(api_key=key) if key else self._base_sdk()
        named = {name: body[name] for name in _NAMED_FIELDS}
        extra = {k: v for k, v in body.items() if k not in _NAMED_FIELDS}
        try:
            raw = await sdk.messages.with_raw_response.create(**named, extra_body=extra or None)
            data = await raw.json()
        except anthropic.APIStatusError as exc:
            raise classify_status(
                exc.status_code,
                exc.response.text,
                dict(exc.response.headers),
                where=where,
                scrub=self.scrub_text,
            ) from None
        except anthropic.APITimeoutError:
            raise RetryableFailure(f"{where}: timed out after {self.options.timeout}s") from None
        except anthropic.APIConnectionError as exc:
            detail = self.scrub_text(f"{type(exc).__name__}: {exc}")
            raise RetryableFailure(f"{where}: connection failed: {detail}") from None
        except ValueError:
            raise RetryableFailure(f"{where}: reply body is not JSON") from None
        return parse_response(data, where=where)

    async def aclose(self) -> None:
        if self._sdk is not None:
            await self._sdk.close()
            self._sdk = None
