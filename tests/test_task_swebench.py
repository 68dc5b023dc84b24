"""SWE-bench's offline parts: a checkout at the base commit with no path back to the fix,
predictions in the official format, report parsing on a recorded report, an attempt through
a harness, and a refusal naming what is missing where Docker or the dataset cannot be had."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks import swebench
from agenteval.benchmarks.tasks.scripted import ScriptedHarness
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.benchmarks.tasks.swebench_run import capture
from agenteval.schema.tasks import Reference, Step

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """A repository whose history goes on after the base commit: the fix lives after it."""
    repo = tmp_path_factory.mktemp("upstream") / "toy"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "parse.py").write_text("def parse(text):\n    return int(text)\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "first")
    (repo / "README.md").write_text("toy\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "parse.py").write_text("def parse(text):\n    return int(text.strip())\n")
    git(repo, "commit", "-qam", "the fix")
    fix = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "v1.0")
    return repo, base, fix


def test_checkout_has_no_path_back_to_the_fix(
    tmp_path: Path, upstream: tuple[Path, str, str]
) -> None:
    repo, base, fix = upstream
    dest = swebench.checkout(tmp_path / "cache", repo.as_uri(), base, tmp_path / "work" / "repo")
    assert git(dest, "rev-parse", "HEAD") == base
    assert git(dest, "fsck", "--unreachable", "--no-reflogs") == ""
    assert git(dest, "for-each-ref") == "" and git(dest, "remote") == ""
    missing = subprocess.run(
        ["git", "cat-file", "-e", f"{fix}^{{commit}}"], cwd=dest, capture_output=True
    )
    assert missing.returncode != 0
    assert fix not in git(dest, "log", "--all", "--format=%H")
    assert "return int(text)\n" in (dest / "parse.py").read_text()
    bare = next((tmp_path / "cache" / "repos").iterdir())
    assert (
        subprocess.run(["git", "cat-file", "-e", fix], cwd=bare, capture_output=True).returncode
        != 0
    )
    swebench.verify_isolated(dest, base, forbidden=[fix])


def test_a_plain_clone_is_refused(tmp_path: Path, upstream: tuple[Path, str, str]) -> None:
    repo, base, fix = upstream
    plain = tmp_path / "plain"
    subprocess.run(["git", "clone", "-q", str(repo), str(plain)], check=True)
    git(plain, "checkout", "-q", "--detach", base)
    with pytest.raises(swebench.CheckoutLeak):
        swebench.verify_isolated(plain, base, forbidden=[fix])


def test_predictions_are_in_the_official_format(tmp_path: Path) -> None:
    rows = [swebench.prediction("toy__toy-1", "agent/model", "diff --git a/x b/x\n")]
    swebench.write_predictions(tmp_path / "predictions.jsonl", rows)
    (line,) = (tmp_path / "predictions.jsonl").read_text().splitlines()
    assert json.loads(line) == {
        "instance_id": "toy__toy-1",
        "model_name_or_path": "agent/model",
        "model_patch": "diff --git a/x b/x\n",
    }
    argv = swebench.evaluation_command(tmp_path / "predictions.jsonl", "run1", "toy__toy-1")
    assert argv[1:3] == ["-m", "swebench.harness.run_evaluation"]
    assert argv[argv.index("--dataset_name") + 1] == "SWE-bench/SWE-bench_Verified"


def test_a_recorded_report_is_read_back() -> None:
    data = json.loads((ROOT / "tests/fixtures/swebench/report.json").read_text())
    verdict = swebench.parse_report(data, "toy__toy-1")
    assert verdict.resolved and verdict.patch_applied
    assert verdict.fail_to_pass == (2, 0) and verdict.pass_to_pass == (3, 1)
    with pytest.raises(ValueError, match="no entry"):
        swebench.parse_report(data, "toy__toy-2")
    path = swebench.report_path(Path("logs"), "run1", "org/model", "toy__toy-1")
    assert path.as_posix() == "logs/run_evaluation/run1/org__model/toy__toy-1/report.json"


def test_an_attempt_becomes_a_prediction(tmp_path: Path, upstream: tuple[Path, str, str]) -> None:
    repo, base, _fix = upstream
    instance = {
        "instance_id": "toy__toy-1",
        "repo": "toy/toy",
        "base_commit": base,
        "problem_statement": "parse(' 7') raises ValueError.",
    }
    fix = Reference(
        steps=[
            Step(
                tool="edit_file",
                args={"path": "parse.py", "old": "int(text)", "new": "int(text.strip())"},
            ),
            Step(
                tool="write_file",
                args={"path": "test_parse.py", "content": "from parse import parse\n"},
            ),
        ],
        answer="Stripped the input.",
    )
    harness = ScriptedHarness({"toy__toy-1": fix})
    rows = asyncio.run(
        capture(
            harness, [instance], tmp_path, tmp_path / "cache", SecretGuard(), repo_url=repo.as_uri()
        )
    )
    (row,) = rows
    assert row["instance_id"] == "toy__toy-1" and row["model_name_or_path"] == "reference-solution"
    assert "+    return int(text.strip())" in row["model_patch"]
    assert "new file mode" in row["model_patch"] and "test_parse.py" in row["model_patch"]
    records = json.loads((tmp_path / "swebench_records.json").read_text())
    assert [c["name"] for c in records["toy__toy-1"]["calls"]] == ["edit_file", "write_file"]
    assert "parse(' 7')" in swebench.prompt_for(instance) and "internet" in swebench.prompt_for(
        instance
    )


def test_refused_before_any_work_naming_what_is_missing(tmp_path: Path) -> None:
    gaps = swebench.missing(["toy__toy-1"], tmp_path / "empty-cache")
    if not gaps:
        pytest.skip("this machine has the dataset, swebench and a Docker daemon")
    with pytest.raises(swebench.SwebenchUnavailable) as caught:
        swebench.preflight(["toy__toy-1"], tmp_path / "empty-cache")
    assert all(gap in str(caught.value) for gap in gaps)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agenteval",
            "tasks",
            "run",
            "--suite",
            "swebench",
            "--no-track",
            "--out",
            str(tmp_path / "run"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "refused: suite swebench cannot run here" in done.stderr
    assert not (tmp_path / "run").exists()
