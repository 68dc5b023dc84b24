"""`dvc repro pipelines/tasks/dvc.yaml` in a fresh copy of the repository, offline: the core
suite through the scripted harness, code-checked, scored and tracked; a second repro reruns
nothing, and a judge change re-grades without running the agent again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
ANYWHERE = shutil.ignore_patterns(".git", ".*cache*", "__pycache__", "mlflow.db*")
# Run outputs at the top only: the toybox has a data/ folder of its own.
TOP = {".venv", ".ci-venv", "data", "runs", "mlartifacts", "reports", "test-artifacts"}


def ignore(folder: str, names: list[str]) -> set[str]:
    """What a fresh clone lacks: run outputs at the top and in each pipeline variant."""
    here = Path(folder)
    top = TOP if here == ROOT else set()
    if here.parent == ROOT / "pipelines":
        top = {"data", "mlflow_run.json"}
    if here.parent.parent == ROOT / "pipelines" and here.name == "reports":
        top = {"mlflow_run.json"}
    return set(ANYWHERE(folder, names)) | (top & set(names))


def sh(cmd: list[str], cwd: Path) -> str:
    env = dict(os.environ, DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_dvc_repro_runs_the_core_suite_offline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=ignore)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    sh(["git", "init", "-q"], repo)
    sh([*git, "add", "-A"], repo)
    sh([*git, "commit", "-qm", "copy"], repo)
    out = sh(["dvc", "repro", "pipelines/tasks/dvc.yaml"], repo)
    assert "run: COMPLETED 7" in out and "score: 7/7 passed, 6/6 verified" in out
    reports = repo / "pipelines/tasks/reports"
    card = json.loads((reports / "scorecard.json").read_text())
    assert card["sandbox"] == "bwrap, network off"  # the pipeline's default: sealed
    results = {row["task_id"]: row["result"] for row in card["tasks"]}
    assert set(results.values()) == {"PASS"}  # the question too: code reads its points
    assert json.loads((reports / "mlflow_run.json").read_text())["enabled"]
    assert "| r0 | 7/7 |" in (reports / "summary.md").read_text()
    status = sh(["dvc", "status", "pipelines/tasks/dvc.yaml"], repo)
    assert "changed" not in status
    params_file = repo / "pipelines/tasks/params.yaml"
    params = yaml.safe_load(params_file.read_text())
    params["tasks"]["judge"]["max_attempts"] = 3
    params_file.write_text(yaml.safe_dump(params, sort_keys=False))
    out = sh(["dvc", "repro", "pipelines/tasks/dvc.yaml"], repo)
    assert "Stage 'pipelines/tasks/dvc.yaml:run' didn't change, skipping" in out
    assert "Running stage 'pipelines/tasks/dvc.yaml:judge'" in out
