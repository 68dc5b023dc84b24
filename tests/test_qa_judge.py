"""The A/B/C judge over a real loopback OpenAI-compatible server.

An unparsable reply is re-asked, then recorded as class `unparsed` - never a letter; the
pre-check settles what code can without a model call; the model under test cannot judge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import OpenAIServer, Reply, server_error

from agenteval.benchmarks.base import params_model
from agenteval.benchmarks.qa.judge import QAJudge, parse_verdict
from agenteval.benchmarks.questions import QATask
from agenteval.params import deep_merge, defaults_of
from agenteval.schema.transcript import Participant, Transcript, TranscriptTurn

DEFAULTS = defaults_of(params_model(("qa",)))  # the shared sections and the qa section
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as server:
        yield server


TASK = QATask(id="t1", question="Who owns the runbook?", answer="Deepa Venkataraman", level=1)


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("A", "A"),
        ("(B)", "B"),
        ("**C**", "C"),
        ("A — CORRECT: the names match.", "A"),
        ("B: the answer names someone else.", "B"),
        ("Verdict: C", "C"),
        ("The final verdict is B.", "B"),
        ('{"verdict": "A"}', "A"),
        ("A correct answer would name Deepa; this one names Marcus. Verdict: B", "B"),
        ("I think it is right.", None),
        ("A or B", None),
        ("A. Actually, verdict: B", None),
        ("", None),
        ('{"verdict": "A", "reason": "the answer matches', None),  # truncated JSON
        ("Grade: D", None),
    ],
)
def test_parse_verdict_commits_to_one_letter_or_none(reply: str, letter: str | None) -> None:
    assert parse_verdict(reply) == letter


def params_for(server: OpenAIServer, **judge: Any) -> dict[str, Any]:
    section = {"kind": "llm", "model": "judge-model", "base_url": server.base_url, **judge}
    return deep_merge(DEFAULTS, {"qa": {"judge": section}, "run": {"cache_dir": None}})


def transcript(answer: str, status: str = "COMPLETED") -> Transcript:
    who = Participant(kind="builtin", model="builtin-bm25")
    turns = [TranscriptTurn(turn=1, user_message=TASK.question, response=answer)]
    return Transcript(
        scenario_id=TASK.id, scenario_digest="d", status=status, target=who,
        simulator=Participant(kind="scripted"), turns=turns if status == "COMPLETED" else [],
    )  # fmt: skip


def grade(params: dict[str, Any], answer: str, status: str = "COMPLETED") -> Any:
    judge = QAJudge(params, ROOT)
    return asyncio.run(judge.grade(TASK, transcript(answer, status)))


def test_judge_letters_come_from_the_model_when_code_defers(openai_server: OpenAIServer) -> None:
    openai_server.push(Reply(text="A — CORRECT"))
    verdict = grade(params_for(openai_server), "Perhaps Deepa Venkataraman owns it.")
    assert (verdict.status, verdict.verdict, verdict.source) == ("evaluated", "A", "judge")
    assert verdict.correct == 1 and verdict.rule == "deferred: negated or hedged"
    body = openai_server.requests[0].json
    assert body["model"] == "judge-model"
    prompt = body["messages"][-1]["content"]
    assert "Deepa Venkataraman" in prompt and "Answer under test" in prompt


def test_an_unparsable_reply_is_reasked_then_unparsed_never_a_letter(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(Reply(text="Hmm, hard to say."), Reply(text="A or C"))
    verdict = grade(params_for(openai_server, max_attempts=2), "Maybe Deepa Venkataraman?")
    assert (verdict.status, verdict.verdict) == ("unavailable", "unparsed")
    assert verdict.correct is None
    assert verdict.judge_replies == ["Hmm, hard to say.", "A or C"]
    second = openai_server.requests[1].json["messages"]
    assert second[-1]["content"].startswith("Reply with exactly one letter")


def test_a_reask_that_parses_counts(openai_server: OpenAIServer) -> None:
    openai_server.push(Reply(text="It is close."), Reply(text="B"))
    verdict = grade(params_for(openai_server), "Maybe Deepa.")
    assert (verdict.verdict, verdict.correct, len(verdict.judge_replies)) == ("B", 0, 2)


def test_code_settles_without_a_model_call(openai_server: OpenAIServer) -> None:
    verdict = grade(params_for(openai_server), "Deepa Venkataraman owns the runbook.")
    assert (verdict.verdict, verdict.source, verdict.rule) == ("A", "precheck", "contains")
    assert openai_server.request_count == 0
    refusal = grade(params_for(openai_server), "I could not find that in the documents.")
    assert (refusal.verdict, refusal.source) == ("C", "precheck")


def test_a_non_firm_b_goes_to_the_judge_which_may_accept_a_paraphrase(
    openai_server: OpenAIServer,
) -> None:
    openai_server.push(Reply(text="A"))
    verdict = grade(params_for(openai_server), "D. Venkataraman")
    assert (verdict.verdict, verdict.source, verdict.rule) == ("A", "judge", "absent")


def test_judge_server_errors_are_errors_not_verdicts(openai_server: OpenAIServer) -> None:
    openai_server.push(*[server_error(500)] * 5)
    params = params_for(openai_server)
    params["run"]["max_attempts"] = 1
    verdict = grade(params, "Maybe Deepa.")
    assert verdict.status == "error" and verdict.verdict is None and verdict.correct is None


def test_failed_inference_is_error_and_missing_document_unavailable() -> None:
    params = deep_merge(DEFAULTS, {})
    assert grade(params, "", status="ERRORED").status == "error"
    assert grade(params, "", status="SKIPPED_NO_DOCUMENT").status == "unavailable"


def test_precheck_only_leaves_deferred_answers_unavailable() -> None:
    verdict = grade(deep_merge(DEFAULTS, {}), "Perhaps Deepa Venkataraman owns it.")
    assert (verdict.status, verdict.verdict) == ("unavailable", None)
    strict = grade(deep_merge(DEFAULTS, {}), "Marcus Bell")
    assert (strict.status, strict.verdict, strict.rule) == ("evaluated", "B", "absent")


def test_the_model_under_test_cannot_judge_itself(openai_server: OpenAIServer) -> None:
    params = params_for(openai_server, model="Qwen3-8B")
    params["target"] |= {"kind": "chat", "model": "qwen3-8b", "base_url": "http://127.0.0.1:9/v1"}
    with pytest.raises(ValueError, match=r"qa\.judge\.model"):
        QAJudge(params, ROOT)
