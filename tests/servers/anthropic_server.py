"""Fake Anthropic server speaking the Messages API wire format (POST /v1/messages)."""

from __future__ import annotations

import itertools
from typing import Any

from .common import FakeLLMServer, Raw, RecordedRequest, Reply

_ids = itertools.count(1)


def _error(status: int, kind: str, message: str) -> Raw:
    return Raw(status, {"type": "error", "error": {"type": kind, "message": message}})


def quota_exhausted() -> Raw:
    """Anthropic reports an empty prepaid balance as a 400 with this wording."""
    return _error(
        400, "invalid_request_error", "Your credit balance is too low for this call (test server)."
    )


def invalid_key() -> Raw:
    return _error(401, "authentication_error", "invalid x-api-key (test server)")


def overloaded() -> Raw:
    return _error(529, "overloaded_error", "Overloaded (test server)")


def _wire_usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": usage.get("input", 0),
        "output_tokens": usage.get("output", 0),
        "cache_read_input_tokens": usage.get("cache_read", 0),
        "cache_creation_input_tokens": usage.get("cache_write", 0),
    }


def _tool_use(index: int, call: Any) -> dict[str, Any]:
    # A str `arguments` is sent as a JSON string `input`, so clients can be tested on a
    # non-object input.
    return {
        "type": "tool_use",
        "id": call.id or f"toolu_fake_{index}",
        "name": call.name,
        "input": call.arguments,
    }


class AnthropicServer(FakeLLMServer):
    """Accepts the key as `x-api-key` or `Authorization: Bearer`, as the API does."""

    def __init__(self, *args: Any, require_version: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.require_version = require_version

    @property
    def base_url(self) -> str:
        return self.url

    def route_ok(self, method: str, path: str) -> bool:
        return method == "POST" and path.split("?")[0].rstrip("/") == "/v1/messages"

    def _key_sent(self, headers: dict[str, str]) -> str | None:
        if "x-api-key" in headers:
            return headers["x-api-key"]
        auth = headers.get("authorization", "")
        return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None

    def check_request(self, request: RecordedRequest) -> Raw | None:
        if self.api_key is not None and self._key_sent(request.headers) != self.api_key:
            return invalid_key()
        if self.require_version and "anthropic-version" not in request.headers:
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        try:
            body = request.json
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return _error(400, "invalid_request_error", "body must be a JSON object")
        for name in ("model", "max_tokens", "messages"):
            if name not in body:
                return _error(400, "invalid_request_error", f"{name}: Field required")
        return None

    def render(self, reply: Reply, request: Any) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content += [_tool_use(i, c) for i, c in enumerate(reply.tool_calls)]
        stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
        out: dict[str, Any] = {
            "id": f"msg_fake_{next(_ids)}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or request.get("model", "fake-model"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
        }
        if reply.usage is not None:
            out["usage"] = _wire_usage(reply.usage)
        return out
