"""Traces written while the evaluation runs (`tracking.live`): a real pipeline run, its
verdicts handed to the background writer as they are written, logged to a local sqlite store."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"  # before anything imports mlflow

from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_evaluation
from agenteval.tracking.live import RECORD, LiveOutcome, LiveTraces, live_choice, record_digest
from agenteval.tracking.policy import TracePolicy, sample_rank
from agenteval.tracking.run import TrackResult, log_evaluation

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["false_premise", "incident_followups"]
ISOLATED_ENV = ("MLFLOW_TRACKING_URI", "DVC_ROOT", "DVC_EXP_NAME", "DVC_EXP_BASELINE_REV")


@dataclass
class Evaluated:
    layout: Layout
    params: dict[str, Any]
    uri: str
    live: LiveOutcome


def client(uri: str) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def with_experiment(params: dict[str, Any], name: str) -> dict[str, Any]:
    return params | {"tracking": params["tracking"] | {"experiment": name}}


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Evaluated]:
    """One evaluation (every conversation traced) whose traces were written as it ran."""
    with pytest.MonkeyPatch.context() as mp:
        for name in ISOLATED_ENV:
            mp.delenv(name, raising=False)
        store = tmp_path_factory.mktemp("store")
        uri = f"sqlite:///{(store / 'mlflow.db').as_posix()}"
        params = load_params(
            ROOT / "params.yaml",
            [f"suite.ids={json.dumps(SCENARIOS)}", f"tracking.uri={uri}", "tracking.traces=all"],
        )
        params = with_experiment(params, "live")
        layout = Layout.run_dir(ROOT, tmp_path_factory.mktemp("run"))
        live = LiveTraces.start(params, layout)
        assert live is not None
        run_evaluation(params, layout, graded=live.graded)
        outcome = live.close()
        assert outcome is not None and not outcome.error, outcome
        yield Evaluated(layout, params, uri, outcome)


def verdict_ids(uri: str, result: TrackResult) -> dict[tuple[str, int], set[str]]:
    path = client(uri).download_artifacts(result.run_id, "verdicts.json")
    table = json.loads(Path(path).read_text(encoding="utf-8"))
    columns = table["columns"]
    found: dict[tuple[str, int], set[str]] = {}
    for row in table["data"]:
        cell = dict(zip(columns, row, strict=True))
        if cell["trace_id"]:
            key = (cell["scenario_id"], int(cell["iteration"]))
            found.setdefault(key, set()).add(cell["trace_id"])
    return found


def stored_ids(uri: str, result: TrackResult) -> set[str]:
    found = client(uri).search_traces(
        locations=[result.experiment_id], run_id=result.run_id, include_spans=False,
        max_results=500,
    )  # fmt: skip
    return {t.info.trace_id for t in found}


def test_traces_written_while_running_become_the_runs_own(evaluated: Evaluated) -> None:
    live = evaluated.live
    assert set(live.written) == {(s, 0) for s in SCENARIOS}
    result = log_evaluation(evaluated.layout, evaluated.params, live=live)
    assert result is not None and result.created and result.run_id == live.run_id
    written = {key: {tid for _, tid, _ in entries} for key, entries in live.written.items()}
    assert verdict_ids(evaluated.uri, result) == written  # none written again at the end
    assert stored_ids(evaluated.uri, result) == set().union(*written.values())
    run = client(evaluated.uri).get_run(result.run_id)
    assert run.info.status == "FINISHED" and run.info.run_name == result.run_name
    assert "agenteval.provisional" not in run.data.tags
    assert "IN PROGRESS" not in run.data.tags["mlflow.note.content"]
    assert not (evaluated.layout.reports / RECORD).exists()
    # Logged again (a resumed run that has nothing left to run): the same run, and this
    # attempt's provisional run deleted with its traces.
    again = LiveTraces.start(evaluated.params, evaluated.layout)
    assert again is not None
    second = again.close()
    assert second is not None and second.run_id != result.run_id
    repeat = log_evaluation(evaluated.layout, evaluated.params, live=second)
    assert repeat is not None and not repeat.created and repeat.run_id == result.run_id
    gone = client(evaluated.uri).get_run(second.run_id)
    assert gone.info.lifecycle_stage == "deleted"


def test_a_trace_the_scorecard_does_not_confirm_is_written_again(evaluated: Evaluated) -> None:
    """A live trace whose record differs from what the scorecard says now (a result changed
    after it was written) is deleted and written again; counts are still checked."""
    params = with_experiment(evaluated.params, "reconciled")
    live = LiveTraces.start(params, evaluated.layout)
    assert live is not None
    for scenario in SCENARIOS:
        live.graded(seen_verdict(scenario))
    outcome = live.close()
    assert outcome is not None and set(outcome.written) == {(s, 0) for s in SCENARIOS}
    changed = (SCENARIOS[0], 0)
    before = {tid for _, tid, _ in outcome.written[changed]}
    outcome.written[changed] = [("not-this", t, c) for _, t, c in outcome.written[changed]]
    result = log_evaluation(evaluated.layout, params, live=outcome)
    assert result is not None and result.created
    now = verdict_ids(evaluated.uri, result)
    assert now[changed].isdisjoint(before)  # written again
    kept = {tid for _, tid, _ in outcome.written[(SCENARIOS[1], 0)]}
    assert now[(SCENARIOS[1], 0)] == kept
    assert stored_ids(evaluated.uri, result) == now[changed] | kept  # the stale ones deleted


def seen_verdict(scenario: str) -> Any:  # what `graded` reads of a verdict
    @dataclass
    class Seen:
        scenario_id: str
        iteration: int

    return Seen(scenario, 0)


def test_a_killed_runs_provisional_run_is_deleted_by_the_next_attempt(
    evaluated: Evaluated,
) -> None:
    params = with_experiment(evaluated.params, "killed")
    first = LiveTraces.start(params, evaluated.layout)
    assert first is not None
    first.graded(seen_verdict(SCENARIOS[1]))
    stopped = first.close()  # then the process dies: nothing logs it
    assert stopped is not None and stopped.written
    left = client(evaluated.uri).get_run(stopped.run_id)
    assert left.info.status == "RUNNING" and left.data.tags["agenteval.provisional"] == "true"
    assert "IN PROGRESS, not a measurement" in left.data.tags["mlflow.note.content"]
    assert read_json(evaluated.layout.reports / RECORD)["run_id"] == stopped.run_id
    resumed = LiveTraces.start(params, evaluated.layout)
    assert resumed is not None
    fresh = resumed.close()
    assert fresh is not None and fresh.run_id != stopped.run_id
    assert client(evaluated.uri).get_run(stopped.run_id).info.lifecycle_stage == "deleted"
    found = client(evaluated.uri).search_traces(
        locations=[stopped.experiment_id], run_id=stopped.run_id, include_spans=False
    )
    assert not found
    resumed_fail = LiveTraces.start(params, evaluated.layout)
    assert resumed_fail is not None
    resumed_fail.abandon()  # the evaluation failed: nothing of it stays visible
    assert client(evaluated.uri).get_run(fresh.run_id).info.lifecycle_stage == "deleted"


def test_live_choice_follows_the_policy_and_never_guesses_the_sample() -> None:
    planned = [(f"s{i}", 0) for i in range(10)]
    first_two = set(sorted(planned, key=sample_rank)[:2])
    chosen = live_choice(TracePolicy("sample", 2), planned)
    for key in planned:
        assert chosen(key, "FAIL") and chosen(key, "ERRORED")
        assert chosen(key, "PASS") == (key in first_two)  # surely in the final sample
    assert all(live_choice(TracePolicy("all", 0), planned)(k, "PASS") for k in planned)
    assert not any(live_choice(TracePolicy("none", 0), planned)(k, "FAIL") for k in planned)
    failures = live_choice(TracePolicy("failures", 50), planned)
    assert failures(planned[0], "FAIL") and not failures(planned[0], "PASS")


def test_record_digest_sees_every_part_of_a_trace() -> None:
    from agenteval.tracking.records import SpanSpec, TurnTrace

    root = SpanSpec("turn", "AGENT", 0, 10, inputs="hi", outputs="hello")
    turn = TurnTrace(root, (), {"agenteval.turn": "1"}, {"k": "v"}, "q", "a")
    assert record_digest(turn) == record_digest(replace(turn))
    for changed in (
        replace(turn, root=replace(root, outputs="bye")),
        replace(turn, tags={"agenteval.turn": "2"}),
        replace(turn, metadata={"k": "w"}),
        replace(turn, response_preview="b"),
    ):
        assert record_digest(changed) != record_digest(turn)
