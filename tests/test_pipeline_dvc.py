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
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", ".ci-venv", "data", "runs", "mlflow.db", ".git", ".*cache*", "__pycache__", "reports"
)


def sh(cmd: list[str], cwd: Path) -> str:
    env = dict(os.environ, PYTHONUTF8="1", DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pipeline") / "repo"
    shutil.copytree(ROOT, path, ignore=IGNORE)
    # Conversations as traces are covered by tests/test_track.py; here they would only slow
    # every repro down.
    set_param(path, "tracking", "traces", False)
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
    for name in ("scorecard.json", "metrics.json", "summary.md", "plots/category_pass_rate.json"):
        assert (repo / "reports" / name).is_file(), name
    assert (repo / "data/suite.json").is_file()
    assert any((repo / "data/transcripts").rglob("0.json"))
    status = json.loads(sh(["dvc", "status", "dvc.yaml", "--json"], repo).splitlines()[-1] or "{}")
    # fetch re-verifies the pinned corpora, infer retries units that may succeed now
    # (run.retry_statuses) and track makes sure the store has the run, on every repro by
    # design; nothing else is stale.
    always = ["always changed"]
    assert status == {"fetch": always, "infer": always, "track": always}


def test_a_fresh_copy_reproduces_the_committed_results(repo: Path) -> None:
    """A clean checkout stays clean: `dvc repro` in a copy without data/, reports/ or caches
    writes exactly the committed reports and dvc.lock (generated files such as __pycache__
    are never hashed as deps, and the offline pipeline's outputs are deterministic)."""
    # Bytecode (written whenever PYTHONDONTWRITEBYTECODE is unset) is never a stage dep.
    pycache = repo / "agenteval/schema/__pycache__"
    pycache.mkdir(exist_ok=True)
    (pycache / "junk.cpython-311.pyc").write_bytes(b"\x00generated")
    status = json.loads(sh(["dvc", "status", "dvc.yaml", "--json"], repo).splitlines()[-1] or "{}")
    assert "suite" not in status and "infer" in status  # infer: always changed, by design
    for path in sorted((ROOT / "reports").rglob("*")):
        if path.is_file() and "compare" not in path.parts and path.name != "mlflow_run.json":
            made = repo / path.relative_to(ROOT)
            assert made.read_bytes() == path.read_bytes(), path.relative_to(ROOT)
    committed = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"]
    fresh = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    # track differs by design: this copy switches tracking.traces off (see the fixture).
    assert {k: v for k, v in fresh.items() if k != "track"} == {
        k: v for k, v in committed.items() if k != "track"
    }


def runs(repo: Path) -> list[Any]:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{repo / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("agenteval")
    assert experiment is not None
    return list(client.search_runs([experiment.experiment_id], order_by=["start_time ASC"]))


def test_repro_logs_one_mlflow_run_with_provenance(repo: Path) -> None:
    (run,) = runs(repo)
    tags, params = run.data.tags, run.data.params
    card = json.loads((repo / "reports/scorecard.json").read_text())
    for tag, field in (("suite", "scenario_set"), ("corpus", "corpus"), ("params", "params")):
        assert tags[f"{tag}.digest"] == card["config"][f"{field}_digest"][:8]
    assert tags["agent.model"] == "builtin-bm25"
    assert tags["judge.kind"] == "code" and len(tags["dvc.lock.digest"]) == 8
    assert len(tags["mlflow.source.git.commit"]) == 40
    assert params["target.kind"] == "builtin" and "judge.pass_threshold" in params
    assert run.data.metrics["total"] == card["summary"]["total"]
    record = json.loads((repo / "reports/mlflow_run.json").read_text())
    assert record["run_id"] == run.info.run_id
    sh(["dvc", "repro", "--force", "track"], repo)  # same results: the same run, not a second
    assert len(runs(repo)) == 1


def test_changing_the_judge_does_not_rerun_the_agent(repo: Path) -> None:
    transcripts = sorted((repo / "data/transcripts").rglob("*.json"))
    before = {p: p.stat().st_mtime_ns for p in transcripts}
    card_before = json.loads((repo / "reports/scorecard.json").read_text())
    set_param(repo, "judge", "pass_threshold", 7.0)
    status = json.loads(sh(["dvc", "status", "dvc.yaml", "--json"], repo).splitlines()[-1])
    assert "judge" in status and "score" in status
    assert status["infer"] == ["always changed"] and "suite" not in status
    sh(["dvc", "repro"], repo)
    # infer ran (to retry what may succeed now) but reused every transcript untouched.
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


def test_exp_run_with_another_model_is_a_second_comparable_run(repo: Path) -> None:
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    sh([*git, "add", "-A"], repo)
    sh([*git, "commit", "-qm", "baseline results"], repo)
    before = len(runs(repo))
    # The committed results' run: identical results are logged once, so it need not be the
    # latest run in the store (the pass_threshold=7 run above came later).
    baseline_id = json.loads((repo / "reports/mlflow_run.json").read_text())["run_id"]
    sh(["dvc", "exp", "run", "-S", "target.model=builtin-k2", "-S", "target.params.top_k=2"], repo)
    after = runs(repo)
    assert len(after) == before + 1
    (old,) = [r for r in after if r.info.run_id == baseline_id]
    new = after[-1]
    changed = {k for k in old.data.params.keys() | new.data.params.keys()
               if old.data.params.get(k) != new.data.params.get(k)}  # fmt: skip
    assert changed == {"target.model", "target.params.top_k"}
    assert new.data.tags.get("dvc.exp")
    assert set(old.data.metrics) >= {"pass_rate", "avg_score"} <= set(new.data.metrics)
    diff = json.loads(
        sh(
            ["dvc", "metrics", "diff", "--targets", "reports/metrics.json", "--json"], repo
        ).splitlines()[-1]
    )
    deltas = diff["reports/metrics.json"]
    # top_k=2 retrieves less: the headline score moves and dvc shows old, new and the delta.
    assert deltas["avg_score"]["diff"] == pytest.approx(
        deltas["avg_score"]["new"] - deltas["avg_score"]["old"]
    )


def test_repro_with_controls_per_run_reports_the_calibration_everywhere(repo: Path) -> None:
    transcripts = sorted((repo / "data/transcripts").rglob("*.json"))
    before = {p: p.stat().st_mtime_ns for p in transcripts}
    set_param(repo, "judge", "controls_per_run", 20)
    sh(["dvc", "repro"], repo)
    # The agent is not asked again: infer runs (always) but reuses every transcript.
    assert {p: p.stat().st_mtime_ns for p in transcripts} == before
    card = json.loads((repo / "reports/scorecard.json").read_text())
    cal = card["calibration"]
    assert cal["controls"] == 20 and cal["split"] == "held"
    assert [c["label"] for c in cal["cases"]].count("fail") == 10
    assert {"value", "low", "high"} <= set(cal["false_pass_rate"]) and cal["agreement"]["low"]
    assert card["summary"]["total"] == len({r["id"] for r in card["scenarios"]})  # kept apart
    summary = (repo / "reports/summary.md").read_text()
    assert "Calibration on 20 labelled held controls judged inside this run" in summary
    metrics = runs(repo)[-1].data.metrics
    assert metrics["calibration.controls"] == 20
    assert metrics["calibration.agreement"] == cal["agreement"]["value"]
    assert metrics["calibration.false_pass_rate"] == cal["false_pass_rate"]["value"]
    assert "calibration.false_pass_rate.high" in metrics
