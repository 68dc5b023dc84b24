"""A DVC remote shares a run: `dvc push` here, `dvc pull` in a teammate's clone, and the
teammate's `dvc repro` reproduces the reports byte for byte without one model request.

The run is a real model run (the `chat` target on a local OpenAI-compatible server), so
"without calling any model" is counted by the server, not assumed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from servers.common import Reply
from servers.openai_server import OpenAIServer
from test_pipeline_dvc import IGNORE, ROOT, sh

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
SCENARIOS = ["false_premise", "incident_followups"]


def write_params(repo: Path, base_url: str) -> None:
    import yaml

    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["suite"]["ids"] = SCENARIOS
    params["target"] |= {"kind": "chat", "protocol": "openai", "base_url": base_url,
                         "model": "team-model"}  # fmt: skip
    params["tracking"]["enabled"] = False
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def reports(repo: Path) -> dict[str, bytes]:
    folder = repo / "reports"
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in folder.rglob("*")
        if p.is_file() and p.name != "mlflow_run.json"
    }


def test_a_teammate_pulls_the_run_and_reproduces_it_without_a_model(tmp_path: Path) -> None:
    remote, mine, theirs = tmp_path / "remote", tmp_path / "mine", tmp_path / "theirs"
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents.")) as server:
        shutil.copytree(ROOT, mine, ignore=IGNORE)
        write_params(mine, server.base_url)
        sh(["git", "init", "-q"], mine)
        sh(["dvc", "remote", "add", "-d", "team", str(remote)], mine)
        sh(["dvc", "repro"], mine)
        asked = server.request_count
        assert asked > 0
        sh([*GIT, "add", "-A"], mine)
        sh([*GIT, "commit", "-qm", "a model run"], mine)
        pushed = sh(["dvc", "push", "dvc.yaml"], mine)
        assert "pushed" in pushed and any(remote.rglob("*")), pushed

        sh(["git", "clone", "-q", str(mine), str(theirs)], tmp_path)
        assert not (theirs / "data" / "transcripts").exists()
        sh(["dvc", "pull", "dvc.yaml"], theirs)
        assert sorted(p.name for p in (theirs / "data/transcripts").rglob("*.json")) == sorted(
            p.name for p in (mine / "data/transcripts").rglob("*.json")
        )
        sh(["dvc", "repro"], theirs)
        assert server.request_count == asked  # the teammate's repro asked the model nothing
    assert reports(theirs) == reports(mine)
    assert (theirs / "dvc.lock").read_bytes() == (mine / "dvc.lock").read_bytes()
