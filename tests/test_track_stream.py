"""Traces written while `agenteval run` runs (`tracking.stream`): a trace written early and
completed later holds exactly the rows of one written whole, a conversation changed after
it was streamed is logged again as it is, an evaluation logged before is never logged
twice, a run given up keeps no trace, and `agenteval run`'s tracking child fed with the
graded conversations logs the whole run (a real child process and real sqlite stores)."""

from __future__ import annotations

import os
import random
from collections import Counter
from pathlib import Path
from typing import Any

# Before anything imports mlflow: its telemetry client is decided at import time.
os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.fileio import write_json
from agenteval.layout import Layout, load_transcript, transcript_path
from agenteval.llm.scrub import Scrubber
from agenteval.params import load_params
from agenteval.pipeline import run_evaluation
from agenteval.tracking.background import BackgroundTracker
from agenteval.tracking.conversations import early_records, late_parts, turn_records
from agenteval.tracking.run import log_evaluation
from agenteval.tracking.store import ensure_experiment, mlflow_client
from agenteval.tracking.stream import TraceStream, trace_stream
from agenteval.tracking.traces_store import make_writer
from tests.test_track_store import conversation, new_store, table_rows

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["incident_followups", "false_premise", "missing_data_graceful"]
EXPERIMENT = "stream"
SESSION = "mlflow.trace.session"


def without_drawn(rows: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    """The rows with what is drawn as an assessment is made (a uuid4, the clock) left out."""
    drawn = {0, 6, 7}  # assessment_id, created_timestamp, last_updated_timestamp
    rows["assessments"] = sorted(
        (tuple(v for i, v in enumerate(row) if i not in drawn) for row in rows["assessments"]),
        key=repr,
    )
    return rows


def test_a_trace_completed_later_holds_the_rows_of_one_written_whole(tmp_path: Path) -> None:
    ours, experiment_id, run_id = new_store(tmp_path / "ours")
    theirs, _, _ = new_store(tmp_path / "theirs")
    scrub = Scrubber.from_environment([])
    found = [conversation("alpha"), conversation("beta", status="TIMEOUT")]
    random.seed(7)  # the same trace and span ids both ways
    early = [early_records(c, experiment_id, run_id, scrub) for c in found]
    random.seed(7)
    whole = [r for c in found for r in turn_records(c, experiment_id, run_id, scrub, "m-1")]
    writer = make_writer(ours, experiment_id)
    writer.write([r for records in early for r in records])
    late = []
    for c, records in zip(found, early, strict=True):
        traces = [(r.info.trace_id, r.info.request_time) for r in records]
        late += late_parts(c, traces, scrub, "m-1")
    assert any(part.assessments for part in late) and all(part.metadata for part in late)
    writer.write_late(late)
    make_writer(theirs, experiment_id).write(whole)
    assert without_drawn(table_rows(ours)) == without_drawn(table_rows(theirs))


def project(tmp_path: Path) -> tuple[str, dict[str, Any], Layout]:
    """A fresh sqlite store, the params of three scenarios logging to it, a run folder."""
    (tmp_path / "store").mkdir()
    uri = f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').as_posix()}"
    sets = [f"suite.ids=[{','.join(SCENARIOS)}]", f"tracking.uri={uri}",
            f"tracking.experiment={EXPERIMENT}"]  # fmt: skip
    params = load_params(ROOT / "params.yaml", sets)
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    return uri, params, layout


def evaluated(tmp_path: Path) -> tuple[str, dict[str, Any], Layout, str]:
    uri, params, layout = project(tmp_path)
    run_evaluation(params, layout)
    with mlflow_client(uri) as client:
        experiment_id = ensure_experiment(client, EXPERIMENT, uri)
    return uri, params, layout, experiment_id


def streamed(uri: str, params: dict[str, Any], layout: Layout, experiment_id: str) -> TraceStream:
    stream = trace_stream(layout, uri, experiment_id, params)
    assert stream is not None
    for sid in SCENARIOS:
        stream.add(sid, 0)
    stream.flush()
    assert stream.run_id is not None and len(stream.entries) == len(SCENARIOS)
    return stream


def run_traces(uri: str, run_id: str | None = None) -> list[Any]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    return list(client.search_traces(locations=[experiment.experiment_id], run_id=run_id))


def test_a_streamed_run_is_adopted_and_a_conversation_changed_since_logged_again(
    tmp_path: Path,
) -> None:
    uri, params, layout, experiment_id = evaluated(tmp_path)
    stream = streamed(uri, params, layout, experiment_id)
    path = transcript_path(layout.transcripts, SCENARIOS[0], 0)
    transcript = load_transcript(layout.transcripts, SCENARIOS[0], 0)
    assert transcript is not None
    turns = [t.model_copy(update={"response": f"rewritten {t.turn}"}) for t in transcript.turns]
    write_json(path, transcript.model_copy(update={"turns": turns}))
    tracked = log_evaluation(layout, params, stream=stream)
    assert tracked is not None and tracked.created and tracked.run_id == stream.run_id
    traces = run_traces(uri, tracked.run_id)
    # Every turn once (the changed conversation's streamed traces were deleted), all whole.
    assert len(run_traces(uri)) == len(traces) == tracked.traces_logged > len(SCENARIOS)
    names = Counter(t.info.tags["mlflow.traceName"] for t in traces)
    assert set(names.values()) == {1}
    responses = {t.info.tags["mlflow.traceName"]: t.info.response_preview for t in traces}
    assert responses[f"{SCENARIOS[0]} turn 1"] == "rewritten 1"
    assert all("agenteval.status" in t.info.tags for t in traces)
    assert all(t.info.trace_metadata[SESSION].endswith(tracked.run_id[:12]) for t in traces)
    outcomes = [a for t in traces for a in t.info.assessments if a.name == "scenario_status"]
    assert len(outcomes) == len(SCENARIOS)
    from mlflow import MlflowClient

    run = MlflowClient(tracking_uri=uri).get_run(tracked.run_id)
    assert run.info.status == "FINISHED" and run.data.tags["agenteval.run_key"] == tracked.run_key
    assert run.info.run_name != tracked.run_id and "judge" in run.info.run_name


def test_an_evaluation_logged_before_is_not_logged_twice(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    uri, params, layout, experiment_id = evaluated(tmp_path)
    first = log_evaluation(layout, params)
    assert first is not None and first.created
    stream = streamed(uri, params, layout, experiment_id)
    again = log_evaluation(layout, params, stream=stream)
    assert again is not None and not again.created and again.run_id == first.run_id
    assert len(run_traces(uri)) == first.traces_logged  # the streamed traces are gone
    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([experiment_id], run_view_type=3)  # active and deleted
    assert {r.info.run_id: r.info.lifecycle_stage for r in runs} == {
        first.run_id: "active",
        next(r.info.run_id for r in runs if r.info.run_id != first.run_id): "deleted",
    }


def test_a_discarded_stream_leaves_a_failed_run_without_traces(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    uri, params, layout, experiment_id = evaluated(tmp_path)
    stream = streamed(uri, params, layout, experiment_id)
    run_id = stream.run_id
    assert run_id is not None and len(run_traces(uri, run_id)) > 0
    stream.discard()
    assert MlflowClient(tracking_uri=uri).get_run(run_id).info.status == "FAILED"
    assert run_traces(uri) == []


def test_the_tracking_child_fed_the_graded_conversations_logs_the_whole_run(
    tmp_path: Path,
) -> None:
    uri, params, layout = project(tmp_path)
    tracker = BackgroundTracker.start(params, ROOT)
    assert tracker is not None
    run_evaluation(params, layout, **tracker.hooks(layout, params))
    tracked = tracker.finish(layout, params)
    assert tracked is not None and tracked.created
    # How many were streamed depends on how soon the child was ready; never more.
    assert 0 <= tracker.streamed <= len(SCENARIOS)
    traces = run_traces(uri, tracked.run_id)
    assert len(run_traces(uri)) == len(traces) == tracked.traces_logged > len(SCENARIOS)
    first_turns = [t for t in traces if t.info.tags["agenteval.turn"] == "1"]
    assert len(first_turns) == len(SCENARIOS)
    assert all(any(a.name == "scenario_status" for a in t.info.assessments) for t in first_turns)


def test_a_child_cancelled_after_streaming_leaves_no_trace(tmp_path: Path) -> None:
    uri, params, layout = project(tmp_path)
    tracker = BackgroundTracker.start(params, ROOT)
    assert tracker is not None
    hooks = tracker.hooks(layout, params)
    run_evaluation(params, layout, graded=hooks["graded"])
    tracker.cancel()  # the evaluation failed before its hand-over: nothing is kept
    assert run_traces(uri) == []
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(EXPERIMENT)
    statuses = {r.info.status for r in client.search_runs([experiment.experiment_id])}
    assert statuses <= {"FAILED"}
