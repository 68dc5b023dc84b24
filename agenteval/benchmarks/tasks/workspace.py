"""A task's fresh copy of the project, its setup, and the snapshot every change is measured by.

The copy (`work`) is the only place the agent can reach. The snapshot is taken right after the
setup, in a separate temporary folder outside the copy, made read-only, and its file digests
are kept in memory: before anything is measured against it, it is checked against them, so
an agent that found and edited it is caught rather than believed. Diffs are unified diffs
over the two trees (new and deleted files included; caches and git's own folder left out).
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from agenteval.benchmarks.tasks import setups
from agenteval.fileio import sha256_bytes

# Never part of a diff: bytecode, test caches, git's database. (The toybox's own rate cache
# is part of it: warming that cache is something an agent did.)
IGNORED_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
IGNORED_SUFFIXES = (".pyc", ".pyo")
DIFF_FILE_BYTES = 2_000_000  # a text file larger than this is summarised, not diffed


class SnapshotTampered(RuntimeError):
    """The snapshot no longer has the bytes it was taken with."""


def _ignored(path: Path) -> bool:
    return bool(IGNORED_DIRS.intersection(path.parts)) or path.name.endswith(IGNORED_SUFFIXES)


def tree_files(root: Path) -> dict[str, bytes]:
    """Every file under `root` (symlinks as their target text), by relative path."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
        here = Path(dirpath)
        for name in sorted(filenames):
            path = here / name
            rel = path.relative_to(root)
            if _ignored(rel):
                continue
            if path.is_symlink():
                out[rel.as_posix()] = f"symlink -> {os.readlink(path)}".encode()
            else:
                out[rel.as_posix()] = path.read_bytes()
    return out


def _copy_ignore(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n in IGNORED_DIRS - {".git"} or n.endswith(IGNORED_SUFFIXES)]


def _read_only(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _writable(root: Path) -> None:
    for dirpath, _dirnames, filenames in os.walk(root):
        for name in [*filenames, ""]:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)


@dataclass
class Workspace:
    base: Path  # holds `work`; removed by close()
    work: Path
    snapshot: Path
    source: Path
    digests: dict[str, str] = field(default_factory=dict)

    def verify_snapshot(self) -> dict[str, bytes]:
        files = tree_files(self.snapshot)
        found = {rel: sha256_bytes(data) for rel, data in files.items()}
        if found != self.digests:
            raise SnapshotTampered("the snapshot changed while the agent ran: nothing measured")
        return files

    def diff(self) -> tuple[str, list[str]]:
        """The agent's changes against the snapshot, and the files they touch."""
        return unified_diff(self.verify_snapshot(), tree_files(self.work))

    def setup_diff(self) -> str:
        """What the setup changed in the pristine project."""
        return unified_diff(tree_files(self.source), self.verify_snapshot())[0]

    def snapshot_bytes(self, rel: str) -> bytes | None:
        path = self.snapshot / rel
        return path.read_bytes() if path.is_file() else None

    def close(self) -> None:
        for folder in (self.snapshot.parent, self.base):
            if folder.exists():
                _writable(folder)
                shutil.rmtree(folder, ignore_errors=True)


def prepare(source: Path, setup: str | None, work_root: Path | None = None) -> Workspace:
    """A fresh copy of `source` with `setup` applied, and its snapshot outside the copy."""
    base = Path(tempfile.mkdtemp(prefix="agenteval-task-", dir=work_root))
    snapshot = Path(tempfile.mkdtemp(prefix="agenteval-snapshot-", dir=work_root))
    work = base / "project"
    ws = Workspace(base, work, snapshot / "project", source)
    try:
        shutil.copytree(source, work, symlinks=True, ignore=_copy_ignore)
        setups.apply(setup, work)
        shutil.copytree(work, ws.snapshot, symlinks=True)
        ws.digests = {rel: sha256_bytes(data) for rel, data in tree_files(ws.snapshot).items()}
        _read_only(ws.snapshot)
    except BaseException:
        ws.close()
        raise
    return ws


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
