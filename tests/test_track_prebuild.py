"""Spans built ahead while the agent runs (`tracking.prebuild`): the same rows as spans built
at logging time, never used for a transcript that changed since, and `agenteval run`'s
tracking child fed with the stored transcripts still logs every trace (a real child
process and a real sqlite MLflow store)."""

from __future__ import annotations

import os
import random
from dataclasses import replace
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
from agenteval.tracking.conversations import turn_records
from agenteval.tracking.prebuild import SpanCache, span_cache
from agenteval.tracking.run import log_evaluation
from agenteval.tracking.traces_store import make_writer
from tests.test_track_store import conversation, new_store, table_rows

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["incident_followups", "false_premise", "missing_data_graceful"]


def stored_conversation(folder: Path, sid: str) -> Any:
    """conversation(sid), its transcript written where the engine stores it."""
    found = conversation(sid)
    write_json(transcript_path(folder, sid, 0), found.transcript)
    return found


def test_spans_built_ahead_are_the_rows_built_at_logging_time(tmp_path: Path) -> None:
    ours, experiment_id, run_id = new_store(tmp_path / "ours")
    theirs, _, _ = new_store(tmp_path / "theirs")
    scrub = Scrubber.from_environment([])
    transcripts = tmp_path / "transcripts"
    found = [stored_conversation(transcripts, sid) for sid in ("alpha", "beta")]
    # The same random ids both ways: spans built now, and spans built when logged.
    random.seed(7)
    cache = SpanCache(transcripts, experiment_id, scrub, make_writer(ours, experiment_id))
    for c in found:
        cache.add(c.result.id, 0)
    ahead = []
    for c in found:
        taken = cache.take(c.result.id, 0)
        assert taken is not None
        transcript, spans = taken
        ahead += turn_records(replace(c, transcript=transcript, spans=spans), experiment_id,
                              run_id, scrub)  # fmt: skip
    random.seed(7)
    loaded = [replace(c, transcript=load_transcript(transcripts, c.result.id, 0)) for c in found]
    late = [r for c in loaded for r in turn_records(c, experiment_id, run_id, scrub)]
    assert all(r.span_rows is not None for r in ahead) and cache.used == 2
    assert all(r.span_rows is None for r in late)
    assert [r.info.trace_id for r in ahead] == [r.info.trace_id for r in late]
    make_writer(ours, experiment_id).write(ahead)
    make_writer(theirs, experiment_id).write(late)
    mine, built_late = table_rows(ours), table_rows(theirs)
    assert len(mine["spans"]) == 8
    # An assessment's id and times are drawn as it is made (a uuid4, the clock); these are
    # trace-level, not the spans built ahead: all else is equal.
    for rows in (mine, built_late):
        drawn = {0, 6, 7}  # assessment_id, created_timestamp, last_updated_timestamp
        rows["assessments"] = sorted(
            (tuple(v for i, v in enumerate(row) if i not in drawn) for row in rows["assessments"]),
            key=repr,
        )
    assert mine == built_late


def test_a_transcript_changed_after_its_spans_were_built_is_built_again(tmp_path: Path) -> None:
    _, experiment_id, _ = new_store(tmp_path / "store")
    transcripts = tmp_path / "transcripts"
    found = stored_conversation(transcripts, "alpha")
    cache = SpanCache(transcripts, experiment_id, Scrubber.from_environment([]), None)
    cache.add("alpha", 0)
    cache.add("missing", 0)  # never stored: nothing built, nothing to take
    changed = found.transcript.model_copy(update={"error": "retried"})
    write_json(transcript_path(transcripts, "alpha", 0), changed)
    assert cache.take("alpha", 0) is None
    assert cache.take("missing", 0) is None
    assert cache.used == 0
    small = SpanCache(transcripts, experiment_id, Scrubber.from_environment([]), None, limit=0)
    small.add("alpha", 0)  # over its limit: built at logging time instead
    assert small.take("alpha", 0) is None


def evaluated(tmp_path: Path) -> tuple[str, dict[str, Any], Layout]:
    (tmp_path / "store").mkdir()
    uri = f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').as_posix()}"
    sets = [f"suite.ids=[{','.join(SCENARIOS)}]", f"tracking.uri={uri}",
            "tracking.experiment=prebuild"]  # fmt: skip
    params = load_params(ROOT / "params.yaml", sets)
    return uri, params, Layout.run_dir(ROOT, tmp_path / "run")


def logged_responses(uri: str, run_id: str) -> dict[str, str]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("prebuild")
    traces = client.search_traces(locations=[experiment.experiment_id], run_id=run_id)
    return {t.info.tags["mlflow.traceName"]: t.info.response_preview or "" for t in traces}


def test_a_run_logged_with_spans_built_ahead_logs_every_trace(tmp_path: Path) -> None:
    from agenteval.tracking.store import ensure_experiment, mlflow_client

    uri, params, layout = evaluated(tmp_path)
    run_evaluation(params, layout)
    with mlflow_client(uri) as client:
        experiment_id = ensure_experiment(client, "prebuild", uri)
    cache = span_cache(layout.transcripts, uri, experiment_id, params)
    for sid in SCENARIOS:
        cache.add(sid, 0)
    # One transcript changes after its spans were built: it is logged as it is now.
    path = transcript_path(layout.transcripts, SCENARIOS[0], 0)
    transcript = load_transcript(layout.transcripts, SCENARIOS[0], 0)
    assert transcript is not None
    turns = [t.model_copy(update={"response": f"rewritten {t.turn}"}) for t in transcript.turns]
    write_json(path, transcript.model_copy(update={"turns": turns}))
    tracked = log_evaluation(layout, params, prebuilt=cache)
    assert tracked is not None and tracked.created
    assert cache.used == len(SCENARIOS) - 1
    responses = logged_responses(uri, tracked.run_id)
    assert len(responses) == tracked.traces_logged > len(SCENARIOS)
    assert responses[f"{SCENARIOS[0]} turn 1"] == "rewritten 1"


def test_the_tracking_child_fed_the_stored_transcripts_logs_the_whole_run(
    tmp_path: Path,
) -> None:
    uri, params, layout = evaluated(tmp_path)
    tracker = BackgroundTracker.start(params, ROOT)
    assert tracker is not None
    tracker.follow(layout, params)
    run_evaluation(params, layout, stored=tracker.stored, judged=lambda: tracker.judged(layout),
                   scored=lambda: tracker.scored(layout, params))  # fmt: skip
    tracked = tracker.finish(layout, params)
    assert tracked is not None and tracked.created
    # How many were built ahead depends on how soon the child was ready; never more.
    assert 0 <= tracker.prebuilt <= len(SCENARIOS)
    assert len(logged_responses(uri, tracked.run_id)) == tracked.traces_logged > len(SCENARIOS)
