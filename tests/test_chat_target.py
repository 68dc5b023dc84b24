"""Target `chat` against fake model servers on 127.0.0.1: tools, caps, context mode, setup."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from servers import AnthropicServer, Call, FakeLLMServer, OpenAIServer, Reply

from agenteval.llm.config import sum_usage
from agenteval.params import DEFAULTS, deep_merge
from agenteval.schema.scenario import IndexDocument, Scenario
from agenteval.targets.base import AgentReply, SessionContext, SetupFailed, make_target
from agenteval.targets.chat import ChatSession, ChatTarget

ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
QUESTION = "What was Harbor Lantern's net revenue for the second quarter of fiscal 2026?"
PRICES = {"agent-model": {"input_per_mtok": 1.0, "output_per_mtok": 2.0}}


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def scenario(name: str = "rag_quality/quarterly_revenue_lookup.yaml") -> Scenario:
    raw = yaml.safe_load((ROOT / "eval/scenarios" / name).read_text(encoding="utf-8"))
    return Scenario.model_validate(raw)


def chat_params(server: FakeLLMServer, protocol: str = "openai", **target: Any) -> dict[str, Any]:
    section = {
        "kind": "chat",
        "model": "agent-model",
        "protocol": protocol,
        "base_url": server.base_url,
        **target,
    }
    return deep_merge(DEFAULTS, {"target": section, "run": {"cache_dir": None, "prices": PRICES}})


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


async def converse(
    params: dict[str, Any],
    messages: list[str],
    case: Scenario | None = None,
    iteration: int = 0,
) -> tuple[ChatSession, list[AgentReply]]:
    target = make_target(params, ROOT)
    assert isinstance(target, ChatTarget)
    case = case or scenario()
    session = await target.open_session(case, SessionContext(ROOT, 0, iteration))
    replies = []
    try:
        await session.setup(case.setup.index_documents)
        for message in messages:
            replies.append(await session.send(message))
    finally:
        await session.close()
    return session, replies


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_native_tool_round_trip_is_recorded(protocol: str) -> None:
    cls = OpenAIServer if protocol == "openai" else AnthropicServer
    script = [
        Reply(
            text="",
            tool_calls=[Call("query_documents", {"query": "net revenue second quarter"})],
            usage={"input": 100, "output": 10},
        ),
        Reply(text="Net revenue was $8.6 million.", usage={"input": 300, "output": 20}),
    ]
    with cls(script) as server:
        _, (reply,) = run(converse(chat_params(server, protocol), [QUESTION]))
        requests = [r.json for r in server.requests]
    assert reply.response == "Net revenue was $8.6 million."
    (call,) = reply.tool_calls
    assert call.name == "query_documents" and call.ok and call.latency_ms is not None
    assert call.arguments == {"query": "net revenue second quarter"}
    assert any("8.6 million" in r["text"] for r in call.result["results"])
    assert reply.usage is not None
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (400, 30)
    assert reply.usage.cost_usd == pytest.approx((400 * 1.0 + 30 * 2.0) / 1e6)
    assert reply.usage.cost_source == "harness_counts"
    assert len(requests) == 2
    names = {t.get("name") or t.get("function", {}).get("name") for t in requests[0]["tools"]}
    assert names == {"list_documents", "index_document", "query_documents", "read_document"}
    second = json.dumps(requests[1])
    assert "harbor_lantern_q2_report.md" in second  # the indexed-documents note
    assert "8.6 million" in second  # the tool result went back to the model


def test_tool_step_cap_ends_the_turn_and_is_recorded(openai_server: OpenAIServer) -> None:
    loop = Reply(text="still looking", tool_calls=[Call("list_documents", {})])
    openai_server.push(loop, loop, loop, Reply(text="Done."))
    params = chat_params(openai_server, max_tool_steps=2)
    _, (capped, after) = run(converse(params, ["list everything", "and now?"]))
    assert capped.response == "still looking"
    assert [c.ok for c in capped.tool_calls] == [True, True, False]
    assert "step limit of 2" in (capped.tool_calls[-1].error or "")
    assert after.response == "Done." and after.tool_calls == []
    # The skipped call was answered in the history, so the next request stays well-formed.
    last = openai_server.requests[-1].json["messages"]
    tool_messages = [m for m in last if m["role"] == "tool"]
    assert len(tool_messages) == 3 and "step limit" in tool_messages[-1]["content"]
    assert openai_server.request_count == 4


def test_bad_tool_calls_are_recorded_not_run(openai_server: OpenAIServer) -> None:
    openai_server.push(
        Reply(text="", tool_calls=[Call("query_documents", "{not json"), Call("rm_rf", {})]),
        Reply(text="Sorry."),
    )
    _, (reply,) = run(converse(chat_params(openai_server), [QUESTION]))
    bad_args, unknown = reply.tool_calls
    assert not bad_args.ok and "not a JSON object" in (bad_args.error or "")
    assert not unknown.ok and "unknown tool" in (unknown.error or "")


def test_context_mode_puts_passages_in_the_prompt(openai_server: OpenAIServer) -> None:
    openai_server.push(Reply(text="It was $8.6 million."))
    params = chat_params(openai_server, tool_mode="context")
    _, (reply,) = run(converse(params, [QUESTION]))
    (request,) = [r.json for r in openai_server.requests]
    assert "tools" not in request
    user = request["messages"][-1]["content"]
    assert QUESTION in user and "$8.6 million" in user
    assert "cannot call tools" in request["messages"][0]["content"]
    (call,) = reply.tool_calls
    assert call.name == "query_documents" and call.arguments["query"] == QUESTION


def test_zero_chunks_is_a_setup_error_unless_adversarial(openai_server: OpenAIServer) -> None:
    empty = [IndexDocument(path="eval/corpus/adversarial/empty.txt")]
    case = scenario().model_copy(update={"setup": scenario().setup.model_copy()})
    case.setup.index_documents = empty
    with pytest.raises(SetupFailed) as failure:
        run(converse(chat_params(openai_server), [QUESTION], case))
    assert failure.value.status == "SETUP_ERROR"
    assert failure.value.calls[0].result["chunk_count"] == 0
    assert openai_server.request_count == 0
    adversarial = case.model_copy(update={"category": "adversarial"})
    _, (reply,) = run(converse(chat_params(openai_server), ["hi"], adversarial))
    assert reply.response == "ok"


def test_conversation_carries_prior_turns(openai_server: OpenAIServer) -> None:
    openai_server.push(Reply(text="It was $8.6 million."), Reply(text="41.5%."))
    run(converse(chat_params(openai_server), [QUESTION, "And the gross margin?"]))
    second = openai_server.requests[1].json["messages"]
    contents = [m.get("content") for m in second]
    assert QUESTION in contents and "It was $8.6 million." in contents
    assert contents[-1] == "And the gross margin?"


def test_rerun_hits_cache_and_iterations_are_independent(
    openai_server: OpenAIServer, tmp_path: Path
) -> None:
    params = chat_params(openai_server)
    params["run"]["cache_dir"] = str(tmp_path / "cache")
    run(converse(params, [QUESTION]))
    assert openai_server.request_count == 1
    _, (again,) = run(converse(params, [QUESTION]))
    assert openai_server.request_count == 1 and again.response == "ok"
    run(converse(params, [QUESTION], iteration=1))
    assert openai_server.request_count == 2


def test_participant_names_the_model_never_the_key(
    openai_server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-test-Xq7pLm2Rk9Vn4Tb8Yc3Hd6Jf1Gs5Aw0Z"
    monkeypatch.setenv("CHAT_TEST_KEY", key)
    openai_server.api_key = key
    params = chat_params(openai_server, api_key_env="CHAT_TEST_KEY")
    params["target"]["params"] = {"temperature": 0.2, "top_k": 2, "chunk_size": 400}
    target = make_target(params, ROOT)
    assert target.participant.kind == "chat" and target.participant.model == "agent-model"
    assert target.participant.protocol == "openai"
    _, (reply,) = run(converse(params, [QUESTION]))
    assert reply.response == "ok"  # the key was sent: the server checks it
    body = openai_server.requests[0].json
    assert body["temperature"] == 0.2 and "top_k" not in body and "chunk_size" not in body
    assert key not in target.participant.model_dump_json()
    other = chat_params(openai_server, api_key_env="CHAT_TEST_KEY", tool_mode="context")
    assert make_target(other, ROOT).participant.config_digest != target.participant.config_digest


def test_usage_without_provider_counts_is_unknown_not_zero() -> None:
    from agenteval.llm import Completion

    usage = sum_usage([Completion(text="a", usage=None, cost_usd=None)])
    assert usage is not None and usage.cost_usd is None and usage.input_tokens is None
    assert sum_usage([]) is None


def test_bad_settings_are_refused(openai_server: OpenAIServer) -> None:
    with pytest.raises(ValueError, match="tool_mode"):
        ChatTarget(chat_params(openai_server, tool_mode="telepathy"), ROOT)
    params = chat_params(openai_server)
    del params["target"]["model"]
    with pytest.raises(ValueError, match=r"target\.model"):
        ChatTarget(params, ROOT)
