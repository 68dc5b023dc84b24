"""Client for OpenAI-compatible `/chat/completions` (OpenAI, vLLM, llama.cpp, Ollama, ...).

Talks plain HTTP through httpx rather than an SDK: the local servers this must support
each deviate slightly from OpenAI (arguments as objects, missing ids, no usage), and a
hand-written parser can accept all of them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

import aiohttp
import orjson

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


class StreamReader:
    """Folds OpenAI's `chat.completion.chunk` events into one Streamed reply."""

    def __init__(self, where: str, sent_at: float) -> None:
        self.where, self.sent_at = where, sent_at
        self.parts: list[str] = []
        self.first: float | None = None
        self.usage: Usage | None = None
        self.model = ""
        self.finish: str | None = None

    def feed(self, data: bytes) -> None:
        try:
            event = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise RetryableFailure(f"{self.where}: a streamed event is not JSON") from None
        if not isinstance(event, dict):
            raise RetryableFailure(f"{self.where}: a streamed event is not an object")
        if "error" in event:
            text = json.dumps(event)[:500]
            if is_quota_body(text):
                raise QuotaExhausted(f"{self.where}: quota exhausted (reported in the stream)")
            raise RetryableFailure(f"{self.where}: error event in the stream: {text}")
        self.model = str(event.get("model") or self.model)
        # With stream_options.include_usage the counts come in a last event without choices.
        self.usage = parse_usage(event.get("usage")) or self.usage
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            text = _content_text(delta.get("content"))
            if text:
                self.first = self.first or time.perf_counter()
                self.parts.append(text)
            self.finish = normalise_finish_reason(choice.get("finish_reason")) or self.finish

    def done(self) -> Streamed:
        if self.finish is None:
            # A stream cut short (a server interrupting it, a proxy's timeout) still ends
            # cleanly on the wire; only the missing finish reason tells it from a reply.
            raise RetryableFailure(f"{self.where}: the stream ended without a finish reason")
        return Streamed(
            text="".join(self.parts),
            usage=self.usage,
            model=self.model,
            finish_reason=self.finish,
            sent_at=self.sent_at,
            first_token_at=self.first,
            done_at=time.perf_counter(),
            deltas=len(self.parts),
        )


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

    async def send_stream(self, body: dict[str, Any]) -> Streamed:
        where = self.where
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        key = self.endpoint.read_api_key()
        if key:
            headers["authorization"] = f"Bearer {key}"
        url = f"{self.endpoint.effective_base_url}/chat/completions"
        wire = dict(body, stream=True, stream_options={"include_usage": True})
        sent_at = time.perf_counter()
        try:
            async with self._session().post(url, data=wire_json(wire), headers=headers) as response:
                if not 200 <= response.status < 300:
                    text = await response.text()
                    raise classify_status(
                        response.status, text, dict(response.headers), where=where,
                        scrub=self.scrub_text,
                    )  # fmt: skip
                if "text/event-stream" not in response.headers.get("content-type", ""):
                    return self._unstreamed(await response.text(), sent_at)
                reader = StreamReader(where, sent_at)
                async for line in response.content:
                    data = line.strip()
                    if not data.startswith(b"data:"):
                        continue  # comments, event names, keep-alives, blank separators
                    data = data[5:].strip()
                    if data == b"[DONE]":
                        break
                    reader.feed(data)
                return reader.done()
        except TimeoutError:
            raise RetryableFailure(f"{where}: timed out after {self.options.timeout}s") from None
        except aiohttp.ClientError as exc:
            detail = self.scrub_text(f"{type(exc).__name__}: {exc}")
            raise RetryableFailure(f"{where}: connection failed: {detail}") from None

    def _unstreamed(self, text: str, sent_at: float) -> Streamed:
        """A server that ignored `stream: true` and answered in one piece: no first token."""
        try:
            reply = parse_response(json.loads(text), where=self.where)
        except ValueError:
            raise RetryableFailure(f"{self.where}: reply body is not JSON") from None
        return Streamed(
            text=reply.text, usage=reply.usage, model=reply.model,
            finish_reason=reply.finish_reason, sent_at=sent_at, first_token_at=None,
            done_at=time.perf_counter(), deltas=0,
        )  # fmt: skip

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.close()
