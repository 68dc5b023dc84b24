"""The task's tests belong to the task: which files of the graded tree the agent may not own.

For `tests_pass`, the project's test files and test configuration come from the snapshot:
every file under a `tests`/`test` folder, `test_*.py` / `*_test.py`, every `conftest.py`,
`pytest.toml`, `.pytest.toml`, `pytest.ini`, `.pytest.ini`, and pytest's own section of the
files other tools share: `pyproject.toml`'s `[tool.pytest...]`, `setup.cfg`'s `[tool:pytest]`,
`tox.ini`'s `[pytest]` (the rest of them, a `[flake8]` section say, is the agent's to edit).
A new `__init__.py` in a test folder that holds the task's tests is tampering too: it
changes how pytest imports them (rootdir-relative package names, a different conftest); one
in a folder of the agent's own new tests is the agent's. A task lets the agent
change named ones
(`tests_pass.editable`: the red test it must update). Any other change to them, and any new
configuration file (a planted `conftest.py` or `pytest.toml`), is tampering: the snapshot's
version is put back in the graded tree (so every check runs with the task's own suite) and
the task fails with `tests_tampered`. The agent's own new test files are not part of the
task's suite: they run on their own (`agent_tests`).
"""

from __future__ import annotations

import configparser
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

# Every file pytest reads its configuration from (pytest 9: `pytest.toml` and `.pytest.toml`
# come first, then `pytest.ini`/`.pytest.ini`, `pyproject.toml`, `tox.ini`, `setup.cfg`); the
# last three are shared with other tools: only pytest's section of them is the task's.
CONFIG_NAMES = frozenset(
    {"conftest.py", "pytest.toml", ".pytest.toml", "pytest.ini", ".pytest.ini"}
)
TEST_FOLDERS = frozenset({"tests", "test"})
PYPROJECT = "pyproject.toml"
# Files other tools share, and the sections of them pytest reads (the one home of that rule).
INI_SECTIONS = {"setup.cfg": "tool:pytest", "tox.ini": "pytest"}
PACKAGE_MARK = "__init__.py"


def is_test_file(rel: str) -> bool:
    path = PurePosixPath(rel)
    name = path.name
    named = name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))
    return named or bool(TEST_FOLDERS.intersection(path.parts[:-1]))


def is_protected(rel: str) -> bool:
    return PurePosixPath(rel).name in CONFIG_NAMES or is_test_file(rel)


def _pytest_section(data: bytes | None) -> Any:
    if data is None:
        return None
    try:
        return tomllib.loads(data.decode("utf-8")).get("tool", {}).get("pytest")
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "<unreadable>"


def _ini_section(data: bytes | None, section: str) -> Any:
    """`section` of an ini file as pytest's iniconfig would see it (None: absent)."""
    if data is None:
        return None
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(data.decode("utf-8"))
    except (UnicodeDecodeError, configparser.Error):
        return "<unreadable>"
    return dict(parser.items(section, raw=True)) if parser.has_section(section) else None


def _section_changed(rel: str, before: bytes | None, after: bytes | None) -> str | None:
    """For a file other tools share: the name of pytest's section when it changed, else
    None (an edit elsewhere in the file). Not such a file: None."""
    name = PurePosixPath(rel).name
    if name == PYPROJECT:
        changed = _pytest_section(before) != _pytest_section(after)
        return f"{rel} [tool.pytest]" if changed else None
    section = INI_SECTIONS.get(name)
    if section is not None and _ini_section(before, section) != _ini_section(after, section):
        return f"{rel} [{section}]"
    return None


@dataclass
class Guarded:
    """The graded files with the task's tests put back; what was tampered with; the agent's
    own new test files."""

    files: dict[str, bytes]
    tampered: list[str] = field(default_factory=list)
    agent_tests: list[str] = field(default_factory=list)


def guard(snapshot: dict[str, bytes], files: dict[str, bytes], editable: Iterable[str]) -> Guarded:
    allowed = set(editable)
    out = Guarded(dict(files))
    for rel in sorted(snapshot.keys() | files.keys()):
        before, after = snapshot.get(rel), files.get(rel)
        if before == after or rel in allowed or rel.split("/")[0] == ".git":
            continue
        name = PurePosixPath(rel).name
        if name == PYPROJECT or name in INI_SECTIONS:
            section = _section_changed(rel, before, after)
            if section is not None:
                out.tampered.append(section)
                _restore(out.files, rel, before)
            continue
        if not is_protected(rel):
            continue
        if before is None and name == PACKAGE_MARK and not _over_task_tests(rel, snapshot):
            continue  # a package of the agent's own tests: the task's import as they did
        if before is None and name not in CONFIG_NAMES and name != PACKAGE_MARK:
            out.agent_tests.append(rel)  # a new test file of the agent's: run on its own
            continue
        out.tampered.append(rel)
        _restore(out.files, rel, before)
    return out


def _over_task_tests(rel: str, snapshot: dict[str, bytes]) -> bool:
    """Whether the folder of `rel` holds one of the task's test files (at any depth)."""
    folder = str(PurePosixPath(rel).parent)
    prefix = "" if folder == "." else folder + "/"
    return any(t.startswith(prefix) and is_test_file(t) for t in snapshot)


def _restore(files: dict[str, bytes], rel: str, before: bytes | None) -> None:
    if before is None:
        files.pop(rel, None)
    else:
        files[rel] = before


def runnable(agent_tests: Iterable[str]) -> list[str]:
    """The agent's new test files pytest would collect (test_*.py, *_test.py)."""
    return [rel for rel in agent_tests if is_test_file(Path(rel).name)]
