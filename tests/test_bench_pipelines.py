"""`dvc repro` of pipelines/throughput and pipelines/code_retrieval in a clone of this
repository (a clone keeps main's history, which the code retrieval queries are read from),
offline, at their committed `pr` sizes (forced: the clone carries the committed reports); each logs
one MLflow run, and code retrieval's gate stage holds against the committed baseline."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def sh(cmd: list[str], cwd: Path) -> str:
    env = dict(os.environ, DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def logged_run(clone: Path, run_id: str) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{clone / 'mlflow.db'}").get_run(run_id)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "repo"
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the code retrieval queries need the history")
    sh(["git", "clone", "-q", str(ROOT), str(path)], ROOT)
    count = sh(["git", "rev-list", "--count", "HEAD"], path).strip()
    assert int(count) > 100  # the whole history came along, not one commit
    return path


def test_code_retrieval_pipeline_reports_bm25_against_git_grep_and_gates(clone: Path) -> None:
    out = sh(["dvc", "repro", "--force", "pipelines/code_retrieval/dvc.yaml"], clone)
    assert "gate: PASS" in out and "gate: gate:" not in out, out
    results = json.loads((clone / "pipelines/code_retrieval/reports/results.json").read_text())
    assert results["metrics"]["bm25"]["mrr"] > results["metrics"]["git grep"]["mrr"]
    for case in results["robustness"]:
        assert f"{case['kind']} {case['case']!r}: {case['status']}" in out
    run = json.loads((clone / "pipelines/code_retrieval/reports/mlflow_run.json").read_text())
    assert run["enabled"] and run["run_id"]
    logged = logged_run(clone, run["run_id"])
    assert logged.data.tags["suite.kind"] == "code_retrieval"
    assert logged.data.metrics["pipelines.bm25.mrr"] == results["metrics"]["bm25"]["mrr"]


def test_throughput_pipeline_measures_both_protocols_and_tracks_once(clone: Path) -> None:
    out = sh(["dvc", "repro", "--force", "pipelines/throughput/dvc.yaml"], clone)
    results = json.loads((clone / "pipelines/throughput/reports/results.json").read_text())
    assert set(results["endpoints"]) == {"loopback-openai", "loopback-anthropic"}
    for name, run in results["endpoints"].items():
        assert list(run["levels"]) == ["1", "4", "16", "64"]
        assert run["accuracy"]["answered"] > 0 and f"run: {name} c64" in out
    run = json.loads((clone / "pipelines/throughput/reports/mlflow_run.json").read_text())
    assert run["enabled"] and run["run_id"]
    logged = logged_run(clone, run["run_id"])
    assert logged.data.tags["suite.kind"] == "throughput"
    assert "loopback-openai.c4.latency_ms.p95" in logged.data.metrics
    status = sh(["dvc", "status", "pipelines/throughput/dvc.yaml"], clone)
    assert "changed" not in status
