"""agenteval's judges as MLflow GenAI scorers: `mlflow.genai.evaluate` runs them on a user's
own traces (a traced app with a tool span, expectations logged through MLflow), offline."""

from __future__ import annotations

import asyncio
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from mlflow_store import fresh_store
from servers import OpenAIServer, Reply
from servers.judges import lenient

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.benchmarks.tasks.scorer import feedback_of as tasks_feedback
from agenteval.benchmarks.tasks.scorer import points_of, task_case, tasks_scorer
from agenteval.params import DEFAULTS, deep_merge
from agenteval.tracking.scorers import agenteval_scorer, case_of
from agenteval.tracking.store import mlflow_client

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "What was net revenue in the second quarter of fiscal 2026?"
TRUTH = "$8.6 million"
REPLIES = {
    "right": "Net revenue for the second quarter of fiscal 2026 was $8.6 million.",
    "wrong": "Net revenue for the second quarter was $11.2 million.",
    # the lazy attempt: name every candidate and let the grader pick
    "both": "Net revenue was either $8.6 million or $11.2 million.",
}


def test_a_case_reads_chat_inputs_expectations_and_tools() -> None:
    inputs = {"messages": [{"role": "user", "content": "hi"},
                           {"role": "assistant", "content": "hello"},
                           {"role": "user", "content": QUESTION}]}  # fmt: skip
    outputs = {"choices": [{"message": {"content": "x"}}]}
    expected = {"expected_response": TRUTH, "guidelines": ["cite"]}
    item, transcript = case_of(inputs, outputs, expected, None)
    assert [t.user_message for t in transcript.turns] == ["hi", QUESTION]
    assert transcript.turns[-1].response == "x" and transcript.turns[0].response == "hello"
    last = item.scenario.turns[-1]
    assert last.ground_truth is not None and last.ground_truth.expected_answer == TRUTH
    assert last.success_criteria == "cite"


def test_unknown_kind_is_refused_naming_the_key() -> None:
    with pytest.raises(ValueError, match=r"judge\.kind"):
        agenteval_scorer("pairwise-ish")


def traced_app(mlflow: Any, reply: str) -> str:
    @mlflow.trace(span_type="AGENT")
    def answer(question: str) -> str:
        with mlflow.start_span(name="query_documents", span_type="TOOL") as tool:
            tool.set_inputs({"query": question})
            tool.set_outputs({"results": [{"text": "Net revenue was $8.6 million."}]})
        return reply

    answer(QUESTION)
    trace_id = mlflow.get_last_active_trace_id()
    assert trace_id is not None
    return trace_id


TASKS_PROMPT = "You grade one attempt by an AI coding agent"
ANSWER = re.compile(r"## The agent's final answer\n(.*?)\n\n## ", re.S)


def tasks_judge_or_lenient(body: Any) -> Reply:
    """The tasks judge's requests get a planted grader that establishes the point only for a
    reply stating the expected figure and no other; the hybrid's model passes everything."""
    case = body["messages"][-1]["content"]
    if TASKS_PROMPT not in case:
        return lenient()(body)
    answer = ANSWER.search(case).group(1)  # type: ignore[union-attr]
    right = "8.6" in answer and "11.2" not in answer
    grade = {"instructions": 5, "quality": 5 if right else 1, "reasoning": 4, "honesty": 5,
             "established": [right], "rationale": "planted"}  # fmt: skip
    return Reply(text=json.dumps(grade))


def test_tasks_case_reads_points_and_an_unsettled_grade_is_no_score() -> None:
    from agenteval.schema.task_records import TaskGrade
    from agenteval.schema.transcript import Participant

    assert points_of({"must_establish": ["a", "b"], "expected_response": "x"}) == ["a", "b"]
    assert points_of({"expected_response": TRUTH}) == [f"The answer states: {TRUTH}"]
    assert points_of(None) == []
    task, attempt = task_case({"question": QUESTION}, {"answer": "It was $8.6 million."},
                              {"expected_facts": ["$8.6 million"]}, None)  # fmt: skip
    assert task.kind == "question" and task.points == ["$8.6 million"]
    assert attempt.final_answer == "It was $8.6 million." and task.prompt == QUESTION
    grade = TaskGrade(
        task_id=task.id,
        attempt_digest="d",
        task_digest="d",
        status="unjudged",
        judge=Participant(kind="llm", model="m"),
        reason="unusable reply: no JSON",
    )
    (only,) = tasks_feedback(grade, task.points)
    assert only.value is None and "unusable reply" in str(only.error)


def test_exported_scorers_run_inside_mlflow_genai_evaluate(tmp_path: Path) -> None:
    import mlflow

    uri = fresh_store(tmp_path)
    with (
        OpenAIServer(reply_fn=tasks_judge_or_lenient) as server,
        mlflow_client(uri, synchronous_traces=True),
    ):
        mlflow.set_experiment("user-app")
        ids = {}
        for name, reply in REPLIES.items():
            ids[name] = traced_app(mlflow, reply)
            mlflow.log_expectation(trace_id=ids[name], name="expected_response", value=TRUTH)
        traces = mlflow.search_traces(locations=[mlflow.get_experiment_by_name("user-app")
                                                 .experiment_id])  # fmt: skip
        judge = {"model": "judge-model", "base_url": server.base_url, "protocol": "openai"}
        params = deep_merge(DEFAULTS, {"judge": judge, "run": {"cache_dir": None}})
        code = agenteval_scorer("code", params, ROOT)
        hybrid = agenteval_scorer("hybrid", params, ROOT)  # its model passes everything
        tasks = tasks_scorer(deep_merge(params, {"tasks": {"judge": {"kind": "llm", **judge}}}),
                             ROOT)  # fmt: skip
        result = mlflow.genai.evaluate(data=traces, scorers=[code, hybrid, tasks])
    rows = {r["trace_id"]: r for r in result.result_df.to_dict("records")}
    verdicts = {name: rows[t] for name, t in ids.items()}
    for kind in ("agenteval_code", "agenteval_hybrid"):
        assert verdicts["right"][f"{kind}/value"] in (True, "True", "yes")
        # a lenient model cannot overturn code's finding on a wrong number
        assert verdicts["wrong"][f"{kind}/value"] in (False, "False", "no")
        # naming both candidates earns no pass: a fail or a deferral, never True
        assert verdicts["both"].get(f"{kind}/value") not in (True, "True", "yes")
    assert verdicts["right"]["agenteval_code.correctness/value"] == 10.0
    # the tasks' judge: the verdict is its point, established only by the right figure
    assert [verdicts[n]["agenteval_tasks/value"] for n in REPLIES] == [True, False, False]
    assert verdicts["right"]["agenteval_tasks.quality/value"] == 5.0
    asked = [json.dumps(r.body) for r in server.requests if TASKS_PROMPT in json.dumps(r.body)]
    assert len(asked) == len(REPLIES) and all("query_documents" in a for a in asked)  # tools
    assert len(server.requests) >= 2 * len(REPLIES)  # the hybrid's model was really asked


# -- judge.kind: mlflow (make_judge against a loopback endpoint) -----------------------------
def mlflow_judge_reply(body: Any) -> Any:
    """A planted MLflow judge: true when the reply holds the expected figure and no other."""
    from servers import Reply

    said = body["messages"][-1]["content"]
    reply_part = said.split("outputs:", 1)[-1].split("expectations:", 1)[0]
    if "garble" in reply_part:
        return Reply(text="I think it is fine")  # not MLflow's JSON: never a score
    return Reply(
        text=json.dumps(
            {"result": "8.6" in reply_part and "11.2" not in reply_part, "rationale": "planted"}
        )
    )


def test_mlflow_make_judge_is_a_judge_kind_with_provenance() -> None:
    import inspect

    from mlflow.genai.judges import make_judge

    from agenteval.controls.run import grade
    from agenteval.judges.base import make_judge as agenteval_judge
    from agenteval.scoring import ScoringRules

    if "base_url" not in inspect.signature(make_judge).parameters:  # an older MLflow: refused
        section = {"kind": "mlflow", "model": "m", "base_url": "http://127.0.0.1:9/v1"}
        with pytest.raises(ValueError, match=r"judge\.kind: mlflow needs"):
            agenteval_judge(deep_merge(DEFAULTS, {"judge": section}), ROOT)
        return

    with OpenAIServer(reply_fn=mlflow_judge_reply) as server:
        judge_section = {"kind": "mlflow", "model": "judge-model", "base_url": server.base_url}
        params = deep_merge(DEFAULTS, {"judge": judge_section, "run": {"cache_dir": None}})
        judge = agenteval_judge(params, ROOT)
        rules = ScoringRules.from_params(params["judge"])
        got = {}
        for name, reply in {**REPLIES, "garbled": "garble garble"}.items():
            item, transcript = case_of({"question": QUESTION}, reply,
                                       {"expected_response": TRUTH}, None)  # fmt: skip
            got[name] = grade(asyncio.run(judge.judge(item, transcript)), rules).verdict
    assert got == {"right": "pass", "wrong": "fail", "both": "fail", "garbled": "deferred"}
    assert judge.participant.kind == "mlflow" and judge.participant.model == "judge-model"
    assert judge.participant.details["mlflow"] and judge.participant.config_digest
    assert server.requests and "judge-model" in json.dumps(server.requests[0].body)
