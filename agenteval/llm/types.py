"""Provider-neutral message, tool and completion types shared by every LLM client.

The chat agent, the user simulator and the judge all speak these types; each client
translates them to its wire format, so callers never see provider-specific shapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

# What kind of dollar a cost figure is (agenteval.llm.cost says where each comes from):
# metered — a provider billing API's snapshots before and after the run (real charges);
# api_equivalent — the harness's own reported cost (Claude Code's total_cost_usd: list price);
# harness_counts — token counts the harness recorded per call, priced with a dated rate card;
# estimated — characters/4 token guesses priced the same way, only when asked for;
# provider_usage — the earlier name of harness_counts, still read from older transcripts.
CostSource = Literal["metered", "api_equivalent", "harness_counts", "estimated", "provider_usage"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallRequest(_Strict):
    """A tool invocation the model asked for."""

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Small local models sometimes emit arguments that are not a JSON object; keeping the
    # raw text (and leaving `arguments` empty) lets the agent report an invalid call
    # instead of silently running the tool with no arguments.
    raw_arguments: str | None = None


def _none_to_empty(value: Any) -> Any:
    return "" if value is None else value


class SystemMessage(_Strict):
    role: Literal["system"] = "system"
    content: str

    _content = field_validator("content", mode="before")(_none_to_empty)


class UserMessage(_Strict):
    role: Literal["user"] = "user"
    content: str

    _content = field_validator("content", mode="before")(_none_to_empty)


class AssistantMessage(_Strict):
    role: Literal["assistant"] = "assistant"
    content: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)

    _content = field_validator("content", mode="before")(_none_to_empty)


class ToolMessage(_Strict):
    """The result of one tool call, answered back to the model."""

    role: Literal["tool"] = "tool"
    tool_call_id: str
    content: str
    name: str | None = None
    is_error: bool = False

    _content = field_validator("content", mode="before")(_none_to_empty)


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage, Field(discriminator="role")
]
MessageLike = SystemMessage | UserMessage | AssistantMessage | ToolMessage | Mapping[str, Any]

_MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)


def as_messages(items: Iterable[MessageLike]) -> list[Message]:
    """Accept typed messages or plain dicts such as {"role": "user", "content": "hi"}."""
    out: list[Message] = []
    for item in items:
        if isinstance(item, SystemMessage | UserMessage | AssistantMessage | ToolMessage):
            out.append(item)
        else:
            out.append(_MESSAGE_ADAPTER.validate_python(dict(item)))
    return out


class ToolSpec(_Strict):
    """A tool offered to the model; `parameters` is a JSON Schema object."""

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


def as_tool_specs(items: Iterable[ToolSpec | Mapping[str, Any]] | None) -> list[ToolSpec]:
    if not items:
        return []
    return [t if isinstance(t, ToolSpec) else ToolSpec.model_validate(dict(t)) for t in items]


class Usage(_Strict):
    """Token counts split by billing rate.

    `input_tokens` counts only input billed at the normal rate: providers differ (OpenAI's
    prompt_tokens includes cached tokens, Anthropic's input_tokens excludes them), so the
    clients normalise to disjoint buckets that can be priced and summed directly.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def is_empty(self) -> bool:
        return self.total_input_tokens == 0 and self.output_tokens == 0


class Completion(_Strict):
    """One model reply plus its accounting.

    `cost_usd` is None when it cannot be known (no usage reported, or no price for the
    model) so reports show "n/a" rather than a misleading $0. `latency_ms` is the duration
    of the successful HTTP attempt, excluding queueing and retry back-off; a cache hit keeps
    the latency of the call that filled the cache and has `cached=True`.
    """

    text: str = ""
    tool_calls: list[ToolCallRequest] = Field(default_factory=list)
    usage: Usage | None = None
    # Filled only when the provider reported no usage and estimation was requested; kept
    # apart from `usage` so provider counts and guesses are never summed together.
    estimated_usage: Usage | None = None
    cost_usd: float | None = None
    cost_source: CostSource | None = None
    latency_ms: float = 0.0
    model: str = ""
    # The model the endpoint said answered, exactly as it said it; None when the reply named
    # none (`model` then falls back to the configured name). What a model pin reads back.
    served_model: str | None = None
    cached: bool = False
    finish_reason: str | None = None
    attempts: int = 1

    def to_message(self) -> AssistantMessage:
        """The assistant turn to append to the conversation before sending tool results."""
        return AssistantMessage(content=self.text, tool_calls=list(self.tool_calls))


_FINISH_REASONS = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "length": "length",
    "max_tokens": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "tool_use": "tool_calls",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}


def normalise_finish_reason(raw: str | None) -> str | None:
    """Map provider stop reasons onto stop/length/tool_calls/content_filter."""
    if raw is None:
        return None
    return _FINISH_REASONS.get(raw, raw)
