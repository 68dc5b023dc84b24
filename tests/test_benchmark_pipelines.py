"""The benchmarks as users run them, offline: `agenteval qa` steps with details and summary,
the MLflow run with provenance, and `dvc repro` of pipelines/qa and pipelines/retrieval in a
fresh copy of the repository (about a minute: ranx compiles its kernels in the copy).
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

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import RunContext, benchmark, context, settings_of
from agenteval.benchmarks.qa import steps as qa
from agenteval.layout import Layout

ROOT = Path(__file__).resolve().parents[1]
IDS = ["hl_q2_net_revenue", "fo_parental_leave", "qf_runbook_owner", "ds_late_fee_in_force"]
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
    "dvc.lock",
)


def qa_params(k: int, tmp: Path) -> dict[str, Any]:
    params = runner.load(benchmark("qa"), ROOT / "pipelines/qa/params.yaml", [f"qa.k={k}"])
    params["qa"]["ids"] = IDS
    params["tracking"]["uri"] = f"sqlite:///{tmp / 'mlflow.db'}"
    return params


def qa_context(params: dict[str, Any], lock: Path | None = None) -> RunContext:
    return context(params, ROOT, lock)


def run_qa(params: dict[str, Any], layout: Layout) -> qa.Scored:
    """Every step of the QA benchmark into one layout, as `agenteval qa` runs them."""
    return qa.run_qa(settings_of(benchmark("qa"), params), qa_context(params), layout)


def step_qa_track(params: dict[str, Any], layout: Layout, lock: Path) -> Any:
    """What the track step logs (agenteval.benchmarks.runner.track), its result kept."""
    from agenteval.benchmarks.tracking import log_benchmark

    config, artifacts = qa.tracked(qa_context(params, lock), layout)
    return log_benchmark(layout, params, config, kind="qa", lock=lock, artifacts=artifacts)


def test_qa_run_writes_details_summary_and_metrics(tmp_path: Path) -> None:
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    scored = run_qa(qa_params(2, tmp_path), layout)
    metrics = json.loads(layout.metrics.read_text())
    assert metrics == scored.metrics and metrics["k"] == 2 and metrics["seeds"] == [0, 1]
    for name in ("correct.native@1", "correct.avg@2", "correct.pass@2", "correct.pass^2"):
        block = metrics[name]
        assert set(block) >= {"value", "low", "high", "evaluated", "error", "unavailable", "total"}
        assert block["evaluated"] + block["error"] + block["unavailable"] == block["total"] == 4
    detail = json.loads((layout.reports / "details/hl_q2_net_revenue.json").read_text())
    attempt = detail["attempts"]["1"]
    scoring = attempt["meta"]["benchmark"]["scoring"]
    assert (
        attempt["metrics"]["correct"] in (0, 1, None) and scoring["ground_truth"] == "$8.6 million"
    )
    assert scoring["verdict"] in ("A", "B", "C", None) and attempt["trajectory"]["turns"]
    summary = (layout.reports / "summary.md").read_text()
    assert "## Attempt plan" in summary and "`correct.pass^2`" in summary


def test_k1_summary_is_the_plain_table(tmp_path: Path) -> None:
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    run_qa(qa_params(1, tmp_path), layout)
    summary = (layout.reports / "summary.md").read_text()
    assert "`correct.native@1`" in summary and "Attempt plan" not in summary
    assert "| task | level | verdict | rule | answer | truth |" in summary


def test_qa_run_is_tracked_with_provenance_once(tmp_path: Path) -> None:
    from mlflow import MlflowClient

    layout = Layout.run_dir(ROOT, tmp_path / "run")
    params = qa_params(2, tmp_path)
    run_qa(params, layout)
    first = step_qa_track(params, layout, ROOT / "pipelines/qa/dvc.lock")
    again = step_qa_track(params, layout, ROOT / "pipelines/qa/dvc.lock")
    assert first is not None and again is not None
    assert first.created and not again.created and again.run_id == first.run_id
    run = MlflowClient(tracking_uri=params["tracking"]["uri"]).get_run(first.run_id)
    tags = run.data.tags
    assert tags["suite.kind"] == "qa" and tags["agent.model"] == "builtin-bm25"
    assert tags["judge.kind"] == "qa-precheck" and len(tags["mlflow.source.git.commit"]) == 40
    assert tags["suite.digest"] and tags["corpus.digest"]
    assert "prompt.judge_qa.sha256" in tags
    assert "correct.pass_at_2.value" in run.data.metrics and "qa.k" in run.data.params


def test_cli_refuses_a_bad_k_before_any_work(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "qa", "--k", "0", "--out", str(tmp_path / "x")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "qa.k" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "x").exists()


def sh(cmd: list[str], cwd: Path) -> str:
    env = dict(os.environ, DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_dvc_repro_of_both_variants_offline(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=IGNORE)
    qa = repo / "pipelines/qa/params.yaml"
    params = yaml.safe_load(qa.read_text())
    params["qa"]["ids"] = IDS
    qa.write_text(yaml.safe_dump(params, sort_keys=False))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    sh(["git", "init", "-q"], repo)
    sh([*git, "add", "-A"], repo)
    sh([*git, "commit", "-qm", "copy"], repo)
    out = sh(["dvc", "repro", "pipelines/qa/dvc.yaml"], repo)
    assert "Running stage 'fetch'" in out and "tasks: 4 task(s), 3 attempt(s) each" in out
    metrics = json.loads((repo / "pipelines/qa/reports/metrics.json").read_text())
    assert metrics["correct.native@1"]["total"] == 4 and len(metrics["seeds"]) == 3
    assert json.loads((repo / "pipelines/qa/reports/mlflow_run.json").read_text())["enabled"]
    out = sh(["dvc", "repro", "pipelines/retrieval/dvc.yaml"], repo)
    assert "hard case 'corrupted index cache': pass" in out
    results = json.loads((repo / "pipelines/retrieval/reports/results.json").read_text())
    assert results["metrics"]["bm25"]["recall@5"] > 0.8
    status = sh(["dvc", "status", "pipelines/qa/dvc.yaml", "pipelines/retrieval/dvc.yaml"], repo)
    assert "changed" not in status.replace("always changed", "")
    # The judge alone re-grades the stored answers: inference is not rerun.
    params["qa"]["judge"]["max_attempts"] = 3
    qa.write_text(yaml.safe_dump(params, sort_keys=False))
    out = sh(["dvc", "repro", "pipelines/qa/dvc.yaml"], repo)
    assert "Stage 'pipelines/qa/dvc.yaml:infer' didn't change, skipping" in out
    assert "Running stage 'pipelines/qa/dvc.yaml:judge'" in out


def test_main_pipeline_refuses_another_suite_kind() -> None:
    from agenteval.params import DEFAULTS, deep_merge
    from agenteval.suite.build import SuiteError, build_suite

    with pytest.raises(SuiteError, match="pipelines/qa"):
        build_suite(deep_merge(DEFAULTS, {"suite": {"kind": "qa"}}), ROOT)


def test_gate_on_qa_runs_lists_flipped_tasks(tmp_path: Path) -> None:
    from agenteval.benchmarks.gate import GateRefused, gate, load_run

    layout = Layout.run_dir(ROOT, tmp_path / "base")
    run_qa(qa_params(1, tmp_path), layout)
    base = load_run(layout.reports)
    assert gate(base, base).passed
    worse = json.loads(json.dumps(base))
    right = [t for t, d in worse["details"].items() if d["correct"] == 1]
    assert len(right) >= 2
    for task in right[:2]:
        worse["details"][task]["correct"] = 0
    worse["correct.native@1"]["value"] -= 2 / 4
    failed = gate(worse, base)
    assert not failed.passed and {f["question"] for f in failed.flipped} == set(right[:2])
    other_k = dict(worse, k=3)
    with pytest.raises(GateRefused, match="attempt"):
        gate(other_k, base)


def test_qa_with_a_chat_agent_and_a_model_judge_over_loopback(tmp_path: Path) -> None:
    from servers import Call, OpenAIServer, Reply

    def reply(body: dict[str, Any]) -> Reply:
        text = json.dumps(body["messages"])
        if "Answer under test" in text:  # the A/B/C judge
            return Reply(text="Verdict: A" if "Venkataraman" in text else "maybe")
        if not any(m.get("role") == "tool" for m in body["messages"]):  # the agent searches
            return Reply(text="", tool_calls=[Call("query_documents", {"query": "runbook owner"})])
        return Reply(text="The runbook belongs to D. Venkataraman.\nFINAL ANSWER: D. Venkataraman")

    with OpenAIServer(reply_fn=reply) as server:
        params = qa_params(1, tmp_path)
        params["qa"]["ids"] = ["qf_runbook_owner"]
        params["target"] |= {
            "kind": "chat",
            "model": "agent-model",
            "base_url": server.base_url,
            "protocol": "openai",
        }
        params["qa"]["judge"] |= {
            "kind": "llm",
            "model": "judge-model",
            "base_url": server.base_url,
        }
        params["run"]["cache_dir"] = None
        layout = Layout.run_dir(ROOT, tmp_path / "run")
        scored = run_qa(params, layout)
    (verdict,) = scored.verdicts
    assert verdict.answer == "D. Venkataraman" and verdict.rule == "absent"
    assert (verdict.source, verdict.verdict, verdict.correct) == ("judge", "A", 1)
    detail = json.loads((layout.reports / "details/qf_runbook_owner.json").read_text())
    scoring = detail["attempts"]["0"]["meta"]["benchmark"]["scoring"]
    assert scoring["judge"] == {"kind": "qa-llm", "model": "judge-model"}
    calls = detail["attempts"]["0"]["trajectory"]["turns"][0]["tool_calls"]
    assert calls[0]["name"] == "query_documents" and calls[0]["ok"]


def test_a_self_judging_configuration_is_refused_before_inference(tmp_path: Path) -> None:
    params = qa_params(1, tmp_path)
    params["target"] |= {"kind": "chat", "model": "same-model", "base_url": "http://127.0.0.1:9/v1"}
    params["qa"]["judge"] |= {
        "kind": "llm",
        "model": "same-model",
        "base_url": "http://127.0.0.1:9/v1",
    }
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    with pytest.raises(ValueError, match="model under test"):
        run_qa(params, layout)
    assert not layout.transcripts.exists()
