"""End-to-end tests of both LLM clients against fake servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from servers import (
    AnthropicServer,
    Call,
    FakeLLMServer,
    OpenAIServer,
    Raw,
    Reply,
    malformed_body,
    malformed_json_text,
    rate_limited,
    server_error,
)
from servers import anthropic_server as anthropic_faults
from servers import openai_server as openai_faults

from agenteval.llm import (
    BadRequest,
    Completion,
    Endpoint,
    EndpointLimits,
    QuotaExhausted,
    RetryPolicy,
    ToolMessage,
    ToolSpec,
    TransientError,
    make_client,
)
from agenteval.llm.base import BaseChatClient

T = TypeVar("T")
KEY_ENV = "AGENTEVAL_TEST_LLM_KEY"
KEY = "sk-test-Zq8xLw3RkP0vN7mT2yB5cH9dJ4fG6sA1"
PRICES = {
    "fake-model": {
        "input_per_mtok": 2.0,
        "output_per_mtok": 10.0,
        "cache_read_per_mtok": 0.5,
        "cache_write_per_mtok": 4.0,
    }
}
WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather for a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


class Sleeps:
    """Records back-off delays instead of sleeping."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture(params=["openai", "anthropic"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


ServerFactory = Callable[..., FakeLLMServer]


@pytest.fixture
def make_server(protocol: str) -> Iterator[ServerFactory]:
    started: list[FakeLLMServer] = []

    def factory(*script: Reply | Raw, **kwargs: Any) -> FakeLLMServer:
        cls = OpenAIServer if protocol == "openai" else AnthropicServer
        server = cls(script, **kwargs).start()
        started.append(server)
        return server

    yield factory
    for server in started:
        server.stop()


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def endpoint_for(server: FakeLLMServer, protocol: str, **kwargs: Any) -> Endpoint:
    fields = {"model": "fake-model", "base_url": server.base_url, "protocol": protocol, **kwargs}
    return Endpoint.model_validate(fields)


def client_for(
    server: FakeLLMServer,
    protocol: str,
    *,
    sleeps: Sleeps | None = None,
    max_attempts: int = 4,
    endpoint_kwargs: dict[str, Any] | None = None,
    **kwargs: Any,
) -> BaseChatClient:
    policy = RetryPolicy(max_attempts=max_attempts, backoff_base=0.2, sleep=sleeps or Sleeps())
    ep = endpoint_for(server, protocol, **(endpoint_kwargs or {}))
    return make_client(ep, retry_policy=policy, limits=EndpointLimits(), **kwargs)


async def ask(client: BaseChatClient, text: str = "hello", **kwargs: Any) -> Completion:
    try:
        return await client.complete(
            [{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}],
            **kwargs,
        )
    finally:
        await client.aclose()


def quota_fault(protocol: str) -> Raw:
    if protocol == "openai":
        return openai_faults.quota_exhausted()
    return anthropic_faults.quota_exhausted()


def test_plain_reply(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(Reply(text="Hi there"))
    completion = run(ask(client_for(server, protocol)))
    assert completion.text == "Hi there"
    assert completion.tool_calls == []
    assert completion.finish_reason == "stop"
    assert completion.model == "fake-model"
    assert completion.cached is False and completion.attempts == 1
    body = server.requests[0].json
    if protocol == "openai":
        assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    else:
        assert body["system"] == "Be brief."
        assert body["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "hello"}]}
        ]
        assert "anthropic-version" in server.requests[0].headers


def test_tool_call_round_trip(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(
        Reply(text="", tool_calls=[Call("get_weather", {"city": "Oslo"}, id="call_1")]),
        Reply(text="It is sunny in Oslo."),
    )

    async def scenario() -> tuple[Completion, Completion]:
        client = client_for(server, protocol)
        history: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
        first = await client.complete(history, tools=[WEATHER])
        history.append(first.to_message())
        for call in first.tool_calls:
            history.append(ToolMessage(tool_call_id=call.id, content="sunny, 21C"))
        second = await client.complete(history, tools=[WEATHER])
        await client.aclose()
        return first, second

    first, second = run(scenario())
    assert first.finish_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("call_1", "get_weather", {"city": "Oslo"})
    ]
    assert second.text == "It is sunny in Oslo."
    sent_tools = server.requests[0].json["tools"]
    follow_up = server.requests[1].json["messages"]
    if protocol == "openai":
        assert sent_tools[0]["function"]["name"] == "get_weather"
        assert sent_tools[0]["function"]["parameters"] == WEATHER.parameters
        assistant, tool = follow_up[1], follow_up[2]
        assert assistant["tool_calls"][0]["id"] == "call_1"
        assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"city": "Oslo"}
        assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21C"}
    else:
        assert sent_tools[0]["input_schema"] == WEATHER.parameters
        assistant, user = follow_up[1], follow_up[2]
        assert assistant["content"] == [
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Oslo"}}
        ]
        assert user == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "sunny, 21C"}],
        }


def test_usage_and_cost_from_provider(make_server: ServerFactory, protocol: str) -> None:
    # OpenAI's wire format has no cache-write count, so only Anthropic reports one.
    cache_write = 0 if protocol == "openai" else 100
    usage = {"input": 1000, "output": 500, "cache_read": 200, "cache_write": cache_write}
    server = make_server(Reply(text="x", usage=usage))
    completion = run(ask(client_for(server, protocol, prices=PRICES)))
    assert completion.usage is not None
    assert completion.usage.input_tokens == 1000
    assert completion.usage.output_tokens == 500
    assert completion.usage.cache_read_tokens == 200
    assert completion.usage.cache_write_tokens == cache_write
    expected = (1000 * 2.0 + 500 * 10.0 + 200 * 0.5 + cache_write * 4.0) / 1e6
    assert completion.cost_usd == pytest.approx(expected)
    assert completion.cost_source == "harness_counts"


@pytest.mark.parametrize("usage", [None, {"input": 0, "output": 0}])
def test_no_usage_means_no_cost(
    make_server: ServerFactory, protocol: str, usage: dict[str, int] | None
) -> None:
    server = make_server(Reply(text="x", usage=usage))
    completion = run(ask(client_for(server, protocol, prices=PRICES)))
    assert completion.usage is None
    assert completion.cost_usd is None
    assert completion.cost_source is None


def test_estimated_cost_only_when_requested(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(Reply(text="x" * 40, usage=None))
    client = client_for(server, protocol, prices=PRICES, estimate_missing_usage=True)
    completion = run(ask(client))
    assert completion.usage is None
    assert completion.estimated_usage is not None
    assert completion.estimated_usage.output_tokens == 10
    assert completion.cost_source == "estimated"
    assert completion.cost_usd is not None and completion.cost_usd > 0


def test_unknown_price_means_no_cost(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(Reply(text="x"))
    completion = run(ask(client_for(server, protocol, prices={"other": PRICES["fake-model"]})))
    assert completion.usage is not None
    assert completion.cost_usd is None and completion.cost_source is None


def test_rate_limit_honours_retry_after(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(rate_limited("7"), Reply(text="after the wait"))
    sleeps = Sleeps()
    completion = run(ask(client_for(server, protocol, sleeps=sleeps)))
    assert completion.text == "after the wait"
    assert completion.attempts == 2
    assert server.request_count == 2
    assert sleeps.delays == [7.0]


def test_server_errors_retried_then_success(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(server_error(500), server_error(503), Reply(text="finally"))
    sleeps = Sleeps()
    completion = run(ask(client_for(server, protocol, sleeps=sleeps)))
    assert completion.text == "finally"
    assert completion.attempts == 3 and server.request_count == 3
    # Jittered exponential back-off: attempt n waits between half and all of 0.2 * 2**(n-1).
    assert 0.1 <= sleeps.delays[0] <= 0.2
    assert 0.2 <= sleeps.delays[1] <= 0.4


def test_retries_exhausted(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(*[server_error() for _ in range(5)])
    with pytest.raises(TransientError) as info:
        run(ask(client_for(server, protocol, max_attempts=3)))
    assert info.value.attempts == 3
    assert info.value.status == 500
    assert server.request_count == 3


def test_quota_exhausted_is_not_retried(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(quota_fault(protocol), Reply(text="never reached"))
    sleeps = Sleeps()
    with pytest.raises(QuotaExhausted) as info:
        run(ask(client_for(server, protocol, sleeps=sleeps)))
    assert info.value.reason == "quota"
    assert server.request_count == 1
    assert sleeps.delays == []


def test_rejected_credential_is_not_retried(
    make_server: ServerFactory, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "wrong-key-0123456789")
    server = make_server(api_key=KEY)
    client = client_for(server, protocol, endpoint_kwargs={"api_key_env": KEY_ENV})
    with pytest.raises(QuotaExhausted) as info:
        run(ask(client))
    assert info.value.reason == "credential"
    assert info.value.status == 401
    assert server.request_count == 1


def test_missing_key_variable_fails_before_any_request(
    make_server: ServerFactory, protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    server = make_server()
    client = client_for(server, protocol, endpoint_kwargs={"api_key_env": KEY_ENV})
    with pytest.raises(QuotaExhausted) as info:
        run(ask(client))
    assert info.value.reason == "credential"
    assert KEY_ENV in str(info.value)
    assert server.request_count == 0


def test_bad_request_is_not_retried(make_server: ServerFactory, protocol: str) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad field"}}
    server = make_server(Raw(400, body), Reply())
    with pytest.raises(BadRequest) as info:
        run(ask(client_for(server, protocol)))
    assert "bad field" in str(info.value)
    assert server.request_count == 1


def test_timeout_and_malformed_body_are_retried(make_server: ServerFactory, protocol: str) -> None:
    server = make_server(Reply(text="too late", delay=2.0), malformed_body(), Reply(text="ok"))
    completion = run(ask(client_for(server, protocol, timeout=0.3)))
    assert completion.text == "ok"
    assert completion.attempts == 3


def test_malformed_json_text_is_returned_verbatim(
    make_server: ServerFactory, protocol: str
) -> None:
    server = make_server(malformed_json_text())
    completion = run(ask(client_for(server, protocol)))
    assert completion.text.startswith('{"verdict": "A"')
    with pytest.raises(ValueError):
        json.loads(completion.text)


def test_params_and_response_format_reach_the_wire(
    make_server: ServerFactory, protocol: str
) -> None:
    server = make_server()
    schema = {"type": "object", "properties": {"verdict": {"enum": ["A", "B", "C"]}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema}}
    params = {"temperature": 0.0, "top_p": 0.9, "max_tokens": 256, "seed": 7}
    client = client_for(server, protocol, endpoint_kwargs={"params": params})
    run(ask(client, response_format=response_format))
    body = server.requests[0].json
    assert {k: body[k] for k in params} == params
    if protocol == "openai":
        assert body["response_format"] == response_format
    else:
        assert body["output_config"] == {"format": {"type": "json_schema", "schema": schema}}


def test_cache_hit_makes_no_request(
    make_server: ServerFactory, protocol: str, tmp_path: Path
) -> None:
    server = make_server(Reply(text="first"), Reply(text="second"), Reply(text="third"))
    cache_dir = tmp_path / "cache"
    first = run(ask(client_for(server, protocol, cache_dir=cache_dir)))
    rerun = run(ask(client_for(server, protocol, cache_dir=cache_dir)))
    assert server.request_count == 1
    assert rerun.cached is True and first.cached is False
    assert rerun.model_dump(exclude={"cached"}) == first.model_dump(exclude={"cached"})

    repeat = run(ask(client_for(server, protocol, cache_dir=cache_dir), iteration=1))
    assert server.request_count == 2 and repeat.text == "second" and not repeat.cached
    again = run(ask(client_for(server, protocol, cache_dir=cache_dir), iteration=1))
    assert server.request_count == 2 and again.text == "second" and again.cached

    changed = run(ask(client_for(server, protocol, cache_dir=cache_dir), text="different"))
    assert server.request_count == 3 and changed.text == "third"


def test_cache_hit_is_priced_with_current_table(
    make_server: ServerFactory, protocol: str, tmp_path: Path
) -> None:
    server = make_server(Reply(text="x", usage={"input": 1000, "output": 0}))
    first = run(ask(client_for(server, protocol, cache_dir=tmp_path)))
    assert first.cost_usd is None
    priced = run(ask(client_for(server, protocol, cache_dir=tmp_path, prices=PRICES)))
    assert priced.cached and server.request_count == 1
    assert priced.cost_usd == pytest.approx(0.002) and priced.cost_source == "harness_counts"


def test_unreachable_server_is_transient(make_server: ServerFactory, protocol: str) -> None:
    server = make_server()
    client = client_for(server, protocol, max_attempts=2)
    server.stop()  # nothing listens on the port any more
    with pytest.raises(TransientError) as info:
        run(ask(client))
    assert info.value.attempts == 2 and "connection failed" in str(info.value)


def test_concurrency_bound_per_endpoint(make_server: ServerFactory, protocol: str) -> None:
    server = make_server()
    server.gate = threading.Event()
    limits = EndpointLimits()
    policy = RetryPolicy(max_attempts=1)
    ep = endpoint_for(server, protocol)

    async def scenario() -> list[Completion]:
        # Two clients on the same endpoint share one bound.
        clients = [make_client(ep, concurrency=3, limits=limits, retry_policy=policy) for _ in "ab"]
        tasks = [
            asyncio.create_task(clients[i % 2].complete([{"role": "user", "content": str(i)}]))
            for i in range(8)
        ]
        while server.in_flight < 3 and not any(t.done() for t in tasks):
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)  # give any excess request the chance to arrive
        held = server.in_flight
        assert server.gate is not None
        server.gate.set()
        results = await asyncio.gather(*tasks)
        for client in clients:
            await client.aclose()
        assert held == 3
        return results

    results = run(scenario())
    assert len(results) == 8
    assert server.request_count == 8
    assert server.max_in_flight == 3


def test_key_travels_only_in_the_auth_header(
    make_server: ServerFactory, protocol: str, api_key: str, tmp_path: Path
) -> None:
    echo = {"error": {"type": "authentication_error", "message": f"key {api_key} is revoked"}}
    server = make_server(
        Reply(tool_calls=[Call("get_weather", {"city": "Oslo"})], text=""),
        server_error(),
        server_error(),
        Raw(401, echo),
        api_key=api_key,
    )
    cache_dir = tmp_path / "cache"
    kwargs: dict[str, Any] = {"endpoint_kwargs": {"api_key_env": KEY_ENV}, "cache_dir": cache_dir}
    completion = run(ask(client_for(server, protocol, **kwargs), tools=[WEATHER]))
    with pytest.raises(TransientError) as transient:
        run(ask(client_for(server, protocol, max_attempts=2, **kwargs), text="again"))
    with pytest.raises(QuotaExhausted) as rejected:
        run(ask(client_for(server, protocol, **kwargs), text="third"))

    for request in server.requests:
        auth = request.headers.get("x-api-key") or request.headers.get("authorization", "")
        assert auth.endswith(api_key)
        others = {
            k: v for k, v in request.headers.items() if k not in ("x-api-key", "authorization")
        }
        assert api_key not in json.dumps(others)
        assert api_key not in request.body and api_key not in request.path
    assert "revoked" in str(rejected.value)
    for error in (transient.value, rejected.value):
        assert api_key not in str(error) and api_key not in repr(error)
        assert api_key not in repr(error.args) and api_key not in repr(vars(error))
    assert api_key not in completion.model_dump_json() and api_key not in repr(completion)
    ep = endpoint_for(server, protocol, api_key_env=KEY_ENV)
    assert api_key not in ep.model_dump_json() + repr(ep) + json.dumps(ep.describe())
    files = [p for p in cache_dir.rglob("*") if p.is_file()]
    assert files, "the successful call should have been cached"
    for path in files:
        assert api_key.encode() not in path.read_bytes()


def test_anthropic_sdk_is_imported_lazily() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from agenteval.llm import Endpoint, make_client\n"
        "make_client(Endpoint(model='m', protocol='anthropic'))\n"
        "print('anthropic' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_fake_server_context_manager_and_counters() -> None:
    with OpenAIServer([Reply(text="one")]) as server:
        completion = run(ask(make_client(Endpoint(model="m", base_url=server.base_url))))
        assert completion.text == "one"
        assert server.request_count == 1 and server.max_in_flight == 1
    with AnthropicServer(reply_fn=lambda body: Reply(text=f"echo {body['model']}")) as server:
        ep = Endpoint(model="m", base_url=server.base_url, protocol="anthropic")
        completion = run(ask(make_client(ep)))
        assert completion.text == "echo m"
