"""The offline `gh` (agenteval.benchmarks.gh_stub), run as the executable an agent finds on
PATH, and `agenteval draft --from-issue` reading an issue through it or from a JSON file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agenteval.benchmarks.gh_stub import install, labels_of, logged

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/gh/toybox.json"


@pytest.fixture
def gh(tmp_path: Path) -> tuple[Path, Path]:
    log = tmp_path / "outside/gh.jsonl"  # outside the folder an agent would work in
    log.parent.mkdir()
    return install(tmp_path / "bin", FIXTURE, log), log


def run(gh: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{gh.parent}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(["gh", *args], env=env, capture_output=True, text=True, timeout=60)


def test_issues_and_pull_requests_are_served_from_the_fixture(gh: tuple[Path, Path]) -> None:
    exe, log = gh
    listed = run(exe, "issue", "list")
    assert listed.returncode == 0 and [line.split("\t")[0] for line in
                                       listed.stdout.splitlines()] == ["1", "2", "3"]  # fmt: skip
    viewed = json.loads(run(exe, "issue", "view", "2", "--json", "title,labels").stdout)
    assert viewed == {"title": "wordcount: division by zero on empty input",
                      "labels": [{"name": "bug"}]}  # fmt: skip
    text = run(exe, "issue", "view", "1", "--comments").stdout
    assert "Can you paste the full traceback?" in text
    assert "if not lines:" in run(exe, "pr", "diff", "7").stdout
    assert json.loads(run(exe, "pr", "view", "7", "--json", "headRefName").stdout) == {
        "headRefName": "fix-empty"}  # fmt: skip
    assert [c["command"] for c in logged(log)] == [
        "issue list", "issue view", "issue view", "pr diff", "pr view"]  # fmt: skip


def test_labels_and_reviews_are_recorded_and_what_is_not_served_is_refused(
    gh: tuple[Path, Path],
) -> None:
    exe, log = gh
    assert run(exe, "issue", "edit", "1", "--add-label", "bug,duplicate").returncode == 0
    assert run(exe, "issue", "edit", "3", "--add-label", "enhancement").returncode == 0
    fixture = json.loads(FIXTURE.read_text())
    assert labels_of(fixture, log, 1) == ["bug", "duplicate"]
    assert labels_of(fixture, log, 3) == ["enhancement"]
    shown = run(exe, "issue", "list", "--label", "duplicate").stdout.splitlines()
    assert [line.split("\t")[0] for line in shown] == ["1"]  # later calls see the labels
    review = run(exe, "pr", "review", "7", "--request-changes", "--body", "Add a test.")
    assert review.returncode == 0
    # The careless and the dishonest attempts: each refused with exit 1, and logged.
    attempts = (["issue", "close", "1"], ["issue", "edit", "1", "--remove-label", "bug"],
                ["issue", "view", "99"], ["pr", "review", "7", "--comment"],
                ["pr", "review", "7", "--approve", "--request-changes"],
                ["api", "repos/toybox/toybox/issues"],
                ["issue", "edit", "1", "--title", "x"])  # fmt: skip
    for bad in attempts:
        refused = run(exe, *bad)
        assert refused.returncode == 1 and refused.stderr.startswith("gh: "), bad
    calls = logged(log)
    assert [c["ok"] for c in calls].count(False) == 7
    assert calls[3] | {"at": None} == {
        "at": None, "argv": ["pr", "review", "7", "--request-changes", "--body", "Add a test."],
        "command": "pr review", "repo": None, "number": 7, "review": "request-changes",
        "body": "Add a test.", "ok": True, "error": None}  # fmt: skip
    assert labels_of(fixture, log, 1) == ["bug", "duplicate"]  # refused edits changed nothing
    assert oct(log.stat().st_mode & 0o777) == "0o600"


def draft(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agenteval", "draft", "--out", str(tmp_path / "drafts"), *args]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_a_draft_from_an_issue_through_gh_is_scrubbed(
    tmp_path: Path, gh: tuple[Path, Path]
) -> None:
    exe, log = gh
    done = draft(tmp_path, "--from-issue", "1", "--gh", str(exe), "--id", "empty_file_issue")
    assert done.returncode == 0, done.stderr
    text = (tmp_path / "drafts/empty_file_issue.yaml").read_text()
    for leak in ("dana.kowalski@example.com", "sk-test-Ab12Cd34Ef56Gh78Ij90Kl12", "/home/dana"):
        assert leak not in text
    scenario = yaml.safe_load(text)
    turns = [t["user_message"] for t in scenario["turns"]]
    # the reporter's body and her own follow-up are the user's turns; the maintainer's
    # question is a reply a reviewer reads in the comments
    assert len(turns) == 2 and turns[0].startswith("wordcount crashes on an empty file")
    assert "average_length" in turns[1] and "Can you paste the full traceback?" in text
    assert scenario["captured_from"]["session_id"] == "issue-1"
    assert [c["argv"][:3] for c in logged(log)] == [["issue", "view", "1"]]


def test_a_draft_from_an_issue_file_and_the_refusals(tmp_path: Path, gh: tuple[Path, Path]) -> None:
    exe, _ = gh
    issue = json.loads(FIXTURE.read_text())["issues"][2]
    issue["author"] = {"login": issue["author"]}
    path = tmp_path / "issue.json"
    path.write_text(json.dumps(issue))
    done = draft(tmp_path, "--from-issue", str(path))
    assert done.returncode == 0, done.stderr
    assert "print JSON" in (tmp_path / "drafts").joinpath(next(
        p.name for p in (tmp_path / "drafts").glob("*.yaml"))).read_text()  # fmt: skip
    missing = draft(tmp_path, "--from-issue", "99", "--gh", str(exe))
    assert missing.returncode == 2 and "gh issue view 99:1:" in missing.stderr
    assert "Traceback" not in missing.stderr
    path.write_text("{not json")
    broken = draft(tmp_path, "--from-issue", str(path))
    assert broken.returncode == 2 and f"{path}:1:" in broken.stderr
