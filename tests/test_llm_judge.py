"""Judge `llm` against fake model servers, and one pipeline run with every role on a server."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import AnthropicServer, FakeLLMServer, OpenAIServer, Reply, malformed_json_text
from servers import openai_server as openai_faults

from agenteval.fileio import sha256_file
from agenteval.judges.base import make_judge
from agenteval.judges.llm import LLMJudge
from agenteval.layout import Layout
from agenteval.llm import QuotaExhausted
from agenteval.llm.prompts import PLACEHOLDER
from agenteval.params import DEFAULTS, deep_merge
from agenteval.pipeline import run_all
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn
from agenteval.schema.verdict import Verdict
from agenteval.scoring import DIMENSIONS, REASK_CAP, ScenarioInfo, ScoringRules, score_scenario
from agenteval.suite.build import build_suite

ROOT = Path(__file__).resolve().parents[1]
PROMPTS = ROOT / "eval/prompts"
KEY = "sk-test-Pw4nQx8Lr2Vt6Ym0Kc5Hb9Jd3Fs7Ga1Z"
TWO_TURNS = "quarterly_revenue_lookup"
ONE_TURN = "csv_cell_lookup"
RIGHT = {TWO_TURNS: ["Net revenue was $8.6 million.", "Gross margin was 41.5%."]}


@pytest.fixture(scope="module")
def suite() -> dict[str, SuiteItem]:
    params = deep_merge(DEFAULTS, {"suite": {"ids": [TWO_TURNS, ONE_TURN, "empty_file"]}})
    return {item.scenario.id: item for item in build_suite(params, ROOT).items}


def marks(
    correctness: float = 10.0, reason: str = "matches", reasked: bool = False, **other: Any
) -> str:
    scores = {d: {"reasoning": f"{d}: {reason}", "score": other.get(d, 9.0)} for d in DIMENSIONS}
    scores["correctness"]["score"] = correctness
    return json.dumps({"scores": scores, "total": 9.25, "reasked": reasked})


def overall(status: str = "PASS", cause: str | None = None) -> str:
    return json.dumps({"status": status, "root_cause": cause, "recommended_fix": None})


def is_scenario_request(body: dict[str, Any]) -> bool:
    return "# Scenario judge" in json.dumps(body)


def judge_fn(turn: Callable[[dict[str, Any]], str] = lambda _b: marks()) -> Any:
    def reply(body: dict[str, Any]) -> Reply:
        return Reply(text=overall() if is_scenario_request(body) else turn(body))

    return reply


def judge_params(server: FakeLLMServer, protocol: str = "openai", **judge: Any) -> dict[str, Any]:
    section = {
        "kind": "llm",
        "model": "judge-model",
        "protocol": protocol,
        "base_url": server.base_url,
        **judge,
    }
    return deep_merge(DEFAULTS, {"judge": section, "run": {"cache_dir": None}})


def transcript(
    item: SuiteItem,
    responses: list[str],
    *,
    status: str = "COMPLETED",
    faults: dict[int, str] | None = None,
) -> Transcript:
    query = ToolCall(name="query_documents", arguments={"query": "q"}, result={"results": []})
    turns = [
        TranscriptTurn(
            turn=t.turn,
            user_message=t.user_message or t.objective,
            response=text,
            tool_calls=[query],
            simulator_fault=(faults or {}).get(t.turn),
        )
        for t, text in zip(item.scenario.turns, responses, strict=False)
    ]
    return Transcript(
        scenario_id=item.scenario.id,
        scenario_digest=item.digest,
        status=status,
        target=Participant(kind="chat", model="agent-model"),
        simulator=Participant(kind="scripted"),
        turns=turns if status == "COMPLETED" else [],
    )


def grade(params: dict[str, Any], item: SuiteItem, said: Transcript) -> Verdict:
    judge = make_judge(params, ROOT)
    return asyncio.run(judge.judge(item, said))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply_fn=judge_fn()) as fake:
        yield fake


def test_valid_json_gives_a_full_llm_verdict(
    server: OpenAIServer, suite: dict[str, SuiteItem]
) -> None:
    item = suite[TWO_TURNS]
    verdict = grade(judge_params(server), item, transcript(item, RIGHT[TWO_TURNS]))
    assert verdict.status == "PASS" and verdict.error is None
    assert verdict.judge_attempts == 3 == server.request_count
    for turn in verdict.turns:
        # The first turn has nothing earlier to retain: context retention does not apply.
        scored = [d for d in DIMENSIONS if not (turn.turn == 1 and d == "context_retention")]
        assert set(turn.scores) == set(DIMENSIONS) and turn.judged_by == dict.fromkeys(
            scored, "llm"
        )
        assert turn.reported_score == 9.25 and turn.reasons["correctness"] == "correctness: matches"
    assert verdict.disagreements == []
    assert verdict.usage is not None and verdict.usage.input_tokens
    judge = verdict.judge
    assert (judge.kind, judge.model, judge.protocol) == ("llm", "judge-model", "openai")
    assert judge.details["prompts"] == {
        name: sha256_file(PROMPTS / name) for name in ("judge_turn.md", "judge_scenario.md")
    }
    schema = server.requests[0].json["response_format"]
    assert schema["type"] == "json_schema" and schema["json_schema"]["strict"] is True
    info = ScenarioInfo(item.scenario.id, item.scenario.category, None, 2)
    assert score_scenario(info, "COMPLETED", verdict, ScoringRules()).status == "PASS"


def test_a_reask_the_judge_reports_caps_context_retention_in_the_recompute(
    suite: dict[str, SuiteItem],
) -> None:
    """The model says the agent asked again (turn 2) yet scores context retention 9: the
    recompute caps it at the rubric's 4; the model's own score stays in the verdict."""
    item = suite[TWO_TURNS]
    with OpenAIServer(reply_fn=judge_fn(lambda _b: marks(reasked=True))) as server:
        verdict = grade(judge_params(server), item, transcript(item, RIGHT[TWO_TURNS]))
    assert [t.reasked for t in verdict.turns] == [None, True]  # nothing to re-ask on turn 1
    assert verdict.turns[1].scores["context_retention"] == 9.0
    info = ScenarioInfo(item.scenario.id, item.scenario.category, None, 2)
    result = score_scenario(info, "COMPLETED", verdict, ScoringRules())
    assert result.turns[1].scores["context_retention"] == REASK_CAP
    assert result.turns[0].scores["context_retention"] is None


def test_a_reply_without_the_reask_flag_is_asked_again(suite: dict[str, SuiteItem]) -> None:
    item = suite[ONE_TURN]
    unflagged = json.dumps({k: v for k, v in json.loads(marks()).items() if k != "reasked"})
    with OpenAIServer(reply_fn=judge_fn()) as server:
        server.push(Reply(text=unflagged))
        verdict = grade(judge_params(server), item, transcript(item, ["It was $36,529."]))
    assert verdict.error is None and verdict.judge_attempts == 3  # one re-ask, then scenario


def test_malformed_twice_then_valid(server: OpenAIServer, suite: dict[str, SuiteItem]) -> None:
    item = suite[ONE_TURN]
    server.push(Reply(text=malformed_json_text().text), Reply(text="Sure! Scores: great."))
    verdict = grade(judge_params(server), item, transcript(item, ["It was $36,529."]))
    assert verdict.status == "PASS" and verdict.judge_attempts == 4
    turn_requests = [r.json for r in server.requests if not is_scenario_request(r.json)]
    assert len(turn_requests) == 3
    reask = turn_requests[2]["messages"]
    assert reask[-2] == {"role": "assistant", "content": "Sure! Scores: great."}
    assert "could not be used" in reask[-1]["content"]


@pytest.mark.parametrize("attempts", [None, 2])
def test_always_malformed_is_errored(
    server: OpenAIServer, suite: dict[str, SuiteItem], attempts: int | None
) -> None:
    server.reply_fn = judge_fn(lambda _b: marks(correctness=11))
    item = suite[ONE_TURN]
    extra = {} if attempts is None else {"max_attempts": attempts}
    verdict = grade(judge_params(server, **extra), item, transcript(item, ["$36,529"]))
    expected = attempts or 3
    assert verdict.status == "ERRORED" and server.request_count == expected
    assert f"invalid after {expected} attempt" in (verdict.error or "")
    assert "less than or equal to 10" in (verdict.error or "")
    assert verdict.judge_attempts == expected


@pytest.mark.parametrize(
    ("response", "llm_correctness", "code_correctness", "rule"),
    [
        ("Net revenue was $3.1 million.", 10.0, 0.0, "gap"),
    ],
)
def test_disagreement_with_the_code_judge_is_recorded(
    server: OpenAIServer,
    suite: dict[str, SuiteItem],
    response: str,
    llm_correctness: float,
    code_correctness: float,
    rule: str,
) -> None:
    server.reply_fn = judge_fn(lambda _b: marks(correctness=llm_correctness))
    item = suite[TWO_TURNS]
    verdict = grade(judge_params(server), item, transcript(item, [response, "41.5%"]))
    (found,) = [d for d in verdict.disagreements if (d.turn, d.dimension) == (1, "correctness")]
    assert (found.llm_score, found.code_score) == (llm_correctness, code_correctness)
    assert found.rule == rule and found.code_reason


def test_scores_on_both_sides_of_the_minimum_correctness_disagree() -> None:
    from agenteval.judges.llm import disagreements
    from agenteval.schema.verdict import TurnVerdict

    llm = TurnVerdict(turn=1, scores={"correctness": 3.5})
    code = TurnVerdict(turn=1, scores={"correctness": 7.0})  # e.g. the surname alone
    (found,) = disagreements(llm, code, min_correctness=4.0)
    assert found.rule == "threshold" and (found.llm_score, found.code_score) == (3.5, 7.0)


def test_self_judge_is_refused_unless_allowed(server: OpenAIServer) -> None:
    params = judge_params(server)
    params["target"] = {"kind": "chat", "model": "judge-model", "base_url": server.base_url + "/"}
    with pytest.raises(ValueError, match="allow_self_judge"):
        LLMJudge(params, ROOT)
    params["judge"]["allow_self_judge"] = True
    assert LLMJudge(params, ROOT).participant.kind == "llm"


def test_anthropic_judge_without_structured_output_is_asked_in_the_prompt(
    suite: dict[str, SuiteItem],
) -> None:
    item = suite[TWO_TURNS]
    with AnthropicServer(reply_fn=judge_fn()) as fake:
        params = judge_params(fake, protocol="anthropic", structured_output=False)
        verdict = grade(params, item, transcript(item, RIGHT[TWO_TURNS]))
        bodies = [r.json for r in fake.requests]
    assert verdict.status == "PASS" and verdict.judge.protocol == "anthropic"
    assert all("output_config" not in b and "response_format" not in b for b in bodies)
    assert "Answer format" in bodies[0]["system"]


def test_key_in_model_output_is_scrubbed_from_the_verdict(
    suite: dict[str, SuiteItem], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)
    item = suite[ONE_TURN]
    with OpenAIServer(
        reply_fn=judge_fn(lambda _b: marks(reason=f"key {KEY}")), api_key=KEY
    ) as fake:
        params = judge_params(fake, api_key_env="JUDGE_TEST_KEY")
        verdict = grade(params, item, transcript(item, ["$36,529"]))
    assert verdict.status == "PASS"
    dumped = verdict.model_dump_json()
    assert KEY not in dumped and "[REDACTED]" in dumped


def test_unmeasured_transcripts_pass_through(
    server: OpenAIServer, suite: dict[str, SuiteItem]
) -> None:
    item = suite[ONE_TURN]
    verdict = grade(judge_params(server), item, transcript(item, [], status="TIMEOUT"))
    assert verdict.status == "TIMEOUT" and server.request_count == 0


def test_simulator_fault_turns_cost_no_judge_call(
    server: OpenAIServer, suite: dict[str, SuiteItem]
) -> None:
    item = suite[TWO_TURNS]
    said = transcript(item, RIGHT[TWO_TURNS], faults={2: "empty message"})
    verdict = grade(judge_params(server), item, said)
    assert server.request_count == 2  # turn 1 and the scenario
    assert verdict.turns[1].simulator_fault == "empty message"
    assert set(verdict.turns[1].judged_by.values()) == {"code"}


def test_quota_exhaustion_stops_instead_of_recording(
    server: OpenAIServer, suite: dict[str, SuiteItem]
) -> None:
    server.push(openai_faults.quota_exhausted())
    item = suite[ONE_TURN]
    with pytest.raises(QuotaExhausted):
        grade(judge_params(server), item, transcript(item, ["$36,529"]))


def test_prompts_cite_only_numbers_rendered_from_code(server: OpenAIServer) -> None:
    for name in ("judge_turn.md", "judge_scenario.md", "simulator.md"):
        text = (PROMPTS / name).read_text(encoding="utf-8")
        assert not re.search(r"\d", text), f"{name} states a number the code does not render"
    params = judge_params(server, pass_threshold=7.5, min_correctness=5)
    judge = LLMJudge(params, ROOT)
    for rendered in (judge.turn_system, judge.scenario_system):
        assert not PLACEHOLDER.search(rendered) and "{{" not in rendered
        rendered = " ".join(rendered.split())
        assert "at least 7.5" in rendered
        assert "below 5" in rendered or "at least 5" in rendered
    assert "| over 5% | 0 (automatic zero) |" in judge.turn_system


# -- the whole pipeline ---------------------------------------------------------------------
def agent_reply(body: dict[str, Any]) -> Reply:
    """A tiny retrieval agent: search with the user's words, answer with the top passage."""
    last = body["messages"][-1]
    if last["role"] == "user":
        return Reply(text="", tool_calls=[_query(last["content"])])
    results = json.loads(last["content"]).get("results") or []
    answer = results[0]["text"] if results else "That is not in the documents."
    # A careless agent that prints its environment: the key must still never reach disk.
    return Reply(text=f"{answer} (debug: {KEY})")


def _query(text: str) -> Any:
    from servers import Call

    return Call("query_documents", {"query": text})


def simulator_reply(body: dict[str, Any]) -> Reply:
    system = body["messages"][0]["content"]
    scripted = re.search(r'scripts this message as: "(.*?)"\. Say', system, re.DOTALL)
    return Reply(text=(scripted.group(1) if scripted else "What does it say?") + " Thanks!")


def endpoint(server: FakeLLMServer, model: str, env: str) -> dict[str, Any]:
    return {"model": model, "base_url": server.base_url, "api_key_env": env}


def test_pipeline_with_chat_target_llm_simulator_and_llm_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for env in ("E2E_AGENT_KEY", "E2E_SIM_KEY", "E2E_JUDGE_KEY"):
        monkeypatch.setenv(env, KEY)
    agent = OpenAIServer(reply_fn=agent_reply, api_key=KEY).start()
    sim = OpenAIServer(reply_fn=simulator_reply, api_key=KEY).start()
    judge = OpenAIServer(reply_fn=judge_fn(), api_key=KEY).start()
    try:
        params = deep_merge(
            DEFAULTS,
            {
                "suite": {"ids": [TWO_TURNS, ONE_TURN, "empty_file"]},
                "target": {"kind": "chat", **endpoint(agent, "agent-model", "E2E_AGENT_KEY")},
                "simulator": {
                    "kind": "llm",
                    "rephrase_scripted": True,
                    **endpoint(sim, "sim-model", "E2E_SIM_KEY"),
                },
                "judge": {"kind": "llm", **endpoint(judge, "judge-model", "E2E_JUDGE_KEY")},
                "run": {"cache_dir": str(tmp_path / "cache")},
            },
        )
        out = tmp_path / "run"
        card = run_all(params, Layout.run_dir(ROOT, out))
        counts = (agent.request_count, sim.request_count, judge.request_count)
        assert counts[0] >= 8 and counts[1] == 4 and counts[2] == 7
        run_all(params, Layout.run_dir(ROOT, out))  # unchanged rerun: resumed and cached
        assert (agent.request_count, sim.request_count, judge.request_count) == counts
    finally:
        for server in (agent, sim, judge):
            server.stop()
    assert {r.id: r.status for r in card.scenarios} == dict.fromkeys(
        (ONE_TURN, "empty_file", TWO_TURNS), "PASS"
    )
    stored = json.loads((out / "data/transcripts" / TWO_TURNS / "0.json").read_text())
    assert stored["target"]["kind"] == "chat" and stored["simulator"]["kind"] == "llm"
    assert stored["turns"][0]["tool_calls"][0]["name"] == "query_documents"
    assert stored["turns"][0]["user_message"].endswith("Thanks!")
    verdict = json.loads((out / "data/verdicts" / TWO_TURNS / "0.json").read_text())
    assert verdict["judge"]["kind"] == "llm" and verdict["judge_attempts"] == 3
    # each unit stamped with the commit it ran at: the transcript, and the model's verdict
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    assert stored["commit"] == verdict["commit"] == head and verdict["judged_at"]
    written = [p for p in out.rglob("*") if p.is_file() and p.suffix != ".png"]
    assert written and all(KEY not in p.read_text(encoding="utf-8") for p in written)
    assert "[REDACTED]" in stored["turns"][0]["response"]
