"""Tasks checked before any agent runs: a broken task is the task's fault, never the agent's.

Every coding task is graded twice through the same runner, copies, graded tree and checks an
agent's attempt gets: its reference solution must PASS, and the untouched project must FAIL.
A probe that cannot run (a command that does not exist: even the reference fails it) or a
check nothing can fail is a task-definition error, `tasks.json:line: message` (exit 2), found
before any agent is charged with it. A question task is read by code alone
(`points.read_answer`, no copy, no agent): its reference answer must establish every point
code can read, and each of its wrong answers must fail at least one. `agenteval tasks
validate` runs it (in CI), and every run
of a harness other than the scripted one (whose run is the reference solutions) runs it on
the tasks it chose first.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from pathlib import Path

from agenteval.benchmarks.tasks.definitions import TaskFileError
from agenteval.benchmarks.tasks.points import read_answer
from agenteval.benchmarks.tasks.runner import RunSettings, TaskRunner
from agenteval.benchmarks.tasks.score import task_result
from agenteval.benchmarks.tasks.scripted import ScriptedHarness
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.schema.located import load_located
from agenteval.schema.problems import Problem
from agenteval.schema.status import Status
from agenteval.schema.tasks import Reference, Task
from agenteval.scratch import temporary_folder

UNTOUCHED = Reference(steps=[], answer="I looked at it and changed nothing.")


def _results(
    tasks: Sequence[Task], settings: RunSettings, harness: ScriptedHarness, data: Path
) -> dict[str, tuple[str, list[str]]]:
    runner = TaskRunner(harness, settings, data, SecretGuard())
    attempts = asyncio.run(runner.run(list(tasks), 1))
    by_id = {t.id: t for t in tasks}
    out = {}
    for attempt in attempts:
        row = task_result(by_id[attempt.task_id], attempt, None)
        out[attempt.task_id] = (row.result, row.reasons)
    return out


def problems(
    tasks: Sequence[Task], settings: RunSettings, task_file: Path, display: str
) -> list[Problem]:
    """Each coding task whose reference solution does not pass, or whose untouched project
    does not fail, and each question code misreads (`question_problems`), as a problem at
    the task's line of the task file."""
    found = [(t, "must_establish", why) for t in tasks for why in question_problems(t)]
    coding = [t for t in tasks if t.kind == "coding"]
    if coding:
        found += _coding_problems(coding, settings)
    return _located(found, task_file, display)


def question_problems(task: Task) -> list[str]:
    """What code's reading of a question task's own answers gets wrong: the reference that
    does not establish a point code can read, a wrong answer nothing fails."""
    if task.kind != "question" or not any(p.facts for p in task.must_establish):
        return []
    found = []
    reference = read_answer(task.must_establish, task.reference.answer, task.prompt)
    for i, reading in enumerate(reference):
        if reading.established is False:
            found.append(f"its reference answer does not establish point {i + 1}: {reading.reason}")
    for n, wrong in enumerate(task.wrong_answers):
        readings = read_answer(task.must_establish, wrong, task.prompt)
        if not any(r.established is False for r in readings):
            found.append(f"its wrong answer {n + 1} fails no point code reads")
    return found


def _coding_problems(coding: Sequence[Task], settings: RunSettings) -> list[tuple[Task, str, str]]:
    with temporary_folder("agenteval-validate-") as tmp:
        reference = _results(coding, settings, ScriptedHarness(label="validate-reference"),
                             Path(tmp) / "reference")  # fmt: skip
        nothing = ScriptedHarness({t.id: UNTOUCHED for t in coding}, label="validate-untouched")
        # It only has to fail: its grading stops at the first failed check.
        settle = dataclasses.replace(settings, first_failure=True)
        untouched = _results(coding, settle, nothing, Path(tmp) / "untouched")
    found = []
    for task in coding:
        ref, why = reference[task.id]
        if ref != Status.PASS:
            why_text = "; ".join(why)
            found.append(
                (task, "expect", f"its reference solution does not pass ({ref}): {why_text}")
            )
        if untouched[task.id][0] != Status.FAIL:
            found.append(
                (task, "expect", f"the untouched project does not fail ({untouched[task.id][0]})")
            )
    return found


def _located(found: list[tuple[Task, str, str]], task_file: Path, display: str) -> list[Problem]:
    located = load_located(task_file, display)
    index = {}
    if not isinstance(located, Problem) and isinstance(located.data, dict):
        index = {t.get("id"): i for i, t in enumerate(located.data.get("tasks") or [])}
    out = []
    for task, key, message in found:
        text = f"task {task.id!r}: {message[:600]}"
        if isinstance(located, Problem):
            out.append(Problem(display, 1, text))
        else:
            out.append(located.problem(("tasks", index.get(task.id, 0), key), text))
    return out


def require_valid(
    tasks: Sequence[Task], settings: RunSettings, task_file: Path, display: str
) -> None:
    """Raise TaskFileError (exit 2) when any coding task is broken."""
    found = problems(tasks, settings, task_file, display)
    if found:
        raise TaskFileError(found)
