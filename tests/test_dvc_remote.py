"""A DVC remote shares a run: `dvc push` here, `dvc pull` in a teammate's clone, and the
teammate's `dvc repro` reproduces the reports byte for byte without one model request. The
response cache travels too, so even a re-inference from scratch asks the model nothing.

The run is a real model run (the `chat` target on a local OpenAI-compatible server), so
"without calling any model" is counted by the server, not assumed.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml
from servers.common import Reply
from servers.openai_server import OpenAIServer
from test_pipeline_dvc import IGNORE, ROOT, sh

from agenteval.llm.config import DEFAULT_CACHE_DIR
from agenteval.schema.params import RunParams

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
SCENARIOS = ["false_premise", "incident_followups"]
RESPONSE_CACHE = Path(DEFAULT_CACHE_DIR)


def write_params(repo: Path, base_url: str) -> None:
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
        assert any((theirs / RESPONSE_CACHE).rglob("*.json"))  # the response cache came too
        sh(["dvc", "repro"], theirs)
        assert server.request_count == asked  # the teammate's repro asked the model nothing
        assert reports(theirs) == reports(mine)
        assert (theirs / "dvc.lock").read_bytes() == (mine / "dvc.lock").read_bytes()

        # Inference from scratch: every conversation is run again, and the pulled response
        # cache answers every request...
        shutil.rmtree(theirs / "data/transcripts")
        sh(["dvc", "repro", "-s", "infer"], theirs)
        with_cache = server.request_count - asked
        # ...which only the cache can do: without it the same re-inference asks the model.
        shutil.rmtree(theirs / "data/transcripts")
        shutil.rmtree(theirs / RESPONSE_CACHE)
        sh(["dvc", "repro", "-s", "infer"], theirs)
        without_cache = server.request_count - asked - with_cache
        print(f"model requests: run {asked}, re-inference with the pulled cache {with_cache}, "
              f"without it {without_cache}")  # fmt: skip
        assert with_cache == 0 and without_cache > 0


def test_the_pushed_response_cache_is_the_default_one() -> None:
    """dvc.yaml names the cache literally (DVC templating cannot express a null cache_dir):
    it must be the directory the model clients write by default."""
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    outs = [next(iter(out)) if isinstance(out, dict) else out for out in stages["infer"]["outs"]]
    assert str(RESPONSE_CACHE) in outs
    assert RunParams().cache_dir == DEFAULT_CACHE_DIR
