"""The batched trace writers against real MLflow stores (sqlite files, never the network).

The SQL writer must leave exactly the rows MLflow's own `start_trace` + `log_spans` leave;
the API writer must work through MLflow's client; both must be verified by counting.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"  # before anything imports mlflow

from agenteval.llm.scrub import Scrubber
from agenteval.schema.scenario import Scenario
from agenteval.schema.scorecard import ScenarioResult
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn, Usage
from agenteval.schema.verdict import TurnVerdict
from agenteval.tracking.conversations import Conversation, turn_records
from agenteval.tracking.records import TraceRecord
from agenteval.tracking.store import TrackingError, mlflow_client
from agenteval.tracking.traces_store import ApiTraceWriter, TraceCounts, log_traces, make_writer

ARTIFACTS = "file:///nowhere/mlartifacts"  # same in both stores, so the location tags match
JUDGE = Participant(kind="code", config_digest="c" * 64)
# Tables whose rows describe the experiment and run themselves (ids, names, creation times).
NOT_COMPARED = {"experiments", "experiment_tags", "runs", "tags", "alembic_version"}


def conversation(sid: str, status: str = "COMPLETED") -> Conversation:
    scenario = Scenario.model_validate(
        {
            "id": sid,
            "category": "bench",
            "persona": "casual_user",
            "setup": {"index_documents": []},
            "turns": [
                {
                    "turn": t,
                    "objective": "ask",
                    "expected_tools": ["query_documents"],
                    "ground_truth": {"expected_answer": "17 %", "expected_phrases": ["Zürich"]},
                    "success_criteria": "says 17 %",
                }
                for t in (1, 2)
            ],
        }
    )
    item = SuiteItem(path=f"eval/scenarios/{sid}.yaml", digest="d" * 64, scenario=scenario)
    calls = [
        ToolCall(name="query_documents", arguments={"query": "Zürich"}, result={"hits": [1]},
                 latency_ms=3.0),
        ToolCall(name="read_document", arguments={"path": "x"}, ok=False, error="no such file",
                 latency_ms=0.5),
    ]  # fmt: skip
    transcript = Transcript(
        scenario_id=sid,
        scenario_digest="d" * 64,
        status=status,
        error=None if status == "COMPLETED" else "timed out",
        target=Participant(kind="chat", model="m"),
        simulator=Participant(kind="scripted"),
        setup_calls=[ToolCall(name="index_document", arguments={"path": "a.md"}, latency_ms=9.0)],
        started_at="2026-01-02T03:04:05+00:00",
        turns=[
            TranscriptTurn(
                turn=t,
                user_message=f"Question {t} — in Zürich?",
                response="17 % (ça va)" * t,
                tool_calls=calls if t == 1 else [],
                latency_ms=12.5,
                usage=Usage(input_tokens=100, output_tokens=7, cost_usd=0.001),
            )
            for t in (1, 2)
        ],
    )
    verdicts = {
        t: TurnVerdict(
            turn=t,
            scores={"correctness": 8.0, "efficiency": None, "tool_selection": 10.0},
            reasons={"correctness": "matches 17 %"},
        )
        for t in (1, 2)
    }
    result = ScenarioResult(id=sid, category="bench", status="PASS", score=8.0, turns=[])
    return Conversation(result, transcript, item, verdicts, JUDGE, f"{sid}.0.runkey")


def some_records(experiment_id: str, run_id: str) -> list[TraceRecord]:
    scrub = Scrubber.from_environment([])
    found = [conversation("alpha"), conversation("beta", status="TIMEOUT")]
    return [r for c in found for r in turn_records(c, experiment_id, run_id, scrub)]


def new_store(folder: Path) -> tuple[str, str, str]:
    """(uri, experiment id, run id) of a fresh sqlite store."""
    folder.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with mlflow_client(uri) as client:
        experiment_id = client.create_experiment("traces", artifact_location=ARTIFACTS)
        run_id = client.create_run(experiment_id).info.run_id
    return uri, str(experiment_id), str(run_id)


def table_rows(uri: str) -> dict[str, list[tuple[Any, ...]]]:
    path = uri.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute("select name from sqlite_master where type='table'")]
        return {
            name: sorted(db.execute(f"select * from {name}").fetchall(), key=repr)
            for name in names
            if name not in NOT_COMPARED
        }


@pytest.mark.parametrize("rollups", [False, True])
def test_sql_writer_leaves_the_rows_mlflow_itself_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rollups: bool
) -> None:
    from mlflow.tracing.client import TracingClient

    monkeypatch.setenv("MLFLOW_SQL_TRACE_ROLLUPS_ENABLED", str(rollups).lower())
    ours, experiment_id, run_id = new_store(tmp_path / "ours")
    theirs, other_id, _ = new_store(tmp_path / "theirs")
    assert experiment_id == other_id
    records = some_records(experiment_id, run_id)  # the same objects go to both stores
    make_writer(ours, experiment_id).write(records)
    reference = TracingClient(theirs)
    for record in records:
        reference.start_trace(record.info)
    reference.log_spans(experiment_id, [s for r in records for s in r.spans])
    mine, mlflows = table_rows(ours), table_rows(theirs)
    assert len(mine["trace_info"]) == 4 and len(mine["spans"]) == 8
    assert mine["assessments"] and mine["trace_tags"] and mine["trace_request_metadata"]
    if rollups:  # old traces queue their rollup days for a rebuild, in both stores
        assert mine["sql_trace_rollup_rebuild_queue"]
    for table in sorted(set(mine) | set(mlflows)):
        assert mine.get(table) == mlflows.get(table), table


def test_traces_read_back_whole_through_the_public_api(tmp_path: Path) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Expectation, Feedback

    uri, experiment_id, run_id = new_store(tmp_path / "store")
    records = some_records(experiment_id, run_id)
    sent = log_traces(uri, experiment_id, run_id, records, batch=3)  # two batches
    # per turn 2 scores + 4 expectations; per session status, pass and score on turn 1
    assert sent == TraceCounts(traces=4, spans=8, assessments=4 * (2 + 4) + 2 * 3)
    traces = MlflowClient(uri).search_traces(locations=[experiment_id], run_id=run_id)
    assert len(traces) == 4
    by_name = {t.info.tags["mlflow.traceName"]: t for t in traces}
    first = by_name["alpha turn 1"]
    assert first.info.trace_metadata["mlflow.trace.session"] == "alpha.0.runkey"
    assert first.info.request_preview == "Question 1 — in Zürich?"
    assert first.info.token_usage == {"input_tokens": 100, "output_tokens": 7, "total_tokens": 107}
    root = next(s for s in first.data.spans if s.parent_id is None)
    assert root.inputs["messages"][0]["content"] == "Question 1 — in Zürich?"
    tools = [s for s in first.data.spans if s.parent_id == root.span_id]
    assert [(s.name, s.status.status_code.value) for s in tools] == [
        ("query_documents", "OK"),
        ("read_document", "ERROR"),
    ]
    assert root.attributes["agenteval.setup"][0]["name"] == "index_document"
    feedback = {a.name: a.value for a in first.info.assessments if isinstance(a, Feedback)}
    outcome = {"scenario_status": "PASS", "scenario_pass": True, "scenario_score": 8.0}
    assert feedback == {"correctness": 8.0, "tool_selection": 10.0} | outcome  # no not-judged
    expected = {a.name: a.value for a in first.info.assessments if isinstance(a, Expectation)}
    assert expected["expected_phrases"] == ["Zürich"]
    failed = by_name["beta turn 2"]
    assert failed.info.state.value == "ERROR"
    assert by_name["beta turn 1"].info.state.value == "OK"


def test_api_writer_logs_the_same_traces_and_counts_them(tmp_path: Path) -> None:
    uri, experiment_id, run_id = new_store(tmp_path / "store")
    records = some_records(experiment_id, run_id)
    writer = make_writer(uri, experiment_id, sql=False)
    assert isinstance(writer, ApiTraceWriter)
    sent = log_traces(uri, experiment_id, run_id, records, writer=writer, batch=3)
    counted = writer.counts(run_id)
    assert counted == {"traces": 4, "spans": 8, "assessments": sent.assessments}
    assert make_writer(uri, experiment_id).counts(run_id) == counted  # the SQL count agrees


def test_a_store_that_loses_a_span_is_caught(tmp_path: Path) -> None:
    uri, experiment_id, run_id = new_store(tmp_path / "store")
    records = some_records(experiment_id, run_id)
    writer = make_writer(uri, experiment_id)

    class Lossy:
        def write(self, batch: list[TraceRecord]) -> None:
            batch[-1].spans.pop()  # dropped between counting what was sent and the store
            writer.write(batch)

        def counts(self, run_id: str) -> dict[str, int]:
            return writer.counts(run_id)  # type: ignore[no-any-return]

    with pytest.raises(TrackingError, match=r"spans: 7 stored of 8 sent"):
        log_traces(uri, experiment_id, run_id, records, writer=Lossy())


def test_sql_metrics_are_the_rows_log_batch_leaves(tmp_path: Path) -> None:
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from agenteval.tracking.sql_metrics import insert_metrics
    from agenteval.tracking.traces_store import sql_store

    metrics = {f"scenario.s{i:04d}.0.score": i / 7 for i in range(1500)} | {"zero": 0.0}
    ours, _, our_run = new_store(tmp_path / "ours")
    theirs, _, their_run = new_store(tmp_path / "theirs")
    insert_metrics(sql_store(ours), our_run, metrics, 1_700_000_000_000)
    reference = MlflowClient(theirs)
    items = [Metric(k, v, 1_700_000_000_000, 0) for k, v in metrics.items()]
    for start in range(0, len(items), 1000):
        reference.log_batch(their_run, metrics=items[start : start + 1000])
    mine, mlflows = table_rows(ours), table_rows(theirs)
    for table in ("metrics", "latest_metrics"):
        drop_run = [tuple(v for v in row if v not in (our_run, their_run)) for row in mine[table]]
        assert drop_run == [
            tuple(v for v in row if v not in (our_run, their_run)) for row in mlflows[table]
        ]
        assert len(mine[table]) == len(metrics)
    assert MlflowClient(ours).get_run(our_run).data.metrics == metrics
    with pytest.raises(TrackingError, match="already has metrics"):
        insert_metrics(sql_store(ours), our_run, {"again": 1.0}, 1)


def dataset_records(first: int, count: int, answer: str) -> list[dict[str, Any]]:
    """Scenario-like records; every third one without a source (MLflow infers its type)."""
    records = []
    for i in range(first, first + count):
        record: dict[str, Any] = {
            "inputs": {"scenario_id": f"s{i}", "turns": [{"turn": 1, "user_message": "Zürich?"}]},
            "expectations": {"turn_1": {"expected_answer": answer}},
        }
        if i % 3:
            record["source"] = {"source_type": "HUMAN", "source_data": {"path": f"s{i}.yaml"}}
        records.append(record)
    return records


def dataset_table_rows(uri: str) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """(records, datasets) without the ids, times and time-based digest that differ by store."""
    path = uri.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        records = db.execute(
            "select input_hash, inputs, outputs, expectations, tags, source, source_id, "
            "source_type, created_by, last_updated_by, created_time = last_update_time "
            "from evaluation_dataset_records order by input_hash"
        ).fetchall()
        datasets = db.execute(
            "select name, schema, profile, created_by, last_updated_by, digest is not null "
            "from evaluation_datasets"
        ).fetchall()
    return records, datasets


@pytest.mark.parametrize("batches", [[(0, 40)], [(0, 30), (20, 25)]], ids=["new", "merged"])
def test_sql_dataset_upsert_leaves_the_rows_merge_records_writes(
    tmp_path: Path, batches: list[tuple[int, int]]
) -> None:
    from agenteval.tracking.sql_datasets import merge_records
    from agenteval.tracking.traces_store import sql_store

    ours, experiment_id, _ = new_store(tmp_path / "ours")
    theirs, _, _ = new_store(tmp_path / "theirs")
    for uri, batched in ((ours, True), (theirs, False)):
        with mlflow_client(uri) as client:
            dataset = client.create_dataset("scenarios", experiment_id=experiment_id)
            # A later batch repeats some inputs with another answer: those are merged.
            for number, (first, count) in enumerate(batches):
                records = dataset_records(first, count, answer=f"17 % ({number})")
                if batched:
                    merge_records(dataset, sql_store(uri), records)
                else:
                    dataset.merge_records(records)
    mine, mlflows = dataset_table_rows(ours), dataset_table_rows(theirs)
    assert len(mine[0]) == max(first + count for first, count in batches)
    assert mine == mlflows


def test_sql_dataset_upsert_is_one_flush_and_hands_repeated_inputs_to_mlflow(
    tmp_path: Path,
) -> None:
    from agenteval.tracking.sql_datasets import upsert_records
    from agenteval.tracking.traces_store import sql_store

    uri, experiment_id, _ = new_store(tmp_path / "store")
    with mlflow_client(uri) as client:
        dataset = client.create_dataset("scenarios", experiment_id=experiment_id)
    store = sql_store(uri)
    statements: list[str] = []
    from sqlalchemy import event

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        statements.append(statement.split(None, 1)[0].upper())

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        assert upsert_records(store, dataset.dataset_id, dataset_records(0, 300, "a")) == {
            "inserted": 300,
            "updated": 0,
        }
        # Not one lookup and one insert per record (600 statements) as MLflow's loop does.
        assert statements.count("INSERT") <= 2 and statements.count("SELECT") <= 6
        repeated = dataset_records(300, 2, "b") + dataset_records(300, 1, "c")
        assert upsert_records(store, dataset.dataset_id, repeated) == {
            "inserted": 2,
            "updated": 1,
        }
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    records, _ = dataset_table_rows(uri)
    assert len(records) == 302
