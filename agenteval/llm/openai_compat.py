"""Client for OpenAI-compatible `/chat/completions` (OpenAI, vLLM, llama.cpp, Ollama, ...).

Talks plain HTTP through httpx rather than an SDK: the local servers this must support
each deviate slightly from OpenAI (arguments as objects, missing ids, no usage), and a
hand-written parser can accept all of them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import orjson

from agenteval.llm.base import BaseChatClient, ClientOptions, ParsedReply
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


def _wire_tool_call(call: ToolCallRequest) -> dict[str, Any]:
    # Replaying the model's own unparsable arguments keeps the transcript faithful.
    arguments = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": arguments},
    }


def wire_message(message: Message) -> dict[str, Any]:
    if isinstance(message, SystemMessage | UserMessage):
        return {"role": message.role, "content": message.content}
    if isinstance(message, AssistantMessage):
        out: dict[str, Any] = {"role": "assistant"}
        if message.tool_calls:
            # OpenAI expects null content (not "") on a pure tool-call turn.
            out["content"] = message.content or None
            out["tool_calls"] = [_wire_tool_call(c) for c in message.tool_calls]
        else:
            out["content"] = message.content
        return out
    assert isinstance(message, ToolMessage)
    tool: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "content": message.content,
    }
    if message.name:
        tool["name"] = message.name
    return tool


def wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": spec.name,
            "description": spec.description,
            "parameters": spec.parameters,
        },
    }


def _parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """(arguments, raw text if it was not a JSON object)."""
    if isinstance(raw, dict):  # Ollama sends an object instead of a JSON string
        return raw, None
    if raw is None or raw == "":
        return {}, None
    text = raw if isinstance(raw, str) else json.dumps(raw)
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    return (value, None) if isinstance(value, dict) else ({}, text)


def parse_tool_calls(raw_calls: Any) -> list[ToolCallRequest]:
    calls: list[ToolCallRequest] = []
    for index, raw in enumerate(raw_calls or []):
        function = raw.get("function") or {}
        arguments, raw_text = _parse_arguments(function.get("arguments"))
        calls.append(
            ToolCallRequest(
                # Some local servers omit ids; a positional id still pairs call and result.
                id=raw.get("id") or f"call_{index}",
                name=function.get("name") or "",
                arguments=arguments,
                raw_arguments=raw_text,
            )
        )
    return calls


def parse_usage(raw: Any) -> Usage | None:
    """OpenAI counts cached prompt tokens inside prompt_tokens; split them out."""
    if not isinstance(raw, dict):
        return None
    prompt = int(raw.get("prompt_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    usage = Usage(
        input_tokens=max(0, prompt - cached),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=cached,
    )
    # All-zero counts mean the server did not count, not that the call was free.
    return None if usage.is_empty() else usage


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content-part arrays from some servers
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def parse_response(data: Any, *, where: str) -> ParsedReply:
    if not isinstance(data, dict) or not data.get("choices"):
        error_text = json.dumps(data)[:500] if isinstance(data, dict) and "error" in data else ""
        if error_text and is_quota_body(error_text):
            raise QuotaExhausted(f"{where}: quota exhausted (reported in a 200 reply)")
        raise RetryableFailure(f"{where}: reply has no choices")
    choice = data["choices"][0]
    message = choice.get("message") or {}
    return ParsedReply(
        text=_content_text(message.get("content")),
        tool_calls=parse_tool_calls(message.get("tool_calls")),
        usage=parse_usage(data.get("usage")),
        model=str(data.get("model") or ""),
        finish_reason=normalise_finish_reason(choice.get("finish_reason")),
    )


def wire_json(body: Mapping[str, Any]) -> bytes:
    """The request body as compact JSON: orjson, several times faster than aiohttp's json=
    (json.dumps) on bodies that carry a whole conversation; json for what orjson refuses."""
    try:
        return orjson.dumps(body)
    except TypeError:
        return json.dumps(body, ensure_ascii=False).encode("utf-8")


class OpenAICompatClient(BaseChatClient):
    protocol = "openai"

    def __init__(self, endpoint: Endpoint, options: ClientOptions | None = None) -> None:
        super().__init__(endpoint, options)
        # aiohttp, not httpx, on this hot path: measured in bench/overhead.py, httpx's
        # connection pool cost ~1.5 ms CPU per request at 32 in flight and re-opened most
        # connections; aiohttp ~0.2 ms and keeps them alive. Created lazily because a
        # session belongs to the event loop that first uses it.
        self._http: aiohttp.ClientSession | None = None

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            timeout = aiohttp.ClientTimeout(total=self.options.timeout)
            connector = aiohttp.TCPConnector(limit=0, enable_cleanup_closed=True)
            self._http = aiohttp.ClientSession(timeout=timeout, connector=connector)
        return self._http

    def build_body(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        response_format: Mapping[str, Any] | None,
    ) -> dict[str, Any]:
        # params first so a stray "model"/"messages" in params cannot replace the real ones.
        body: dict[str, Any] = dict(self.endpoint.params)
        body["model"] = self.endpoint.model
        body["messages"] = [wire_message(m) for m in messages]
        if tools:
            body["tools"] = [wire_tool(t) for t in tools]
        if response_format is not None:
            body["response_format"] = dict(response_format)
        return body

    async def send(self, body: dict[str, Any]) -> ParsedReply:
        where = self.where
        headers = {"content-type": "application/json"}
        key = self.endpoint.read_api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = f"{self.endpoint.effective_base_url}/chat/completions"
        try:
            async with self._session().post(url, data=wire_json(body), headers=headers) as response:
                status, text = response.status, await response.text()
                reply_headers = dict(response.headers)
        except TimeoutError:
            raise RetryableFailure(f"{where}: timed out after {self.options.timeout}s") from None
        except aiohttp.ClientError as exc:
            detail = self.scrub_text(f"{type(exc).__name__}: {exc}")
            raise RetryableFailure(f"{where}: connection failed: {detail}") from None
        if not 200 <= status < 300:
            raise classify_status(status, text, reply_headers, where=where, scrub=self.scrub_text)
        try:
            data = json.loads(text)
        except ValueError:
            raise RetryableFailure(f"{where}: reply body is not JSON") from None
        return parse_response(data, where=where)

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
