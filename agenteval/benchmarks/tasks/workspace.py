"""A task's fresh copy of the project, its setup, and the snapshot every change is measured by.

The copy (`work`) is the only place the agent can reach. The snapshot is taken right after the
setup, in a separate temporary folder outside the copy, made read-only, and its file digests
are kept in memory: before anything is measured against it, it is checked against them, so
an agent that found and edited it is caught rather than believed. Diffs are unified diffs
over the two trees (new and deleted files included; caches and git's own folder left out).
The checks never run in the copy: `grade` builds a fresh tree from the snapshot and the
agent's changes to regular text files (agenteval.benchmarks.tasks.graded).

The copy and the snapshot are agenteval.scratch folders: removed by `close`, and at the latest
when the process ends (SIGTERM and SIGINT included), so no exit path leaves them behind.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from agenteval import scratch
from agenteval.benchmarks.tasks import graded, protected, setups
from agenteval.benchmarks.tasks.graded import COMPILED_SUFFIXES, IGNORED_DIRS
from agenteval.fileio import sha256_bytes

DIFF_FILE_BYTES = 2_000_000  # a text file larger than this is summarised, not diffed


class SnapshotTampered(RuntimeError):
    """The snapshot no longer has the bytes it was taken with."""


def _ignored(path: Path) -> bool:
    return bool(IGNORED_DIRS.intersection(path.parts)) or path.name.endswith(COMPILED_SUFFIXES)


def tree_files(root: Path) -> dict[str, bytes]:
    """Every regular file under `root` a diff shows, by relative path: no git database, no
    caches or bytecode, nothing that is not a regular file (graded.walk's rules)."""
    return graded.walk(root, keep_git=False).files


def _copy_ignore(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n in IGNORED_DIRS - {".git"} or n.endswith(COMPILED_SUFFIXES)]


def _read_only(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@dataclass
class Grading:
    """What building the graded tree found: the diff, the files it touches, what was not
    carried (findings), the protected files changed, the agent's own new test files."""

    diff: str
    changed: list[str]
    findings: list[str]
    tampered: list[str] = field(default_factory=list)
    agent_tests: list[str] = field(default_factory=list)
    delivered: dict[str, bytes] = field(default_factory=dict)  # before the tests are put back
    tree: int = -1  # graded.tree_mark of the copy as the agent left it


@dataclass(eq=False)
class Workspace:
    base: Path  # holds `work`; removed by close()
    work: Path
    snapshot: Path
    source: Path
    digests: dict[str, str] = field(default_factory=dict)

    @property
    def graded(self) -> Path:
        """The tree the checks run in (`grade` builds it): never the agent's copy."""
        return self.base / "graded"

    def verify_snapshot(self) -> dict[str, bytes]:
        """The snapshot's files (git's database included), checked against its digests."""
        files = graded.walk(self.snapshot).files
        found = {rel: sha256_bytes(data) for rel, data in files.items()}
        if found != self.digests:
            raise SnapshotTampered("the snapshot changed while the agent ran: nothing measured")
        return files

    def grade(self, editable: Iterable[str] | None = None) -> Grading:
        """Build the graded tree: the snapshot plus the agent's changes to regular text
        files, and, when `editable` is given (a task with `tests_pass`), the task's own test
        files put back except those it names (protected.guard)."""
        before = self.verify_snapshot()
        work = graded.walk(self.work)
        files, findings = graded.overlay(before, work)
        diff, changed = unified_diff(_visible(before), _visible(files))
        done = Grading(diff, changed, findings, delivered=files, tree=graded.tree_mark(work.files))
        if editable is not None:
            kept = protected.guard(before, files, editable)
            files, done.tampered, done.agent_tests = kept.files, kept.tampered, kept.agent_tests
        graded.build(self.snapshot, self.graded, files)
        return done

    def setup_diff(self) -> str:
        """What the setup changed in the pristine project."""
        return unified_diff(tree_files(self.source), _visible(self.verify_snapshot()))[0]

    def snapshot_bytes(self, rel: str) -> bytes | None:
        return graded.read_regular(self.snapshot / rel, graded.MAX_FILE_BYTES)

    def diff(self) -> tuple[str, list[str]]:
        """The agent's changes against the snapshot (what `grade` would carry)."""
        done = self.grade()
        return done.diff, done.changed

    def close(self) -> None:
        for folder in (self.snapshot.parent, self.base):
            scratch.discard(folder)


def prepare(source: Path, setup: str | None, work_root: Path | None = None) -> Workspace:
    """A fresh copy of `source` with `setup` applied, and its snapshot outside the copy."""
    base = scratch.make_folder("agenteval-task-", work_root)
    snapshot = scratch.make_folder("agenteval-snapshot-", work_root)
    work = base / "project"
    ws = Workspace(base, work, snapshot / "project", source)
    try:
        shutil.copytree(source, work, symlinks=True, ignore=_copy_ignore)
        setups.apply(setup, work)
        shutil.copytree(work, ws.snapshot, symlinks=True)
        files = graded.walk(ws.snapshot).files
        ws.digests = {rel: sha256_bytes(data) for rel, data in files.items()}
        _read_only(ws.snapshot)
    except BaseException:
        ws.close()
        raise
    return ws


def _visible(files: dict[str, bytes]) -> dict[str, bytes]:
    return {rel: data for rel, data in files.items() if not _ignored(Path(rel))}


def _text(data: bytes) -> list[str] | None:
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8").splitlines(keepends=True)
    except UnicodeDecodeError:
        return None


def _file_diff(rel: str, old: bytes | None, new: bytes | None) -> list[str]:
    a = f"a/{rel}" if old is not None else "/dev/null"
    b = f"b/{rel}" if new is not None else "/dev/null"
    old_lines = _text(old) if old is not None else []
    new_lines = _text(new) if new is not None else []
    too_big = max(len(old or b""), len(new or b"")) > DIFF_FILE_BYTES
    if old_lines is None or new_lines is None or too_big:
        return [f"--- {a}\n", f"+++ {b}\n", f"@@ {rel}: binary or large file differs @@\n"]
    out = []
    for line in difflib.unified_diff(old_lines, new_lines, a, b):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return out


def unified_diff(before: dict[str, bytes], after: dict[str, bytes]) -> tuple[str, list[str]]:
    changed = sorted(
        rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)
    )
    lines: list[str] = []
    for rel in changed:
        lines += _file_diff(rel, before.get(rel), after.get(rel))
    return "".join(lines), changed
