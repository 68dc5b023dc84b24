"""Per-unit stamps: each unit records the commit and the time it ran, and a scorecard whose
units span commits says so in its headline and in MLflow.

The end-to-end test stops a run on its quota at commit A, commits B, and resumes: the
resume keeps A's units and runs the rest at B. The repository HEAD is read by real git from
a scratch repository named by GIT_DIR (the run itself works in this checkout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def test_an_in_process_agents_units_carry_no_commit_stamp() -> None:
    """Its output is a function of its code (its content stamp, below): a commit would make two
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


# ------------------------------------------------- content stamps: in-process agents, code judge
BUILTIN = {"targets/builtin.py": "aaaa", "judges/code.py": "bbbb"}


def test_a_content_stamp_is_the_code_that_ran_in_any_order() -> None:
    stamp, files = stamps.code_stamp(BUILTIN, {"simulators/scripted.py": "cccc"}) or ("", {})
    assert stamp.startswith("code:") and len(files) == 3
    again = stamps.code_stamp({"simulators/scripted.py": "cccc"}, dict(reversed(BUILTIN.items())))
    assert again == (stamp, files)
    assert stamps.code_stamp(BUILTIN | {"judges/code.py": "bbbc"}) != stamps.code_stamp(BUILTIN)
    assert stamps.code_stamp(None, {}) is None


def _commit_package(repo: Path, files: dict[str, bytes], message: str) -> str:
    for rel, data in files.items():
        path = repo / "agenteval" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


def test_git_says_which_commits_hold_a_content_stamp(tmp_path: Path) -> None:
    import hashlib

    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    body = {"targets/builtin.py": b"A = 1\n", "judges/code.py": b"B = 2\n"}
    files = {rel: hashlib.sha256(data).hexdigest()[:16] for rel, data in body.items()}
    first = _commit_package(repo, body, "first")
    later = _commit_package(repo, {"README": b"docs only\n"}, "docs")  # same code
    changed = _commit_package(repo, {"judges/code.py": b"B = 3\n"}, "judge changed")
    assert stamps.holds_code(repo, first, files) and stamps.holds_code(repo, later, files)
    assert not stamps.holds_code(repo, changed, files)
    assert not stamps.holds_code(repo, first, files | {"targets/gone.py": "0" * 16})
    assert not stamps.holds_code(repo, "0" * 40, files) and not stamps.holds_code(repo, first, {})


def _builtin_run(out: Path) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "run", "--no-progress", "--out", str(out),
         "--scenario", "admit_missing_benefit", "--scenario", "brief_under_time_pressure",
         "--set", "tracking.enabled=false", "--set", "run.cache_dir=null"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr  # 1: a scenario failed, measured
    return json.loads((out / "scorecard.json").read_text())


def test_the_builtin_agent_is_verified_by_content_and_a_mixed_card_says_so(
    tmp_path: Path,
) -> None:
    """Its units carry no commit (a fresh clone reproduces the committed results) but a
    content stamp: ci-verify passes on the tag whose tree holds that code and fails, naming
    the commit, on one that changed it; a resumed card whose units ran two versions of the
    code says so in its headline and in MLflow."""
    out = tmp_path / "run"
    card = _builtin_run(out)
    assert card["commits"] == [] and len(card["code_stamps"]) == 1
    ((stamp, files),) = card["code_stamps"].items()
    assert {r["code_stamp"] for r in card["scenarios"]} == {stamp}
    assert {"targets/builtin.py", "simulators/scripted.py", "judges/code.py"} <= set(files)
    assert "Units span" not in (out / "summary.md").read_text()
    # A release whose tree holds exactly that code, then one that changed a file of it.
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    package = {rel: (ROOT / "agenteval" / rel).read_bytes() for rel in files}
    _commit_package(repo, package, "release")
    _git(repo, "tag", "v3.0.0")
    builtin = package["targets/builtin.py"] + b"# changed\n"
    moved = _commit_package(repo, {"targets/builtin.py": builtin}, "agent changed")
    _git(repo, "tag", "v3.1.0")
    card["config"]["tier"] = "full"
    (repo / "scorecard.json").write_text(json.dumps(card))

    def verify(tag: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "agenteval", "ci-verify", "--tag", tag,
                "--results", "scorecard.json"]  # fmt: skip
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        return subprocess.run(argv, cwd=repo, env=env, capture_output=True, text=True)

    assert verify("v3.0.0").returncode == 0
    failed = verify("v3.1.0")
    assert failed.returncode == 1 and f"no full sweep measured commit {moved}" in failed.stderr
    assert stamp in failed.stderr
    # The same evidence read from an MLflow store: the tags `track` logs for the card.
    import mlflow

    from agenteval.ci.verify import release_candidates, sweeps_from_mlflow, verdict
    from agenteval.tracking.provenance import unit_commit_tags

    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(store)
    experiment = client.create_experiment("agenteval", artifact_location=str(tmp_path / "art"))
    run = client.create_run(experiment, tags=unit_commit_tags([], card["code_stamps"]))
    client.log_param(run.info.run_id, "suite.tier", "full")
    record = tmp_path / "provenance.json"  # as `track` logs it: the units' stamps and files
    record.write_text(json.dumps({"units": {"commits": [], "code_stamps": card["code_stamps"]}}))
    client.log_artifact(run.info.run_id, str(record))
    client.set_terminated(run.info.run_id)
    sweeps = sweeps_from_mlflow(store, "agenteval")
    git_says = lambda commit, code: stamps.holds_code(repo, commit, code)  # noqa: E731
    assert verdict(release_candidates(repo, "v3.0.0"), sweeps, git_says).ok
    assert not verdict(release_candidates(repo, "v3.1.0"), sweeps, git_says).ok
    assert not verdict(release_candidates(repo, "v3.0.0"), sweeps).ok  # nobody asked git
    # One unit re-run by another version of the agent (its transcript says which code ran).
    path = out / "data/transcripts/brief_under_time_pressure/0.json"
    said = json.loads(path.read_text())
    said["target"]["details"]["code"]["targets/builtin.py"] = "0" * 16
    path.write_text(json.dumps(said))
    resumed = cli("--resume", str(out))
    assert resumed.returncode in (0, 1), resumed.stderr
    mixed = json.loads((out / "scorecard.json").read_text())
    assert len(mixed["code_stamps"]) == 2 and stamp in mixed["code_stamps"]
    assert "Units span 2 stamps (commits or code):** `code:" in (out / "summary.md").read_text()
    tags = unit_commit_tags([], mixed["code_stamps"])
    assert tags["units.span_commits"] == "true" and tags["units.code"].count(",") == 1
    assert stamp.removeprefix("code:")[:8] in tags["units.code"]
    assert max(len(f"{k}: {v}") for k, v in tags.items()) <= 38  # one chip in the MLflow UI
