"""`agenteval run`'s two-step hand-over to its warmed tracking process (a real child process
and a real sqlite MLflow store): traces logged while the reports are written, the rest once
they are, a run abandoned after the hand-over ends FAILED, a dead child changes nothing."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

# Before anything imports mlflow: its telemetry client is decided at import time.
os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_evaluation
from agenteval.report import CHARTS
from agenteval.tracking.background import BackgroundTracker
from agenteval.tracking.provenance import run_key
from agenteval.tracking.run import log_evaluation

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "incident_followups"


def params_for(uri: str) -> dict[str, Any]:
    return load_params(
        ROOT / "params.yaml",
        [f"suite.ids=[{SCENARIO}]", f"tracking.uri={uri}", "tracking.experiment=handover"],
    )


def store(tmp_path: Path) -> str:
    (tmp_path / "store").mkdir()
    return f"sqlite:///{(tmp_path / 'store' / 'mlflow.db').as_posix()}"


def runs_of(uri: str, key: str) -> list[Any]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("handover")
    return client.search_runs(
        [experiment.experiment_id], filter_string=f"tags.`agenteval.run_key` = '{key}'"
    )


def trace_count(uri: str, run_id: str) -> int:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name("handover")
    return len(client.search_traces(locations=[experiment.experiment_id], run_id=run_id))


def charts(layout: Layout) -> list[Path]:
    return [layout.reports / "plots" / f"{name}.svg" for name in CHARTS]


def started(tmp_path: Path) -> tuple[str, dict[str, Any], Layout, BackgroundTracker]:
    """A fresh store, the params and run folder of one scenario, and its warming child."""
    uri = store(tmp_path)
    params = params_for(uri)
    tracker = BackgroundTracker.start(params, ROOT)
    assert tracker is not None
    return uri, params, Layout.run_dir(ROOT, tmp_path / "run"), tracker


def test_the_child_logs_the_run_handed_over_after_the_score_step(tmp_path: Path) -> None:
    uri, params, layout, tracker = started(tmp_path)
    result = run_evaluation(params, layout, judged=lambda: tracker.judged(layout),
                            scored=lambda: tracker.scored(layout, params))  # fmt: skip
    assert tracker.handed_over
    # Logging or waiting for the reports: the child cannot end before `finish` says so.
    assert tracker.process.poll() is None
    assert all(p.stat().st_size > 0 for p in charts(layout))
    tracked = tracker.finish(layout, params)
    assert tracked is not None and tracked.created and tracked.traces_logged > 0
    # The folders digested at `judged`, before the score step, give the run's key as it is.
    assert tracked.run_key == run_key(layout, params)[0]
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    assert client.get_run(tracked.run_id).info.status == "FINISHED"
    assert trace_count(uri, tracked.run_id) == tracked.traces_logged
    assert result.scorecard.summary.total == 1


def test_a_run_abandoned_after_the_hand_over_ends_failed_without_traces(tmp_path: Path) -> None:
    uri, params, layout, tracker = started(tmp_path)

    def scored_then_fail() -> None:
        tracker.scored(layout, params)
        raise RuntimeError("the stats step broke")

    with pytest.raises(RuntimeError):
        run_evaluation(params, layout, scored=scored_then_fail)
    tracker.cancel()
    key = run_key(layout, params)[0]
    (abandoned,) = runs_of(uri, key)
    assert abandoned.info.status == "FAILED"
    assert trace_count(uri, abandoned.info.run_id) == 0  # its traces were removed
    again = log_evaluation(layout, params)  # a later attempt logs a fresh, complete run
    assert again is not None and again.created and again.run_id != abandoned.info.run_id


def test_a_dead_child_leaves_the_logging_to_the_parent(tmp_path: Path) -> None:
    uri, params, layout, tracker = started(tmp_path)
    tracker.process.kill()
    tracker.process.wait()
    run_evaluation(params, layout, scored=lambda: tracker.scored(layout, params))
    assert not tracker.handed_over
    tracked = tracker.finish(layout, params)  # logged in-process instead
    assert tracked is not None and tracked.created
    assert all(p.is_file() for p in charts(layout))
    assert trace_count(uri, tracked.run_id) == tracked.traces_logged > 0
