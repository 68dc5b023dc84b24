"""`agenteval run`'s two-step hand-over to its warmed tracking process (a real child process
and a real sqlite MLflow store): traces logged while the reports are written, the rest once
they are, a run abandoned after the hand-over ends FAILED, a dead child changes nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# Before anything imports mlflow: its telemetry client is decided at import time.
os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_evaluation
from agenteval.report import CHARTS
from agenteval.tracking import background
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


def test_a_prestarted_child_is_the_one_that_logs_the_run(tmp_path: Path) -> None:
    background.prestart()
    early = background._early
    assert early is not None and early.poll() is None
    uri, params, layout, tracker = started(tmp_path)  # tracking on: start claims it
    assert tracker.process is early and background._early is None
    run_evaluation(params, layout, **tracker.hooks(layout, params))
    tracked = tracker.finish(layout, params)
    assert tracked is not None and tracked.created
    assert trace_count(uri, tracked.run_id) == tracked.traces_logged > 0
    assert tracker.streamed == 1  # the scenario's conversation, written while the agent ran


def test_a_prestarted_child_is_killed_when_tracking_is_off(tmp_path: Path) -> None:
    background.prestart()
    early = background._early
    assert early is not None
    off = [f"suite.ids=[{SCENARIO}]", "tracking.enabled=false"]
    params = load_params(ROOT / "params.yaml", off)
    assert BackgroundTracker.start(params, ROOT) is None
    assert early.returncode is not None and background._early is None


def test_a_prestarted_child_that_died_is_replaced(tmp_path: Path) -> None:
    background.prestart()
    early = background._early
    assert early is not None
    early.kill()
    early.wait()
    _, _, _, tracker = started(tmp_path)
    assert tracker.process is not early and tracker.process.poll() is None
    tracker.cancel()


def children_marked(mark: str) -> list[int]:
    """Live processes of the MLflow child that carry `mark` in their environment."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
            environ = (proc / "environ").read_bytes()
        except OSError:
            continue
        if b"agenteval.tracking.background" in cmdline and mark.encode() in environ:
            found.append(int(proc.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_the_command_line_leaves_no_prestarted_child_when_it_refuses(tmp_path: Path) -> None:
    mark = f"AGENTEVAL_TEST_MARK={os.getpid()}-{tmp_path.name}"
    name, _, value = mark.partition("=")
    env = dict(os.environ, **{name: value})
    command = [sys.executable, "-m", "agenteval", "run", "--set", "nope.key=1"]
    # Output to a file, not a pipe: a child left alive would hold a pipe open, and the
    # test would wait for it to exit before it looks.
    with (tmp_path / "stderr.txt").open("w") as stderr:
        code = subprocess.run(command, cwd=ROOT, env=env, stderr=stderr, check=False)
    errors = (tmp_path / "stderr.txt").read_text()
    assert code.returncode == 2, errors
    assert "nope" in errors and "Traceback" not in errors
    assert children_marked(mark) == []  # killed on the way out, not left importing MLflow
