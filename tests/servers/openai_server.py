"""Fake OpenAI-compatible server speaking the chat.completions wire format."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from .common import FakeLLMServer, Raw, RecordedRequest, Reply

_ids = itertools.count(1)


def quota_exhausted() -> Raw:
    """OpenAI's answer when the account has no quota left: 429 + insufficient_quota."""
    error = {
        "message": "This account has no quota left (test server).",
        "type": "insufficient_quota",
        "param": None,
        "code": "insufficient_quota",
    }
    return Raw(429, {"error": error})


def invalid_key() -> Raw:
    error = {
        "message": "The API key sent is not valid (test server).",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_api_key",
    }
    return Raw(401, {"error": error})


def _wire_call(index: int, call: Any) -> dict[str, Any]:
    args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
    return {
        "id": call.id or f"call_fake_{index}",
        "type": "function",
        "function": {"name": call.name, "arguments": args},
    }


def _wire_usage(usage: dict[str, int]) -> dict[str, Any]:
    cached = usage.get("cache_read", 0)
    prompt = usage.get("input", 0) + cached  # OpenAI counts cached tokens inside prompt
    completion = usage.get("output", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


class OpenAIServer(FakeLLMServer):
    """`base_url` (…/v1) is what an Endpoint should point at."""

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def route_ok(self, method: str, path: str) -> bool:
        return method == "POST" and path.rstrip("/") in (
            "/v1/chat/completions",
            "/chat/completions",
        )

    def check_request(self, request: RecordedRequest) -> Raw | None:
        expected = f"Bearer {self.api_key}"
        if self.api_key is not None and request.headers.get("authorization") != expected:
            return invalid_key()
        try:
            body = request.json
        except ValueError:
            body = None
        if not isinstance(body, dict) or "model" not in body or "messages" not in body:
            error = {"message": "model and messages are required", "type": "invalid_request_error"}
            return Raw(400, {"error": error})
        return None

    def render(self, reply: Reply, request: Any) -> dict[str, Any]:
        calls = [_wire_call(i, c) for i, c in enumerate(reply.tool_calls)]
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        out: dict[str, Any] = {
            "id": f"chatcmpl-fake-{next(_ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or request.get("model", "fake-model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if reply.usage is not None:
            out["usage"] = _wire_usage(reply.usage)
        return out
