"""The repository as users run it: `dvc repro` in a fresh copy, offline.

Changing the judge must re-grade stored transcripts without running the agent again, and a
forced rerun must reproduce the scorecard byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", ".ci-venv", "data", "runs", "mlflow.db", ".git", ".*cache*", "__pycache__", "reports"
)


def sh(cmd: list[str], cwd: Path) -> str:
    env = dict(os.environ, PYTHONUTF8="1", DVC_NO_ANALYTICS="1")
    env.pop("DVC_ROOT", None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pipeline") / "repo"
    shutil.copytree(ROOT, path, ignore=IGNORE)
    sh(["git", "init", "-q"], path)
    sh(["git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A"], path)
    sh(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "copy"], path)
    sh(["dvc", "repro"], path)
    return path


def set_param(repo: Path, section: str, key: str, value: object) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params[section][key] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def test_repro_produces_reports(repo: Path) -> None:
    for name in ("scorecard.json", "metrics.json", "summary.md", "plots/category_pass_rate.png"):
        assert (repo / "reports" / name).is_file(), name
    assert (repo / "data/suite.json").is_file()
    assert any((repo / "data/transcripts").rglob("0.json"))
    status = json.loads(sh(["dvc", "status", "--json"], repo).splitlines()[-1] or "{}")
    assert status == {}


def test_changing_the_judge_does_not_rerun_the_agent(repo: Path) -> None:
    transcripts = sorted((repo / "data/transcripts").rglob("*.json"))
    before = {p: p.stat().st_mtime_ns for p in transcripts}
    card_before = json.loads((repo / "reports/scorecard.json").read_text())
    set_param(repo, "judge", "pass_threshold", 7.0)
    status = json.loads(sh(["dvc", "status", "--json"], repo).splitlines()[-1])
    assert "judge" in status and "score" in status
    assert "infer" not in status and "suite" not in status
    out = sh(["dvc", "repro"], repo)
    assert "Stage 'infer' didn't change, skipping" in out
    assert {p: p.stat().st_mtime_ns for p in transcripts} == before
    card = json.loads((repo / "reports/scorecard.json").read_text())
    assert card["config"]["judge"]["rules"]["pass_threshold"] == 7.0
    assert card["summary"]["passed"] <= card_before["summary"]["passed"]
    set_param(repo, "judge", "pass_threshold", 6.0)
    sh(["dvc", "repro"], repo)


def test_forced_rerun_is_byte_identical(repo: Path) -> None:
    first = (repo / "reports/scorecard.json").read_bytes()
    metrics = (repo / "reports/metrics.json").read_bytes()
    # Transcripts persist across runs (resume); remove them so the agent really runs again.
    shutil.rmtree(repo / "data/transcripts")
    shutil.rmtree(repo / "data/verdicts")
    sh(["dvc", "repro", "--force"], repo)
    assert (repo / "reports/scorecard.json").read_bytes() == first
    assert (repo / "reports/metrics.json").read_bytes() == metrics
