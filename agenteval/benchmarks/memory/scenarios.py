"""Memory scenarios on disk (eval/memory/scenarios/*.yaml): read, checked, each with the
sha256 of its file. A bad file is a list of `path:line: message` problems, never a traceback.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agenteval.benchmarks.memory.records import MemoryScenario
from agenteval.fileio import sha256_file
from agenteval.schema.input_error import InputError
from agenteval.schema.located import Located, load_located
from agenteval.schema.problems import Problem
from agenteval.suite.parse import parse_model


class ScenarioError(InputError, ValueError):
    """Problems of the memory scenario files."""


@dataclass(frozen=True)
class Loaded:
    scenario: MemoryScenario
    path: Path
    digest: str


def scenario_files(folder: Path) -> list[Path]:
    if folder.is_file():
        return [folder]
    if not folder.is_dir():
        raise ScenarioError([Problem(str(folder), 1, "no such scenario folder")])
    return sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml"))


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def read_scenario(path: Path, root: Path) -> tuple[MemoryScenario | None, list[Problem]]:
    located = load_located(path, _display(path, root))
    if not isinstance(located, Located):
        return None, [located]
    scenario, problems = parse_model(located, MemoryScenario, "memory scenario")
    if scenario is not None and scenario.id != path.stem:
        problem = located.problem(
            ("id",), f"id {scenario.id!r} must be the file name {path.stem!r}"
        )
        return None, [problem]
    return scenario, problems


def load_scenarios(folder: Path, root: Path, ids: Sequence[str] = ()) -> list[Loaded]:
    """Every scenario of `folder` (only `ids`, when given); all problems raised at once."""
    problems: list[Problem] = []
    found: list[Loaded] = []
    for path in scenario_files(folder):
        scenario, errors = read_scenario(path, root)
        problems += errors
        if scenario is not None:
            found.append(Loaded(scenario, path, sha256_file(path)))
    if problems:
        raise ScenarioError(problems)
    if not found:
        raise ScenarioError(
            [Problem(_display(folder, root), 1, "no memory scenarios (*.yaml) here")]
        )
    known = {item.scenario.id for item in found}
    unknown = [i for i in ids if i not in known]
    if unknown:
        raise ScenarioError(
            [
                Problem(
                    _display(folder, root),
                    1,
                    f"no scenario with id {i!r} (known: {', '.join(sorted(known))})",
                )
                for i in unknown
            ]
        )
    return [item for item in found if not ids or item.scenario.id in ids]
