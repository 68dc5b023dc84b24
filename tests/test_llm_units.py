"""Unit tests for the pieces under the LLM clients: retry, cost, cache, types, wire forms."""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from agenteval.llm import (
    AssistantMessage,
    BadRequest,
    Completion,
    Endpoint,
    EndpointLimits,
    LLMError,
    ModelPrice,
    PriceTable,
    QuotaExhausted,
    ResponseCache,
    RetryPolicy,
    ToolCallRequest,
    ToolMessage,
    TransientError,
    Usage,
    UserMessage,
)
from agenteval.llm import anthropic_client as anth
from agenteval.llm import openai_compat as oai
from agenteval.llm.cache import cache_key
from agenteval.llm.cost import price_completion
from agenteval.llm.retry import (
    RetryableFailure,
    call_with_retries,
    classify_status,
    parse_retry_after,
)
from agenteval.llm.types import as_messages


def _classify(status: int, body: Any = "", headers: dict[str, str] | None = None) -> LLMError:
    text = body if isinstance(body, str) else json.dumps(body)
    return classify_status(status, text, headers or {}, where="test", scrub=lambda s: s)


# ----- retry -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "body", "kind", "reason"),
    [
        (401, "", QuotaExhausted, "credential"),
        (403, "", QuotaExhausted, "credential"),
        (402, "", QuotaExhausted, "quota"),
        (429, {"error": {"code": "insufficient_quota"}}, QuotaExhausted, "quota"),
        (400, {"error": {"message": "Your credit balance is too low"}}, QuotaExhausted, "quota"),
        (429, {"error": {"type": "rate_limit_error"}}, RetryableFailure, None),
        (400, {"error": {"message": "messages: field required"}}, BadRequest, None),
        (404, "", BadRequest, None),
        (422, "", BadRequest, None),
        (408, "", RetryableFailure, None),
        (500, "", RetryableFailure, None),
        (502, "", RetryableFailure, None),
        (503, "", RetryableFailure, None),
        (529, "", RetryableFailure, None),
    ],
)
def test_classify_status(status: int, body: Any, kind: type, reason: str | None) -> None:
    error = _classify(status, body)
    assert error.status == status
    assert type(error) is kind
    if reason is not None:
        assert isinstance(error, QuotaExhausted) and error.reason == reason


def test_classify_scrubs_and_truncates_the_body() -> None:
    body = "secret-XYZ " + "x" * 2000
    error = classify_status(500, body, {}, where="ep", scrub=lambda s: s.replace("XYZ", "***"))
    assert "XYZ" not in str(error) and "secret-***" in str(error)
    assert len(str(error)) < 600


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"Retry-After": "3"}) == 3.0
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "-4"}) == 0.0
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert parse_retry_after({"retry-after": date}, now=1_000_000.0) == pytest.approx(30.0)


@given(failed=st.integers(min_value=1, max_value=30), seed=st.integers(0, 2**32))
def test_backoff_is_jittered_exponential_and_capped(failed: int, seed: int) -> None:
    policy = RetryPolicy(backoff_base=0.5, backoff_max=8.0, rng=random.Random(seed))
    ceiling = min(8.0, 0.5 * 2 ** (failed - 1))
    assert ceiling / 2 <= policy.delay_for(failed, None) <= ceiling


def test_retry_after_is_honoured_but_capped() -> None:
    policy = RetryPolicy(max_retry_after=60.0)
    assert policy.delay_for(1, 12.0) == 12.0
    assert policy.delay_for(1, 3600.0) == 60.0


def test_call_with_retries_counts_attempts() -> None:
    delays: list[float] = []

    async def sleep(delay: float) -> None:
        delays.append(delay)

    outcomes: list[Any] = [RetryableFailure("a", retry_after=2.0), RetryableFailure("b"), "done"]

    async def attempt() -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return str(outcome)

    policy = RetryPolicy(max_attempts=5, backoff_base=1.0, sleep=sleep)
    assert asyncio.run(call_with_retries(attempt, policy)) == ("done", 3)
    assert delays[0] == 2.0 and 1.0 <= delays[1] <= 2.0

    async def always_fails() -> str:
        raise RetryableFailure("nope", status=503)

    with pytest.raises(TransientError) as info:
        asyncio.run(call_with_retries(always_fails, RetryPolicy(max_attempts=2, sleep=sleep)))
    assert info.value.attempts == 2 and info.value.status == 503 and "nope" in str(info.value)


def test_retry_policy_rejects_zero_attempts() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


# ----- cost --------------------------------------------------------------------------


def test_model_price_cost_and_cache_rate_fallback() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=10_000)
    full = ModelPrice(input_per_mtok=3, output_per_mtok=15, cache_read_per_mtok=0.3)
    assert full.cost(usage) == pytest.approx(3 + 1.5 + 0.003)
    no_cache_rates = ModelPrice(input_per_mtok=3, output_per_mtok=15)
    assert no_cache_rates.cost(usage) == pytest.approx(3 + 1.5 + 0.03)


def test_price_completion_sources() -> None:
    table = PriceTable({"served-name": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}})
    usage = Usage(input_tokens=1000, output_tokens=1000)
    cost, source = price_completion(table, ("alias", "served-name"), usage, None)
    assert cost == pytest.approx(0.003) and source == "harness_counts"
    assert price_completion(table, ("served-name",), None, usage)[1] == "estimated"
    assert price_completion(table, ("served-name",), None, None) == (None, None)
    assert price_completion(table, ("unknown",), usage, None) == (None, None)
    assert price_completion(None, ("served-name",), usage, None) == (None, None)


def test_price_table_rejects_unknown_fields() -> None:
    with pytest.raises(ValidationError):
        PriceTable({"m": {"input_per_mtok": 1, "output_per_mtok": 1, "per_call": 5}})


# ----- cache -------------------------------------------------------------------------


def test_cache_key_is_canonical_and_sensitive() -> None:
    body_a = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    body_b = {"temperature": 0, "messages": [{"content": "hi", "role": "user"}], "model": "m"}
    base = cache_key("openai", "http://h/v1", "m", body_a, 0)
    assert base == cache_key("openai", "http://h/v1", "m", body_b, 0)
    assert base != cache_key("openai", "http://h/v1", "m", body_a, 1)
    assert base != cache_key("anthropic", "http://h/v1", "m", body_a, 0)
    assert base != cache_key("openai", "http://other/v1", "m", body_a, 0)
    assert base != cache_key("openai", "http://h/v1", "m", {**body_a, "temperature": 1}, 0)


def test_cache_round_trip_and_damage(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    completion = Completion(text="hi", usage=Usage(input_tokens=3), cost_usd=0.1, model="m")
    key = "ab" + "0" * 62
    assert cache.get(key) is None
    cache.put(key, completion)
    hit = cache.get(key)
    assert hit is not None and hit.cached is True
    assert hit.model_dump(exclude={"cached"}) == completion.model_dump(exclude={"cached"})
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == [f"{key}.json"]
    cache.path_for(key).write_text("{half a file")
    assert cache.get(key) is None
    cache.path_for(key).write_text(json.dumps({"format": 999, "completion": {}}))
    assert cache.get(key) is None


# ----- types and wire forms ----------------------------------------------------------


def test_as_messages_accepts_dicts_and_models() -> None:
    messages = as_messages(
        [
            {"role": "system", "content": "s"},
            UserMessage(content="u"),
            {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "name": "f"}]},
            {"role": "tool", "tool_call_id": "1", "content": "r"},
        ]
    )
    assert [m.role for m in messages] == ["system", "user", "assistant", "tool"]
    assert isinstance(messages[2], AssistantMessage) and messages[2].content == ""
    with pytest.raises(ValidationError):
        as_messages([{"role": "narrator", "content": "x"}])


def test_openai_tool_call_parsing_tolerates_local_servers() -> None:
    calls = oai.parse_tool_calls(
        [
            {"id": "a", "function": {"name": "f", "arguments": '{"x": 1}'}},
            {"function": {"name": "g", "arguments": {"y": 2}}},  # Ollama: object, no id
            {"id": "c", "function": {"name": "h", "arguments": '{"broken": '}},
            {"id": "d", "function": {"name": "k", "arguments": ""}},
        ]
    )
    assert [(c.id, c.name, c.arguments, c.raw_arguments) for c in calls] == [
        ("a", "f", {"x": 1}, None),
        ("call_1", "g", {"y": 2}, None),
        ("c", "h", {}, '{"broken": '),
        ("d", "k", {}, None),
    ]


def test_openai_usage_splits_cached_tokens() -> None:
    raw = {
        "prompt_tokens": 100,
        "completion_tokens": 9,
        "prompt_tokens_details": {"cached_tokens": 40},
    }
    assert oai.parse_usage(raw) == Usage(input_tokens=60, output_tokens=9, cache_read_tokens=40)
    assert oai.parse_usage({"prompt_tokens": 0, "completion_tokens": 0}) is None
    assert oai.parse_usage(None) is None


def test_openai_wire_replays_assistant_turns_faithfully() -> None:
    call = ToolCallRequest(id="c", name="f", arguments={}, raw_arguments="{oops")
    wire = oai.wire_message(AssistantMessage(tool_calls=[call]))
    assert wire == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{oops"}}
        ],
    }


def test_openai_reply_without_choices_is_retryable() -> None:
    with pytest.raises(RetryableFailure):
        oai.parse_response({"object": "chat.completion", "choices": []}, where="t")
    with pytest.raises(QuotaExhausted):
        oai.parse_response({"error": {"code": "insufficient_quota"}}, where="t")


def test_anthropic_wire_merges_turns_and_hoists_system() -> None:
    messages = as_messages(
        [
            {"role": "system", "content": "rules"},
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": "calling",
                "tool_calls": [
                    {"id": "t1", "name": "a", "arguments": {"q": 1}},
                    {"id": "t2", "name": "b", "arguments": {}},
                ],
            },
            ToolMessage(tool_call_id="t1", content="r1"),
            ToolMessage(tool_call_id="t2", content="failed", is_error=True),
            {"role": "user", "content": "and?"},
            {"role": "system", "content": "more rules"},
        ]
    )
    system, wire = anth.wire_messages(messages)
    assert system == "rules\n\nmore rules"
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]
    assert wire[1]["content"][0] == {"type": "text", "text": "calling"}
    assert [b["type"] for b in wire[2]["content"]] == ["tool_result", "tool_result", "text"]
    assert wire[2]["content"][1]["is_error"] is True
    assert "is_error" not in wire[2]["content"][0]


def test_anthropic_response_parsing() -> None:
    data = {
        "model": "claude-x",
        "stop_reason": "tool_use",
        "content": [
            {"type": "thinking", "thinking": "hmm"},
            {"type": "text", "text": "Let me check."},
            {"type": "tool_use", "id": "t", "name": "f", "input": {"a": 1}},
        ],
        "usage": {"input_tokens": 5, "output_tokens": 2, "cache_creation_input_tokens": 7},
    }
    reply = anth.parse_response(data, where="t")
    assert reply.text == "Let me check." and reply.finish_reason == "tool_calls"
    assert reply.tool_calls == [ToolCallRequest(id="t", name="f", arguments={"a": 1})]
    assert reply.usage == Usage(input_tokens=5, output_tokens=2, cache_write_tokens=7)
    with pytest.raises(RetryableFailure):
        anth.parse_response({"type": "message"}, where="t")


def test_anthropic_output_config_translation() -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "v", "schema": {"type": "object"}}}
    assert anth.output_config_for(fmt, {"effort": "low"}) == {
        "effort": "low",
        "format": {"type": "json_schema", "schema": {"type": "object"}},
    }
    assert anth.output_config_for({"type": "json_object"}, None) is None
    assert anth.output_config_for(None, None) is None


# ----- endpoint and limits -----------------------------------------------------------


def test_endpoint_refuses_keys_in_serialised_fields() -> None:
    with pytest.raises(ValidationError):
        Endpoint(model="m", api_key_env="sk-ant-api03-abcdefghijklmnop")
    with pytest.raises(ValidationError):
        Endpoint(model="m", api_key_env="0123456789abcdef0123456789abcdef0123456789abcdef")
    with pytest.raises(ValidationError):
        Endpoint(model="m", params={"api_key": "x"})
    assert Endpoint(model="m", api_key_env="OPENAI_API_KEY").api_key_env == "OPENAI_API_KEY"


def test_endpoint_describe_hides_url_credentials() -> None:
    ep = Endpoint(model="m", base_url="https://u:p4ss@host:8443/v1/?key=abc", protocol="openai")
    assert ep.describe() == {"protocol": "openai", "model": "m", "base_url": "https://host:8443/v1"}
    assert Endpoint(model="c", protocol="anthropic").describe()["base_url"] == (
        "https://api.anthropic.com"
    )


def test_endpoint_reads_key_only_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = Endpoint(model="m", api_key_env="AGENTEVAL_UNIT_KEY")
    monkeypatch.delenv("AGENTEVAL_UNIT_KEY", raising=False)
    with pytest.raises(QuotaExhausted):
        ep.read_api_key()
    monkeypatch.setenv("AGENTEVAL_UNIT_KEY", "value-from-env-123")
    assert ep.read_api_key() == "value-from-env-123"
    assert "value-from-env-123" not in ep.model_dump_json() + repr(ep)
    assert Endpoint(model="m").read_api_key() is None


def test_limits_are_shared_per_endpoint_key() -> None:
    limits = EndpointLimits()

    async def scenario() -> None:
        a = limits.semaphore(("openai", "u", "m"), 2)
        assert limits.semaphore(("openai", "u", "m"), 5) is a  # first bound wins
        assert limits.limit_for(("openai", "u", "m")) == 2
        assert limits.semaphore(("openai", "u", "other"), 2) is not a
        with pytest.raises(ValueError):
            limits.semaphore(("openai", "u", "x"), 0)

    asyncio.run(scenario())
    asyncio.run(scenario())  # a new event loop gets fresh semaphores
