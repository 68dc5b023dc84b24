"""Loading `eval/tasks/tasks.json`: every problem as `path:line: message`, before any work.

Besides the schema (agenteval.schema.tasks), the file must hold together: task ids unique,
setups known, every suite's ids defined, the suites `core`, `adversarial` and `full` present
with `full` holding every task of the other two, and each path a check names relative and
inside the project.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from agenteval.benchmarks.tasks.setups import SETUPS
from agenteval.fileio import digest_of
from agenteval.schema.input_error import InputError
from agenteval.schema.located import Located, load_located
from agenteval.schema.problems import Problem
from agenteval.schema.tasks import SUITES, Task, TaskFile

DEFAULT_FILE = "eval/tasks/tasks.json"


class TaskFileError(InputError):
    """Problems of the task files."""


def _schema_problems(located: Located, exc: ValidationError) -> list[Problem]:
    out = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        where = ".".join(str(p) for p in loc) or "file"
        out.append(located.problem(loc, f"{where}: {error['msg']}"))
    return out


def _bad_path(rel: str) -> bool:
    path = PurePosixPath(rel)
    return path.is_absolute() or ".." in path.parts or not rel.strip()


def _consistency(located: Located, spec: TaskFile) -> list[Problem]:
    problems = []
    seen: dict[str, int] = {}
    for index, task in enumerate(spec.tasks):
        here = ("tasks", index)
        if task.id in seen:
            problems.append(located.problem((*here, "id"), f"task id {task.id!r} is repeated"))
        seen[task.id] = index
        if task.setup is not None and task.setup not in SETUPS:
            known = ", ".join(sorted(SETUPS))
            problems.append(
                located.problem((*here, "setup"), f"unknown setup {task.setup!r} ({known})")
            )
        expect = task.expect
        paths = [] if expect is None else list(expect.unchanged)
        if expect is not None and expect.kills_mutants is not None:
            paths += [m.path for m in expect.kills_mutants.mutants]
        if expect is not None and expect.tests_pass is not None:
            paths += expect.tests_pass.clean
        problems += [
            located.problem((*here, "expect"), f"{rel!r}: paths are relative, inside the project")
            for rel in paths
            if _bad_path(rel)
        ]
        if expect is not None and expect.labels and spec.github is None:
            problems.append(located.problem(
                (*here, "expect", "labels"), "labels are read from the offline gh: the task file "
                "names no github fixture"))  # fmt: skip
    for name, ids in spec.suites.items():
        problems += [
            located.problem(("suites", name), f"suite {name!r} names unknown task {tid!r}")
            for tid in ids
            if tid not in seen
        ]
    if spec.github is not None and _bad_path(spec.github):
        where = f"{spec.github!r}: a path inside the repository"
        problems.append(located.problem(("github",), where))
    missing = [s for s in SUITES if s not in spec.suites]
    if missing:
        problems.append(located.problem(("suites",), f"suites {missing} are required"))
    elif not set(spec.suites["core"]) | set(spec.suites["adversarial"]) <= set(spec.suites["full"]):
        problems.append(
            located.problem(("suites", "full"), "full must hold every core and adversarial task")
        )
    return problems


def load_task_file(path: Path, display: str | None = None) -> TaskFile:
    located = load_located(path, display or str(path))
    if isinstance(located, Problem):
        raise TaskFileError([located])
    if not isinstance(located.data, dict):
        raise TaskFileError([located.problem((), "tasks.json must be a JSON object")])
    try:
        spec = TaskFile.model_validate(located.data)
    except ValidationError as exc:
        raise TaskFileError(_schema_problems(located, exc)) from None
    problems = _consistency(located, spec)
    if problems:
        raise TaskFileError(problems)
    return spec


def select(
    spec: TaskFile, suite: str, ids: Sequence[str] = (), where: str = "tasks.suite"
) -> list[Task]:
    """The tasks of `suite` in its order, narrowed to `ids` when given."""
    if suite not in spec.suites:
        raise ValueError(f"{where} {suite!r}: unknown suite (known: {', '.join(spec.suites)})")
    members = spec.suites[suite]
    unknown = [t for t in ids if t not in members]
    if unknown:
        raise ValueError(f"tasks.ids: not in suite {suite!r}: {', '.join(unknown)}")
    by_id = {t.id: t for t in spec.tasks}
    return [by_id[t] for t in members if not ids or t in ids]


def task_digest(task: Task, toybox_digest: str) -> str:
    """What an attempt is reused for: the task's definition and the project it copies."""
    return digest_of({"task": task.model_dump(mode="json", by_alias=True), "toybox": toybox_digest})
