"""`dvc repro pipelines/sessions/dvc.yaml` in a copy of the repository, over a pinned
dataset, with the agent and the judge on local OpenAI-compatible servers.

The pipeline's input is the pinned dataset file, never the transcripts folder; DVC hashes
only the no-text records under reports/; a new judge setting re-grades without calling the
agent again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import yaml
from servers import OpenAIServer
from servers import session_judges as judges

from agenteval.fileio import sha256_file
from tests.sessions_world import ROOT, agent_reply, make_world

IGNORE = shutil.ignore_patterns(
    ".git",
    "data",
    "runs",
    "mlflow.db*",
    ".*cache*",
    "__pycache__",
    "mlartifacts",
    ".venv",
    ".ci-venv*",
)
VARIANT = "pipelines/sessions"


def sh(cmd: list[str], cwd: Path) -> str:
    env = dict(os.environ, DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true")
    env["PYTHONPATH"] = str(cwd)  # the copy's code, not the shared venv's install
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME"):
        env.pop(name, None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{cmd}: {done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def set_params(repo: Path, **sessions: object) -> None:
    path = repo / VARIANT / "params.yaml"
    params = yaml.safe_load(path.read_text())
    for dotted, value in sessions.items():
        node = params
        *parents, last = dotted.split("__")
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def test_the_sessions_variant_replays_a_pinned_dataset(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=IGNORE)
    variant = repo / VARIANT
    shutil.copy(variant / "dvc.template.yaml", variant / "dvc.yaml")  # as docs/sessions.md
    projects, _ = make_world(tmp_path / "machine")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    sh(["git", "init", "-q"], repo)
    sh([*git, "add", "-A"], repo)
    sh([*git, "commit", "-qm", "copy"], repo)
    build = ["python", "-m", "agenteval", "sessions", "--dataset-only", "--limit", "20"]
    sh([*build, "--transcripts", str(projects), "--out", "runs/sessions-pinned"], repo)
    pinned = repo / "runs/sessions-pinned/dataset.json"
    with (
        OpenAIServer(reply_fn=agent_reply) as agent,
        OpenAIServer(reply_fn=judges.graded_by_kind()) as judge,
    ):
        set_params(
            repo,
            sessions__dataset="runs/sessions-pinned/dataset.json",
            sessions__dataset_sha256=sha256_file(pinned),
            sessions__judge__model="judge-model",
            sessions__judge__base_url=judge.base_url,
            target__model="agent-under-test",
            target__base_url=agent.base_url,
            tracking__uri=f"sqlite:///{tmp_path}/mlflow.db",
        )
        out = sh(["dvc", "repro", f"{VARIANT}/dvc.yaml"], repo)
        assert "replay: COMPLETED 5, SKIPPED_NO_DOCUMENT 2" in out
        assert "controls passed" in out and "track: logged run" in out
        replayed = agent.request_count
        set_params(repo, sessions__judge__max_attempts=2)
        again = sh(["dvc", "repro", f"{VARIANT}/dvc.yaml"], repo)
        assert agent.request_count == replayed  # the agent is not asked again
    assert f"Stage '{VARIANT}/dvc.yaml:replay' didn't change, skipping" in again
    assert f"Running stage '{VARIANT}/dvc.yaml:judge'" in again
    private = repo / "runs/sessions-pipeline"
    assert {"dataset.json", "results.json", "scorecard.json", "report.md"} <= {
        p.name for p in private.iterdir()
    }
    reports = repo / VARIANT / "reports"
    card = json.loads((reports / "scorecard.json").read_text())
    assert card["counts"]["judged"] == 5 and card["trusted"]
    for path in reports.iterdir():  # what DVC hashes holds no request text
        assert "endpoints are missing" not in path.read_text(), path
    assert "up to date" in sh(["dvc", "status", f"{VARIANT}/dvc.yaml"], repo)


def test_the_variant_refuses_to_run_without_a_pin(tmp_path: Path) -> None:
    done = subprocess.run(
        ["python", "-m", "stages.sessions_replay"],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert "set sessions.dataset and sessions.dataset_sha256" in done.stderr
    assert "Traceback" not in done.stderr
