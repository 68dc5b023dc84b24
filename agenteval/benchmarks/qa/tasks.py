"""QA task files: the project's JSONL and the GAIA benchmark's public metadata format.

Both load into `QATask`; every problem is reported as `path:line: message` (exit 2 at the
edges), and the whole file is checked before anything runs. A task becomes a one-turn
scenario so the inference engine, the targets and their transcripts are the same as for
scenario runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.benchmarks.questions import QATask
from agenteval.schema.input_error import InputError
from agenteval.schema.problems import Problem

# GAIA's test split publishes questions without answers; they cannot be scored.
HIDDEN_ANSWERS = frozenset({"", "?"})


class TaskFileError(InputError):
    """Problems of a QA task file."""


def _lines(path: Path) -> Iterable[tuple[int, dict[str, Any] | Problem]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        yield 1, Problem(str(path), 1, f"cannot read task file: {exc}")
        return
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            yield number, Problem(str(path), number, f"not a JSON object: {exc.msg}")
            continue
        if not isinstance(value, dict):
            yield number, Problem(str(path), number, "each line must be a JSON object")
            continue
        yield number, value


def _task(path: Path, number: int, record: dict[str, Any]) -> QATask | Problem:
    try:
        return QATask.model_validate(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "task"
        return Problem(str(path), number, f"{where}: {first['msg']}")


def _gaia_record(path: Path, root: Path, record: dict[str, Any]) -> dict[str, Any] | str:
    """A GAIA metadata line as a task record; a string says why it cannot be one."""
    missing = [k for k in ("task_id", "Question", "Level", "Final answer") if k not in record]
    if missing:
        return f"GAIA metadata line lacks {missing}"
    answer = record["Final answer"]
    if str(answer).strip() in HIDDEN_ANSWERS:
        return f"task {record['task_id']}: no public answer (GAIA test split), cannot be scored"
    try:
        level = int(str(record["Level"]).strip())
    except ValueError:
        return f"Level must be 1, 2 or 3, got {record['Level']!r}"
    name = str(record.get("file_name") or "").strip()
    files = []
    if name:
        # GAIA ships attachments beside metadata.jsonl; tasks name files relative to root.
        files = [(path.parent / name).resolve().relative_to(root.resolve()).as_posix()]
    return {
        "id": str(record["task_id"]),
        "question": record["Question"],
        "answer": answer,
        "level": level,
        "files": files,
    }


def load_tasks(path: Path, fmt: str = "jsonl", root: Path | None = None) -> list[QATask]:
    """Every task of a file, or TaskFileError with every problem found in it."""
    root = root or Path.cwd()
    tasks: list[QATask] = []
    problems: list[Problem] = []
    seen: dict[str, int] = {}
    for number, record in _lines(path):
        if isinstance(record, Problem):
            problems.append(record)
            continue
        if fmt == "gaia":
            try:
                converted = _gaia_record(path, root, record)
            except ValueError:
                converted = f"file_name {record.get('file_name')!r} is outside the repository"
            if isinstance(converted, str):
                problems.append(Problem(str(path), number, converted))
                continue
            record = converted
        task = _task(path, number, record)
        if isinstance(task, Problem):
            problems.append(task)
        elif task.id in seen:
            problems.append(
                Problem(str(path), number, f"duplicate id {task.id!r} (line {seen[task.id]})")
            )
        else:
            seen[task.id] = number
            tasks.append(task)
    if not tasks and not problems:
        problems.append(Problem(str(path), 1, "the task file has no tasks"))
    if problems:
        raise TaskFileError(problems)
    return tasks


def select(tasks: list[QATask], levels: list[int], ids: list[str], source: str) -> list[QATask]:
    unknown = sorted(set(ids) - {t.id for t in tasks})
    if unknown:
        raise TaskFileError([Problem(source, 1, f"qa.ids: unknown task(s) {unknown}")])
    chosen = [t for t in tasks if (not levels or t.level in levels) and (not ids or t.id in ids)]
    if not chosen:
        raise TaskFileError([Problem(source, 1, "qa.levels / qa.ids select no task")])
    return chosen
