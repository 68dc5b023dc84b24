"""agenteval's judges as MLflow GenAI scorers: `mlflow.genai.evaluate` runs them on a user's
own traces (a traced app with a tool span, expectations logged through MLflow), offline."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from servers import OpenAIServer
from servers.judges import lenient

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

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


def test_exported_scorers_run_inside_mlflow_genai_evaluate(tmp_path: Path) -> None:
    import mlflow

    uri = f"sqlite:///{(tmp_path / 'mlflow.db').as_posix()}"
    with OpenAIServer(reply_fn=lenient()) as server, mlflow_client(uri, synchronous_traces=True):
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
        result = mlflow.genai.evaluate(data=traces, scorers=[code, hybrid])
    rows = {r["trace_id"]: r for r in result.result_df.to_dict("records")}
    verdicts = {name: rows[t] for name, t in ids.items()}
    for kind in ("agenteval_code", "agenteval_hybrid"):
        assert verdicts["right"][f"{kind}/value"] in (True, "True", "yes")
        # a lenient model cannot overturn code's finding on a wrong number
        assert verdicts["wrong"][f"{kind}/value"] in (False, "False", "no")
        # naming both candidates earns no pass: a fail or a deferral, never True
        assert verdicts["both"].get(f"{kind}/value") not in (True, "True", "yes")
    assert verdicts["right"]["agenteval_code.correctness/value"] == 10.0
    assert len(server.requests) >= len(REPLIES)  # the hybrid's model was really asked
