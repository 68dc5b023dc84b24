"""The model gateway (agenteval.benchmarks.tasks.gateway) against loopback upstreams.

The upstreams are the project's fake OpenAI / Anthropic servers on 127.0.0.1; they record
every header and body they receive, so the tests see exactly what reached the "provider".
The agent side is a plain HTTP client sending what a careless or hostile agent would: its
own credential, system-role entries inside messages, streamed requests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from servers import AnthropicServer, OpenAIServer, Raw, Reply
from typer.testing import CliRunner

from agenteval.benchmarks.tasks.gateway import (
    DUMMY_KEY,
    GatewayConfigError,
    Ledger,
    Upstream,
    UsageReader,
    agent_endpoint,
    gateway_for_run,
    ledger_at,
    running_gateway,
)
from agenteval.cli import app

REAL_KEY = "sk-gateway-test-0123456789abcdefREALKEY"
KEY_ENV = "GATEWAY_TEST_PROVIDER_KEY"
AGENT_CREDENTIAL = "sk-ant-oat01-claude-code-own-subscription-token"


@pytest.fixture
def key_env(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    return KEY_ENV


def _upstream(base_url: str) -> Upstream:
    return Upstream.from_params({"target": {"base_url": base_url, "api_key_env": KEY_ENV}})


@pytest.fixture
def openai_up(key_env: str) -> Iterator[OpenAIServer]:
    with OpenAIServer(api_key=REAL_KEY) as server:
        yield server


@pytest.fixture
def anthropic_up(key_env: str) -> Iterator[AnthropicServer]:
    with AnthropicServer(api_key=REAL_KEY) as server:
        yield server


def _no_agent_credential(headers: dict[str, str]) -> None:
    for value in headers.values():
        assert AGENT_CREDENTIAL not in value
        assert DUMMY_KEY not in value


def test_openai_call_carries_the_real_key_upstream_only(
    openai_up: OpenAIServer, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "gateway.jsonl")
    with running_gateway(_upstream(openai_up.base_url), ledger) as gw:
        base, key = agent_endpoint(gw.url, "openai")
        assert key == DUMMY_KEY and REAL_KEY not in base
        body = {
            "model": "m",
            "messages": [
                {"role": "system", "content": "you are an agent"},
                {"role": "user", "content": "hi"},
            ],
        }
        answer = httpx.post(
            f"{base}/chat/completions",
            json=body,
            headers={"authorization": f"Bearer {AGENT_CREDENTIAL}", "cookie": "s=1"},
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"] == "ok"
    (seen,) = openai_up.requests
    assert seen.headers["authorization"] == f"Bearer {REAL_KEY}"
    assert "cookie" not in seen.headers
    _no_agent_credential(seen.headers)
    # On the OpenAI route the system entry is the format's own system prompt: kept.
    assert [m["role"] for m in seen.json["messages"]] == ["system", "user"]
    (call,) = ledger.calls
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (12, 7)


def test_anthropic_credential_replaced_and_system_entries_sent_as_user(
    anthropic_up: AnthropicServer, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "gateway.jsonl")
    anthropic_up.push(Reply(usage={"input": 40, "output": 5, "cache_read": 3}))
    messages = [
        {"role": "user", "content": "fix the bug"},
        {"role": "system", "content": "cwd: /work/copy, git: clean"},
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
    ]
    with running_gateway(_upstream(anthropic_up.base_url), ledger) as gw:
        base, _ = agent_endpoint(gw.url, "anthropic")
        answer = httpx.post(
            f"{base}/v1/messages",
            json={"model": "m", "max_tokens": 64, "system": "top", "messages": messages},
            headers={
                "x-api-key": AGENT_CREDENTIAL,
                "authorization": f"Bearer {AGENT_CREDENTIAL}",
                "anthropic-version": "2023-06-01",
            },
        )
    assert answer.status_code == 200, answer.text
    (seen,) = anthropic_up.requests
    assert seen.headers["x-api-key"] == REAL_KEY
    assert "authorization" not in seen.headers
    assert seen.headers["anthropic-version"] == "2023-06-01"
    _no_agent_credential(seen.headers)
    sent = seen.json["messages"]
    assert [m["role"] for m in sent] == ["user", "user", "user"]
    assert sent[1]["content"] == "cwd: /work/copy, git: clean"  # rewritten in place, kept
    assert seen.json["system"] == "top"
    (call,) = ledger.calls
    assert call.usage is not None
    assert (call.usage.input_tokens, call.usage.output_tokens) == (40, 5)
    assert call.usage.cache_read_tokens == 3


OPENAI_SSE = (
    'data: {"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}\n\n'
    'data: {"id":"c1","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":"stop"}]}\n\n'
    'data: {"id":"c1","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":4,'
    '"prompt_tokens_details":{"cached_tokens":6}}}\n\n'
    "data: [DONE]\n\n"
)

ANTHROPIC_SSE = (
    "event: message_start\n"
    'data: {"type":"message_start","message":{"id":"m1","role":"assistant","content":[],'
    '"usage":{"input_tokens":30,"output_tokens":1,"cache_creation_input_tokens":2}}}\n\n'
    "event: content_block_delta\n"
    'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n'
    "event: message_delta\n"
    'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    '"usage":{"output_tokens":9}}\n\n'
    "event: message_stop\n"
    'data: {"type":"message_stop"}\n\n'
)


def _sse(text: str) -> Raw:
    return Raw(200, text, {"content-type": "text/event-stream"})


def test_streams_pass_through_intact_and_are_counted(
    openai_up: OpenAIServer, anthropic_up: AnthropicServer, tmp_path: Path
) -> None:
    openai_up.push(_sse(OPENAI_SSE))
    anthropic_up.push(_sse(ANTHROPIC_SSE))
    ledger = Ledger(tmp_path / "gateway.jsonl")
    request = {"model": "m", "max_tokens": 9, "stream": True}
    msgs = [{"role": "user", "content": "hi"}]
    received = {}
    for name, server, path in (
        ("openai", openai_up, "/v1/chat/completions"),
        ("anthropic", anthropic_up, "/v1/messages"),
    ):
        with running_gateway(_upstream(server.base_url), ledger) as gw:
            headers = {"anthropic-version": "2023-06-01", "x-api-key": AGENT_CREDENTIAL}
            with httpx.stream(
                "POST", gw.url + path, json={**request, "messages": msgs}, headers=headers
            ) as reply:
                assert reply.headers["content-type"].startswith("text/event-stream")
                received[name] = b"".join(reply.iter_raw())
    assert received["openai"] == OPENAI_SSE.encode()
    assert received["anthropic"] == ANTHROPIC_SSE.encode()
    first, second = ledger.calls
    assert first.streamed and second.streamed
    assert first.usage is not None and second.usage is not None
    assert (first.usage.input_tokens, first.usage.cache_read_tokens) == (15, 6)
    assert first.usage.output_tokens == 4
    assert (second.usage.input_tokens, second.usage.output_tokens) == (30, 9)
    assert second.usage.cache_write_tokens == 2
    total = ledger.total()
    assert (total.input_tokens, total.output_tokens) == (45, 13)


def test_sse_read_across_arbitrary_chunk_boundaries() -> None:
    data = ANTHROPIC_SSE.encode()
    for size in (1, 7, 64):
        reader = UsageReader("/v1/messages", streamed=True)
        for start in range(0, len(data), size):
            reader.feed(data[start : start + size])
        usage = reader.finish()
        assert usage is not None and (usage.input_tokens, usage.output_tokens) == (30, 9)


def test_no_usage_or_an_error_is_uncounted_never_zero(
    openai_up: OpenAIServer, tmp_path: Path
) -> None:
    openai_up.push(Reply(usage=None), Raw(429, {"error": {"message": "slow down"}}))
    ledger = Ledger(tmp_path / "gateway.jsonl")
    with running_gateway(_upstream(openai_up.base_url), ledger) as gw:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        assert httpx.post(f"{gw.url}/v1/chat/completions", json=body).status_code == 200
        limited = httpx.post(f"{gw.url}/v1/chat/completions", json=body)
    assert limited.status_code == 429 and "slow down" in limited.text
    assert ledger.uncounted() == 2 and ledger.total().is_empty()
    records = [json.loads(line) for line in ledger.path.read_text().splitlines()]  # type: ignore[union-attr]
    assert [r["counted"] for r in records] == [False, False]
    assert [r["status"] for r in records] == [200, 429]


def test_the_key_is_in_no_file_the_gateway_writes_nor_in_its_replies(
    anthropic_up: AnthropicServer, tmp_path: Path
) -> None:
    ledger = Ledger(tmp_path / "run" / "gateway.jsonl")
    anthropic_up.push(Raw(401, {"type": "error", "error": {"message": "bad key"}}))
    replies = []
    with running_gateway(_upstream(anthropic_up.base_url), ledger) as gw:
        body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
        for _ in range(2):
            replies.append(
                httpx.post(
                    f"{gw.url}/v1/messages", json=body, headers={"anthropic-version": "1"}
                ).text
            )
    # an unreachable upstream: the gateway's own error reply
    with running_gateway(_upstream("http://127.0.0.1:9"), ledger) as gw:
        unreachable = httpx.post(f"{gw.url}/v1/messages", json=body)
    assert unreachable.status_code == 502
    replies.append(unreachable.text)
    assert len(ledger.calls) == 3
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert written, "the ledger was written"
    for path in written:
        assert REAL_KEY not in path.read_text(errors="replace"), path
    for text in replies:
        assert REAL_KEY not in text
    assert REAL_KEY not in repr(_upstream(anthropic_up.base_url))


def test_bad_upstream_config_is_refused_naming_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(GatewayConfigError, match=r"target\.base_url"):
        Upstream.from_params({"target": {"api_key_env": KEY_ENV}})
    with pytest.raises(GatewayConfigError, match=KEY_ENV):
        _upstream("http://127.0.0.1:9/v1")
    monkeypatch.setenv(KEY_ENV, REAL_KEY)
    assert _upstream("https://example.invalid/api/v1").root == "https://example.invalid/api"


def test_cli_refuses_a_bad_port_and_a_missing_upstream(monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    bad_port = runner.invoke(app, ["tasks", "gateway", "--port", "70000"])
    assert bad_port.exit_code == 2 and "--port" in bad_port.output
    monkeypatch.delenv(KEY_ENV, raising=False)
    no_upstream = runner.invoke(app, ["tasks", "gateway", "--port", "8799"])
    assert no_upstream.exit_code == 2 and "target.base_url" in no_upstream.output
    args = ["--set", "target.base_url=http://127.0.0.1:9", "--set", f"target.api_key_env={KEY_ENV}"]
    no_key = runner.invoke(app, ["tasks", "gateway", "--port", "8799", *args])
    assert no_key.exit_code == 2 and KEY_ENV in no_key.output
    assert "Traceback" not in no_key.output


# -- wired into a tasks run ----------------------------------------------------------------
def _run_params(harness: str, base_url: str, **tasks: object) -> dict[str, object]:
    target = {"model": "m-open", "base_url": base_url, "api_key_env": KEY_ENV}
    prices = {"m-open": {"input_per_mtok": 1.0, "output_per_mtok": 2.0, "as_of": "2026-01-01"}}
    return {
        "target": {**target, "protocol": "anthropic"},
        "tasks": {"harness": harness, **tasks},
        "run": {"prices": prices, "cache": False},
    }


def test_a_run_starts_its_own_gateway_unless_one_is_named(key_env: str, tmp_path: Path) -> None:
    params = _run_params("chat", "http://127.0.0.1:9")
    with gateway_for_run(params, tmp_path / "gateway.jsonl") as routed:
        url = routed["tasks"]["gateway_url"]  # type: ignore[index]
        assert url.startswith("http://127.0.0.1:") and ledger_at(url) is not None
    assert ledger_at(url) is None  # stopped with the run
    named = _run_params("chat", "http://127.0.0.1:9", gateway_url="http://127.0.0.1:8000")
    with gateway_for_run(named, tmp_path / "gateway.jsonl") as routed:
        assert routed is named
    with gateway_for_run(_run_params("scripted", ""), tmp_path / "g.jsonl") as routed:
        assert "gateway_url" not in routed["tasks"]  # type: ignore[operator]


def test_chat_harness_reaches_the_model_through_the_gateway_with_no_key(
    key_env: str, tmp_path: Path
) -> None:
    from agenteval.benchmarks.tasks.chat import ChatHarness

    direct = ChatHarness(_run_params("chat", "http://127.0.0.1:9"), tmp_path)
    routed = ChatHarness(
        _run_params("chat", "http://127.0.0.1:9", gateway_url="http://127.0.0.1:7777"), tmp_path
    )
    endpoint = routed.config.endpoint
    assert endpoint.effective_base_url == "http://127.0.0.1:7777"
    assert endpoint.api_key_env is None  # the client in this process sends no key at all
    assert routed.key_env_names() == [KEY_ENV]  # still scrubbed from every record
    # The same agent on the same model: the route does not change its identity.
    assert routed.participant.config_digest == direct.participant.config_digest


def test_claude_code_gets_the_gateway_and_its_counts_are_harness_counts(
    anthropic_up: AnthropicServer, tmp_path: Path
) -> None:
    from agenteval.benchmarks.tasks.claude_code import ClaudeCodeHarness

    anthropic_up.push(Reply(usage={"input": 1000, "output": 500}))
    params = _run_params("claude-code", anthropic_up.base_url)
    with gateway_for_run(params, tmp_path / "gateway.jsonl") as routed:
        harness = ClaudeCodeHarness(routed)
        env = harness.routed_env({"PATH": "/usr/bin"}, "t1-r1-abc")
        assert env["ANTHROPIC_BASE_URL"].endswith("/t/t1-r1-abc")
        assert env["ANTHROPIC_AUTH_TOKEN"] == DUMMY_KEY and REAL_KEY not in str(env)
        body = {"model": "m-open", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]}
        headers = {"anthropic-version": "2023-06-01", "x-api-key": AGENT_CREDENTIAL}
        httpx.post(env["ANTHROPIC_BASE_URL"] + "/v1/messages", json=body, headers=headers)
        assert harness.gateway_usage("another-attempt") is None
        usage = harness.gateway_usage("t1-r1-abc")
    assert anthropic_up.requests[0].headers["x-api-key"] == REAL_KEY
    assert usage is not None and usage.cost_source == "harness_counts"
    assert (usage.model_calls, usage.input_tokens, usage.output_tokens) == (1, 1000, 500)
    assert usage.cost_usd == pytest.approx(0.002)
    assert "gateway" in (usage.cost_provenance or "")


def test_the_reply_cache_is_keyed_by_the_model_not_the_gateways_port(
    openai_up: OpenAIServer, tmp_path: Path
) -> None:
    """Two runs start two gateways on two random ports: the second is served from the
    cache the first wrote (the upstream sees one request), never asked again."""
    import asyncio

    from agenteval.benchmarks.tasks.chat import ChatHarness

    openai_up.push(Reply(text="first"), Reply(text="second"))
    params = _run_params("chat", openai_up.base_url)
    params["target"] = {**params["target"], "protocol": "openai"}  # type: ignore[dict-item]
    params["run"] = {**params["run"], "cache": True, "cache_dir": str(tmp_path / "cache")}  # type: ignore[dict-item]

    async def ask() -> str:
        client = await ChatHarness(routed, tmp_path).config.client()
        return (await client.complete([{"role": "user", "content": "hi"}])).text

    urls = []
    for _ in range(2):
        with gateway_for_run(params, tmp_path / "gateway.jsonl") as routed:
            urls.append(routed["tasks"]["gateway_url"])  # type: ignore[index]
            assert asyncio.run(ask()) == "first"
    assert urls[0] != urls[1] and len(openai_up.requests) == 1
