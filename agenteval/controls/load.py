"""Reading eval/judge_controls/: validated controls with their manifest facts and split.

Every control lands in exactly one split. Controls under `fresh/` were written after the
judge was finished and form their own split; every other control goes to `dev` (tune on it)
or `held` (never tuned on) by a salted hash of its id, so adding a control never moves
another one between splits.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agenteval.schema.controls import Control, ControlFile
from agenteval.schema.corpus import Manifest
from agenteval.schema.located import load_located
from agenteval.schema.problems import Problem

DEFAULT_FOLDER = Path("eval/judge_controls")
FRESH_FOLDER = "fresh"
# The record of which classes each judge rule was written or tuned on (not a control file).
TUNING_FILE = "tuning.yaml"
# Changing the salt or the share re-deals every control: the held figures would no longer
# be held-out. Both are fixed here on purpose, not configurable.
SPLIT_SALT = "agenteval-judge-controls-v1"
HELD_SHARE = 0.5
SPLITS = ("dev", "held", "fresh")


class ControlsError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class LoadedControl:
    control: Control
    path: str
    line: int
    split: str


def split_of(control_id: str) -> str:
    """dev or held, from a salted sha256 of the id: stable across files and machines."""
    digest = hashlib.sha256(f"{SPLIT_SALT}:{control_id}".encode()).hexdigest()
    return "held" if int(digest[:8], 16) / 0x1_0000_0000 < HELD_SHARE else "dev"


def _read_file(path: Path, shown: str) -> tuple[list[tuple[Control, int]], list[Problem]]:
    located = load_located(path, shown)
    if isinstance(located, Problem):
        return [], [located]
    try:
        parsed = ControlFile.model_validate(located.data)
    except ValidationError as exc:
        problems = [
            located.problem(list(e["loc"]), f"{'.'.join(map(str, e['loc']))}: {e['msg']}")
            for e in exc.errors()
        ]
        return [], problems
    return [(c, located.line(["controls", i])) for i, c in enumerate(parsed.controls)], []


def _check_references(control: Control, manifest: Manifest, shown: str, line: int) -> list[Problem]:
    problems = []
    holders = len(manifest.find_fact(control.fact)) if control.fact is not None else 1
    if holders == 0:
        problems.append(Problem(shown, line, f"{control.id}: unknown fact {control.fact!r}"))
    elif holders > 1:
        msg = f"{control.id}: fact {control.fact!r} is in {holders} documents; name one"
        problems.append(Problem(shown, line, msg))
    for doc in control.documents:
        if doc not in manifest.document_ids():
            problems.append(Problem(shown, line, f"{control.id}: unknown document {doc!r}"))
    if control.fact is None and not control.documents and control.ground_truth is None:
        problems.append(
            Problem(shown, line, f"{control.id}: needs a fact, documents or ground_truth")
        )
    if control.fact is None and control.question is None:
        problems.append(Problem(shown, line, f"{control.id}: needs a question (or a fact)"))
    return problems


def load_controls(folder: Path, manifest: Manifest, root: Path) -> list[LoadedControl]:
    """Every control under `folder`, checked; any problem raises ControlsError (exit 2)."""
    files = sorted(p for p in folder.rglob("*.yaml") if p.is_file() and p != folder / TUNING_FILE)
    if not files:
        raise ControlsError([Problem(str(folder), 1, "no control files (*.yaml) found")])
    found: list[LoadedControl] = []
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for path in files:
        shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        fresh = path.relative_to(folder).parts[0] == FRESH_FOLDER
        controls, bad = _read_file(path, shown)
        problems += bad
        for control, line in controls:
            if control.id in seen:
                problems.append(
                    Problem(
                        shown,
                        line,
                        f"duplicate control id {control.id!r} (also in {seen[control.id]})",
                    )
                )
                continue
            seen[control.id] = shown
            problems += _check_references(control, manifest, shown, line)
            split = "fresh" if fresh else split_of(control.id)
            found.append(LoadedControl(control, shown, line, split))
    if problems:
        raise ControlsError(problems)
    return found


def load_tuning(folder: Path, classes: set[str], root: Path) -> dict[str, list[str]]:
    """The tuning record: for each entry (a rule, or a change of the judge), the control
    classes read while writing it. No record: {} (every class counts as never tuned on).
    A class the controls do not have is a problem (a typo would flatter a class's figure)."""
    path = folder / TUNING_FILE
    if not path.is_file():
        return {}
    shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
    located = load_located(path, shown)
    if isinstance(located, Problem):
        raise ControlsError([located])
    data = located.data if isinstance(located.data, dict) else {}
    tuned = data.get("tuned")
    if not isinstance(tuned, dict):
        raise ControlsError([located.problem([], "needs a mapping `tuned: {entry: [classes]}`")])
    record, problems = {}, []
    for entry, names in tuned.items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            problems.append(located.problem(["tuned", entry], f"{entry}: a list of class names"))
            continue
        for i, name in enumerate(names):
            if name not in classes:
                where = ["tuned", entry, i]
                problems.append(located.problem(where, f"{entry}: no control has class {name!r}"))
        record[str(entry)] = list(names)
    if problems:
        raise ControlsError(problems)
    return record


def tuned_by(record: dict[str, list[str]]) -> dict[str, list[str]]:
    """Class -> the record's entries that were tuned on it."""
    found: dict[str, list[str]] = {}
    for entry, names in record.items():
        for name in names:
            found.setdefault(name, []).append(entry)
    return found


def select(controls: list[LoadedControl], split: str) -> list[LoadedControl]:
    if split == "all":
        return list(controls)
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: choose dev, held, fresh or all")
    return [c for c in controls if c.split == split]


def sample(controls: list[LoadedControl], n: int | None, seed: int = 0) -> list[LoadedControl]:
    """`n` of the controls, the same ones on every machine: fail labels first in a salted
    hash order, alternating with pass labels, so a small sample still measures both false
    passes and false fails. None or n >= len: all of them, in file order."""
    if n is None or n >= len(controls):
        return list(controls)

    def order(c: LoadedControl) -> str:
        return hashlib.sha256(f"{SPLIT_SALT}:sample:{seed}:{c.control.id}".encode()).hexdigest()

    fails = sorted((c for c in controls if c.control.label.verdict == "fail"), key=order)
    passes = sorted((c for c in controls if c.control.label.verdict == "pass"), key=order)
    chosen: list[LoadedControl] = []
    while len(chosen) < n and (fails or passes):
        for pile in (fails, passes):
            if pile and len(chosen) < n:
                chosen.append(pile.pop(0))
    ids = {c.control.id for c in chosen}
    return [c for c in controls if c.control.id in ids]
