"""eval/tasks/tasks.json: the shipped file holds together, and a bad one is refused with
`path:line: message` (exit 2, no traceback) before any work."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks.definitions import TaskFileError, load_task_file, select
from agenteval.schema.tasks import SUITES

ROOT = Path(__file__).resolve().parents[1]
TASKS = ROOT / "eval/tasks/tasks.json"
TRAPS = {"red-neighbour", "cold-cache", "user-edits", "readme-wrong", "big-log", "hanging-suite"}


def test_shipped_file_has_the_suites_and_traps() -> None:
    spec = load_task_file(TASKS)
    assert len(spec.tasks) >= 12
    assert set(SUITES) <= set(spec.suites)
    ids = {t.id for t in spec.tasks}
    assert ids >= TRAPS
    assert TRAPS - {"readme-wrong", "big-log", "hanging-suite"} <= set(spec.suites["core"])
    assert {"readme-wrong", "big-log", "hanging-suite", "not-installed"} <= set(
        spec.suites["adversarial"]
    )
    assert set(spec.suites["full"]) == ids
    assert "hanging-suite" not in spec.suites["core"]  # every test run would cost a timeout
    for task in spec.tasks:
        if task.kind == "question":
            assert task.must_establish and task.wrong_answers and task.reference.answer
        else:
            assert task.expect is not None and task.reference.steps


# The fourteen everyday requests of the reference (001), in its order: the task that
# answers each, and whether it is a question (graded by must_establish points) or coding.
EVERYDAY = {
    "explain-durations": "question",  # explain a file
    "code-review": "question",
    "refactor-shared": "coding",
    "bugfix-durations": "coding",
    "triage-issues": "question",
    "find-duplicate": "question",
    "issue-to-fix": "coding",
    "draft-reply": "question",
    "review-patch": "question",
    "write-tests": "coding",
    "weekly-report": "coding",
    "shell-injection": "coding",
    "label-issues": "coding",  # graded by the labels set through the offline gh
    "config-env": "coding",  # config from an environment variable
}


def test_everyday_is_the_fourteen_requests_of_the_reference() -> None:
    spec = load_task_file(TASKS)
    kinds = {t.id: t.kind for t in spec.tasks}
    assert spec.suites["everyday"] == list(EVERYDAY)
    assert {task_id: kinds[task_id] for task_id in EVERYDAY} == EVERYDAY
    by_id = {t.id: t for t in spec.tasks}
    labels = by_id["label-issues"].expect
    assert labels is not None and labels.labels == {16: ["bug"], 17: ["documentation"]}
    # the gh tasks read the offline fixture the sandbox serves (tests/test_offline_gh.py)
    assert spec.github is not None and (ROOT / spec.github).is_file()


def _bad(tmp_path: Path, mutate: object) -> Path:
    doc = json.loads(TASKS.read_text())
    assert callable(mutate)
    mutate(doc)
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(doc, indent=2))
    return path


def _line_of(path: Path, needle: str) -> int:
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return number
    raise AssertionError(needle)


def test_question_with_expect_is_a_load_error_at_its_line(tmp_path: Path) -> None:
    def mutate(doc: dict) -> None:
        doc["tasks"][0]["expect"] = {"tests_pass": {}}

    path = _bad(tmp_path, mutate)
    with pytest.raises(TaskFileError) as caught:
        load_task_file(path)
    (problem,) = caught.value.problems
    assert "question task is decided by the judge" in problem.message
    assert problem.line == _line_of(path, '"id": "explain-durations"') - 1


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d["tasks"][1].update(setup="warm_coffee"), "unknown setup 'warm_coffee'"),
        (lambda d: d["suites"]["core"].append("no-such-task"), "unknown task 'no-such-task'"),
        (lambda d: d["tasks"].append(dict(d["tasks"][1])), "is repeated"),
        (lambda d: d["suites"].pop("adversarial"), "are required"),
        (lambda d: d["tasks"][1]["expect"]["probe"][0].pop("stdout"), "stdout, contains or"),
        (lambda d: d["tasks"][2].update(expect={"unchanged": ["../outside.py"]}), "inside the"),
        (lambda d: d["tasks"][1].pop("expect"), "needs an expect block"),
    ],
)
def test_inconsistent_files_are_refused(tmp_path: Path, mutate: object, message: str) -> None:
    with pytest.raises(TaskFileError) as caught:
        load_task_file(_bad(tmp_path, mutate))
    assert any(message in str(p) for p in caught.value.problems), caught.value.problems


def test_select_keeps_suite_order_and_refuses_unknown_names() -> None:
    spec = load_task_file(TASKS)
    assert [t.id for t in select(spec, "core", ["cold-cache", "weekly-report"])] == [
        "weekly-report",
        "cold-cache",
    ]
    with pytest.raises(ValueError, match="unknown suite"):
        select(spec, "nightly")
    with pytest.raises(ValueError, match="not in suite 'core'"):
        select(spec, "core", ["big-log"])


def test_cli_prints_path_line_and_exits_2(tmp_path: Path) -> None:
    path = _bad(tmp_path, lambda d: d["tasks"][0].update(expect={"tests_pass": {}}))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agenteval",
            "tasks",
            "run",
            "--no-track",
            "--out",
            str(tmp_path / "run"),
            "--set",
            f"tasks.file={path}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert f"{path}:" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()  # refused before any work


@pytest.mark.parametrize("suite", ["therock", "swebench"])
def test_a_suite_with_its_own_runner_is_refused_by_validate_naming_how_to_run_it(
    suite: str,
) -> None:
    from agenteval.benchmarks.tasks.steps import step_validate
    from agenteval.params import load_params

    params = load_params(ROOT / "pipelines/tasks/params.yaml", [f"tasks.suite={suite}"])
    with pytest.raises(ValueError, match=f"no reference solution .*tasks run --suite {suite}"):
        step_validate(params, ROOT)
