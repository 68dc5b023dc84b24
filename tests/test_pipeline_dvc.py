"""The repository as users run it: `dvc repro` in a fresh copy, offline.

A second `dvc repro` runs nothing and `dvc status` is up to date (no stage is
always_changed). Changing the judge must re-grade stored transcripts without running the
agent again, a changed corpus file is a changed output that `dvc repro` restores, and a
forced rerun must reproduce the scorecard byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agenteval.fileio import sha256_file

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", ".ci-venv*", "data", "runs", "mlflow.db", ".git", ".*cache*", "__pycache__", "reports"
)


STAGES = ("fetch", "suite", "infer", "judge", "score", "stats", "report", "controls", "track")
UP_TO_DATE = "Data and pipelines are up to date."
AGENTEVAL = [sys.executable, "-m", "agenteval"]


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUTF8="1", DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def sh(cmd: list[str], cwd: Path) -> str:
    done = run(cmd, cwd)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def status(repo: Path) -> dict[str, Any]:
    """`dvc status` of the default pipeline (dvc.yaml; the benchmark variants under
    pipelines/ are reproduced on their own)."""
    found: dict[str, Any] = json.loads(
        sh(["dvc", "status", "dvc.yaml", "--json"], repo).splitlines()[-1] or "{}"
    )
    return found


def assert_nothing_ran(out: str) -> None:
    assert "Running stage" not in out, out
    for stage in STAGES:
        assert f"Stage '{stage}' didn't change, skipping" in out, (stage, out)


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


def test_a_second_repro_runs_nothing_and_status_is_up_to_date(repo: Path) -> None:
    assert_nothing_ran(sh(["dvc", "repro"], repo))
    assert sh(["dvc", "status", "dvc.yaml"], repo).strip() == UP_TO_DATE
    assert status(repo) == {}


def test_a_fresh_copy_reproduces_the_committed_results(repo: Path) -> None:
    """A clean checkout stays clean: `dvc repro` in a copy without data/, reports/ or caches
    writes exactly the committed reports and dvc.lock (generated files such as __pycache__
    are never hashed as deps, and the offline pipeline's outputs are deterministic)."""
    # Bytecode (written whenever PYTHONDONTWRITEBYTECODE is unset) is never a stage dep.
    pycache = repo / "agenteval/schema/__pycache__"
    pycache.mkdir(exist_ok=True)
    (pycache / "junk.cpython-311.pyc").write_bytes(b"\x00generated")
    assert status(repo) == {}
    ignored = ("mlflow_run.json", "tracked.json")  # per workspace, git-ignored
    for path in sorted((ROOT / "reports").rglob("*")):
        if path.is_file() and "compare" not in path.parts and path.name not in ignored:
            made = repo / path.relative_to(ROOT)
            assert made.read_bytes() == path.read_bytes(), path.relative_to(ROOT)
    committed = yaml.safe_load((ROOT / "dvc.lock").read_text())["stages"]
    fresh = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    # track's params differ by design: this copy switches tracking.traces off (see the
    # fixture). Its output, what was logged, is the same in every clone.
    for stages in (committed, fresh):
        stages["track"].pop("params")
    assert fresh == committed


def test_a_changed_corpus_file_is_a_changed_output_that_repro_restores(repo: Path) -> None:
    """The pins hold between runs by DVC's own output hashes; `agenteval fetch --verify`
    re-hashes every file on request and names the one that differs."""
    path = repo / "data/corpora/gnu_licenses/gpl-3.0.txt"
    pinned = path.read_bytes()
    path.unlink()  # a tool rewriting it (the laid-out file may be a read-only hardlink)
    path.write_bytes(pinned.replace(b"GNU", b"GNV", 1))
    assert status(repo) == {
        "fetch": [{"changed outs": {"data/corpora": "modified"}}],
        "suite": [{"changed deps": {"data/corpora": "modified"}}],
    }
    checked = run([*AGENTEVAL, "fetch", "--verify"], repo)
    assert checked.returncode == 1
    assert f"{path.relative_to(repo)}: sha256 mismatch for gnu_licenses/gpl-3.0.txt" in (
        checked.stderr
    )
    out = sh(["dvc", "repro"], repo)
    assert path.read_bytes() == pinned
    assert "Stage 'suite' didn't change, skipping" in out  # the same corpus: nothing else runs
    assert status(repo) == {}
    assert sh([*AGENTEVAL, "fetch", "--verify"], repo).strip().endswith(": all match")


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
    tracked = json.loads((repo / "reports/tracked.json").read_text())
    assert tracked == {"enabled": True, "experiment": "agenteval",
                       "metrics_sha256": sha256_file(repo / "reports/metrics.json")}  # fmt: skip


def test_track_logs_into_another_store_on_request(repo: Path, tmp_path: Path) -> None:
    """DVC cannot see the MLflow store: a fresh or other store gets the run by asking."""
    (baseline,) = runs(repo)
    other = f"sqlite:///{(tmp_path / 'other.db').as_posix()}"
    out = sh([*AGENTEVAL, "track", "--tracking-uri", other, "--no-traces"], repo)
    assert out.startswith("logged run ") and other in out
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=other)
    experiment = client.get_experiment_by_name("agenteval")
    assert experiment is not None
    (copy,) = client.search_runs([experiment.experiment_id])
    assert copy.info.run_id != baseline.info.run_id
    assert copy.data.tags["agenteval.run_key"] == baseline.data.tags["agenteval.run_key"]
    assert copy.data.metrics["total"] == baseline.data.metrics["total"]
    again = sh([*AGENTEVAL, "track", "--tracking-uri", other, "--no-traces"], repo)
    assert again.startswith(f"already logged as run {copy.info.run_id}")
    assert len(client.search_runs([experiment.experiment_id])) == 1
    assert_nothing_ran(sh(["dvc", "repro"], repo))  # DVC's outputs untouched


def test_changing_the_judge_does_not_rerun_the_agent(repo: Path) -> None:
    transcripts = sorted((repo / "data/transcripts").rglob("*.json"))
    before = {p: p.stat().st_mtime_ns for p in transcripts}
    card_before = json.loads((repo / "reports/scorecard.json").read_text())
    set_param(repo, "judge", "pass_threshold", 7.0)
    stale = status(repo)
    assert "judge" in stale and "score" in stale
    assert "infer" not in stale and "suite" not in stale
    out = sh(["dvc", "repro"], repo)
    assert "Stage 'infer' didn't change, skipping" in out and "Running stage 'judge'" in out
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
    out = sh(["dvc", "repro"], repo)
    # The agent is not asked again: the judge's params changed, not inference's inputs.
    assert "Stage 'infer' didn't change, skipping" in out
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
