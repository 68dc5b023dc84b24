"""pipelines/memory as users run it: `dvc repro` in a fresh copy of the repository, offline.

The pr suite's results are byte for byte the committed ones, its gate passes against the
committed baseline, a second repro reruns nothing, a weaker memory configuration fails the
gate by naming the checks that regressed, and the MLflow run is read back through MLflow's
own client: a session per scenario, a trace per chat, the probes' metrics as feedback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv",
    ".ci-venv*",
    "data",
    "runs",
    "mlflow.db*",
    "mlartifacts",
    ".git",
    ".*cache*",
    "__pycache__",
    "reports",
)
MEMORY = "pipelines/memory/dvc.yaml"


def sh(cmd: list[str], cwd: Path, ok: bool = True) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUTF8="1", DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    env["PYTHONPATH"] = str(cwd)  # the copy's code, not the shared environment's install
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    if ok:
        assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def test_dvc_repro_runs_pr_gates_it_and_logs_one_mlflow_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=IGNORE)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    sh(["git", "init", "-q"], repo)
    sh([*git, "add", "-A"], repo)
    sh([*git, "commit", "-qm", "copy"], repo)
    started = time.perf_counter()
    out = sh(["dvc", "repro", MEMORY], repo).stdout
    print(f"dvc repro {MEMORY}: {time.perf_counter() - started:.1f}s (fresh MLflow store)")
    reports = repo / "pipelines/memory/reports"
    assert (reports / "results.json").read_bytes() == (
        ROOT / "pipelines/memory/reports/results.json"
    ).read_bytes()
    assert "gate: PASS" in out
    gate = read(reports / "gate.json")
    assert gate["passed"] and gate["held"] > 0 and not gate["regressed"]
    tracked = read(reports / "mlflow_run.json")
    results = read(reports / "results.json")
    assert tracked["traces"] == results["counts"]["chats"]
    again = sh(["dvc", "repro", MEMORY], repo).stdout
    assert "Running stage" not in again
    _read_back(repo, tracked["run_id"], results)

    # A weaker memory: the run stage reruns, and the gate names what regressed.
    params_file = repo / "pipelines/memory/params.yaml"
    params = yaml.safe_load(params_file.read_text())
    params["memory"]["adapter"]["top_k"] = 1
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    failed = sh(["dvc", "repro", MEMORY], repo, ok=False)
    assert failed.returncode != 0
    assert "gate: FAIL" in failed.stdout and "REGRESSED alex_three_months_of_life/" in failed.stdout


def _read_back(repo: Path, run_id: str, results: dict[str, Any]) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["memory.kind"] == "reference" and run.data.params["suite"] == "pr"
    assert run.data.metrics["checks.failed"] == results["counts"]["failed"]
    experiment = run.info.experiment_id
    traces = client.search_traces(locations=[experiment], max_results=500)
    assert len(traces) == results["counts"]["chats"]
    sessions = {t.info.trace_metadata.get("mlflow.trace.session") for t in traces}
    assert sessions == set(results["scenarios_digest"])
    feedback = [a for t in traces for a in t.info.assessments]
    expected = sum(
        v is not None
        for s in results["scenarios"]
        for p in s["probes"]
        for v in p["metrics"].values()
    )
    assert len(feedback) == expected
    assert {a.name for a in feedback} <= {"shown_recall", "shown_clean", "store_accuracy"}
    planted = [
        a for a in feedback if a.metadata.get("probe") == "planted-push" and a.name == "shown_clean"
    ]
    assert planted and planted[0].value < 1 and "push with --force" in str(planted[0].rationale)
