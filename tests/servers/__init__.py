"""Fake LLM servers (real HTTP on 127.0.0.1) for testing the clients end to end."""

from .anthropic_server import AnthropicServer
from .common import (
    Call,
    Drop,
    FakeLLMServer,
    Raw,
    RecordedRequest,
    Reply,
    malformed_body,
    malformed_json_text,
    rate_limited,
    server_error,
)
from .openai_server import OpenAIServer

__all__ = [
    "AnthropicServer",
    "Call",
    "Drop",
    "FakeLLMServer",
    "OpenAIServer",
    "Raw",
    "RecordedRequest",
    "Reply",
    "malformed_body",
    "malformed_json_text",
    "rate_limited",
    "server_error",
]
