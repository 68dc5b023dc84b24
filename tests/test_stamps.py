"""Per-unit stamps: each unit records the commit and the time it ran, and a scorecard whose
units span commits says so in its headline and in MLflow.

The end-to-end test stops a run on its quota at commit A, commits B, and resumes: the
resume keeps A's units and runs the rest at B. The repository HEAD is read by real git from
a scratch repository named by GIT_DIR (the run itself works in this checkout)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from servers.openai_server import OpenAIServer
from test_quota_resume import KEY, Quota, cli

from agenteval import stamps
from agenteval.engine import untimed
from agenteval.schema.transcript import Participant, Transcript

ROOT = Path(__file__).resolve().parents[1]


def test_commits_are_listed_in_the_order_they_first_ran() -> None:
    found = stamps.commits_of(
        [("b", "2026-01-02T00:00:00+00:00"), ("a", "2026-01-01T00:00:00+00:00"),
         (None, "2026-01-03T00:00:00+00:00"), ("b", "2026-01-01T12:00:00+00:00")]
    )  # fmt: skip
    assert found == ["a", "b"] and stamps.spans_commits(found)
    assert not stamps.spans_commits(["a", "a"]) and stamps.commits_of([]) == []


def test_outside_git_a_unit_has_no_commit(tmp_path: Path) -> None:
    env_dir = os.environ.pop("GIT_DIR", None)
    try:
        # GIT_CEILING_DIRECTORIES keeps git from finding a repository above tmp_path
        os.environ["GIT_CEILING_DIRECTORIES"] = str(tmp_path.parent)
        assert stamps.head(tmp_path / "not" / "made" / "yet") is None
    finally:
        os.environ.pop("GIT_CEILING_DIRECTORIES")
        if env_dir is not None:
            os.environ["GIT_DIR"] = env_dir


def test_an_in_process_agents_units_carry_no_stamp() -> None:
    """Its output is a function of its code digest: stamping it would only make two
    commits' identical transcripts differ."""
    said = Transcript(scenario_id="s", scenario_digest="d", status="COMPLETED",
                      target=Participant(kind="builtin"), simulator=Participant(kind="scripted"),
                      started_at=stamps.now(), commit="abc")  # fmt: skip
    untimed(said)
    assert said.commit is None and said.started_at is None


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout.strip()


def test_a_resume_across_commits_says_so_in_the_headline_and_in_mlflow(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
         "-m", "A")  # fmt: skip
    first = _git(repo, "rev-parse", "HEAD")
    os.environ["GIT_DIR"] = str(repo / ".git")  # read by the runs this test starts
    try:
        quota = Quota(allowance=1)  # two one-turn scenarios: the quota stops the second
        with OpenAIServer(reply_fn=quota, api_key=KEY) as server:
            out = tmp_path / "run"
            sets = {"target.kind": "chat", "target.model": "quota-model",
                    "target.base_url": server.base_url, "target.api_key_env": "QUOTA_KEY",
                    "run.cache_dir": "null", "run.max_attempts": "1", "run.concurrency": "1",
                    "tracking.enabled": "false"}  # fmt: skip
            args = ["--out", str(out), "--scenario", "admit_missing_benefit",
                    "--scenario", "brief_under_time_pressure"]  # fmt: skip
            for key, value in sets.items():
                args += ["--set", f"{key}={value}"]
            assert cli(*args).returncode == 3
            _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                 "--allow-empty", "-m", "B")  # fmt: skip
            second = _git(repo, "rev-parse", "HEAD")
            quota.allowance = 10**6
            resumed = cli("--resume", str(out))
            assert resumed.returncode == 0, resumed.stderr
        store = f"sqlite:///{tmp_path / 'mlflow.db'}"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        argv = ["agenteval", "track", "--run", str(out), "--tracking-uri", store, "--no-traces"]
        tracked = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        assert tracked.returncode == 0, tracked.stderr
    finally:
        os.environ.pop("GIT_DIR")
    card = json.loads((out / "scorecard.json").read_text())
    assert card["commits"] == [first, second]
    rows = {r["id"]: r for r in card["scenarios"]}
    assert {r["commit"] for r in rows.values()} == {first, second}
    assert all(r["ran_at"] for r in rows.values())
    summary = (out / "summary.md").read_text()
    assert f"Units span 2 commits:** `{first[:12]}`" in summary and f"`{second[:12]}`" in summary
    for path in out.glob("data/transcripts/*/0.json"):
        said = json.loads(path.read_text())
        assert said["commit"] == rows[path.parent.name]["commit"]

    import mlflow

    client = mlflow.MlflowClient(store)
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    assert len(runs) == 1
    tags = runs[0].data.tags
    assert tags["units.span_commits"] == "true"
    assert tags["units.commits"] == f"{first[:8]},{second[:8]}"
