"""The tree the checks grade: the snapshot plus the agent's changes to regular text files.

When the agent stops, its copy is read, never run: every entry is looked at with `lstat`
(links are not followed, nothing that is not a regular file is ever opened, so a FIFO cannot
hang the grader nor a socket crash it), and a new tree is built from the read-only snapshot
with the agent's changed regular text files laid over it. What the diff shows is what is
graded, and nothing else:

* compiled files and caches (`__pycache__`, `*.pyc`, `.pytest_cache`, ...) are never carried:
  a fix that lives only in bytecode is no fix;
* links, sockets, FIFOs and devices are never carried, nor binary or oversized files (git's
  own database excepted: a git checkout's state is part of some tasks);
* each thing left behind is a finding in the attempt record.

The walk has caps (files, bytes, one file's bytes): a copy beyond them cannot be graded, and
the task is ERRORED with that reason (`TreeTooLarge`), never the whole run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

IGNORED_DIRS = frozenset({".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
CACHE_DIRS = IGNORED_DIRS - {".git"}
COMPILED_SUFFIXES = (".pyc", ".pyo")
MAX_FILE_BYTES = 4_000_000  # one changed file carried (the big-log setup writes 1.7 MB)
MAX_TREE_FILES = 20_000
MAX_TREE_BYTES = 200_000_000
MAX_PATH_BYTES = 1024  # a relative path; deeper cannot be rebuilt under any work root
GIT_DIR = ".git"
# What the checks import from the evaluator's toolchain, never from the graded tree: pytest
# and its plugins' modules, hypothesis, and the standard library (sitecustomize included).
TOOL_MODULES = frozenset(
    {
        "pytest",
        "_pytest",
        "py",
        "pluggy",
        "iniconfig",
        "packaging",
        "hypothesis",
        "_hypothesis_pytestplugin",
        "_hypothesis_globals",
        "sortedcontainers",
        "attr",
        "attrs",
        "exceptiongroup",
        "tomli",
        "sitecustomize",
        "usercustomize",
    }
)
SHADOWED_MODULES = TOOL_MODULES | frozenset(sys.stdlib_module_names)


class TreeTooLarge(RuntimeError):
    """The copy is beyond the walk's caps: it cannot be graded."""


@dataclass
class Walked:
    """Regular files of a tree by relative path (bytes), and what was left out and why."""

    files: dict[str, bytes] = field(default_factory=dict)
    findings: list[str] = field(default_factory=list)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a link"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def read_regular(path: Path, limit: int) -> bytes | None:
    """The bytes of `path` when it is a regular file of at most `limit` bytes; never follows
    a link, never blocks on a FIFO (checked again on the open descriptor)."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
        return data if len(data) <= limit else None
    finally:
        os.close(fd)


def _text(data: bytes) -> bool:
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _name_finding(rel_dir: Path, name: str) -> str | None:
    """Why a name cannot be carried (not UTF-8; the path too long for the graded tree), or
    None. Either is the agent's doing: a finding, never a crash or an unmeasured task."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(name).decode("utf-8", errors="backslashreplace")
        return f"{rel_dir.as_posix()}/{shown}: a name that is not UTF-8, not graded"
    rel = (rel_dir / name).as_posix()
    if len(rel.encode("utf-8")) > MAX_PATH_BYTES:
        return f"{rel[:80]}...: a path longer than {MAX_PATH_BYTES} bytes, not graded"
    return None


def _prune_dirs(
    here: Path, rel_dir: Path, dirnames: list[str], out: Walked, keep_git: bool
) -> None:
    for name in sorted(dirnames):
        path = here / name
        why = _name_finding(rel_dir, name)
        if why is None and path.is_symlink():
            why = f"{(rel_dir / name).as_posix()}: a link, not graded"
        if why is not None:
            out.findings.append(why)
            dirnames.remove(name)
        elif name in CACHE_DIRS or (name == GIT_DIR and not keep_git):
            dirnames.remove(name)
            if name == "__pycache__" and any(os.scandir(path)):
                out.findings.append(f"{(rel_dir / name).as_posix()}/: compiled files, not graded")
    dirnames.sort()


def _unreadable(out: Walked, root: Path) -> Callable[[OSError], None]:
    def note(error: OSError) -> None:
        where = os.path.relpath(os.fsdecode(error.filename or root), root)
        shown = os.fsencode(where).decode("utf-8", errors="backslashreplace")
        out.findings.append(f"{shown[:120]}: unreadable ({error.strerror}), not graded")

    return note


def walk(root: Path, *, keep_git: bool = True) -> Walked:
    """Every regular file under `root` within the caps, and a finding for everything else
    (links, sockets, FIFOs, devices, compiled files, caches, names that are not UTF-8,
    paths too long, entries that cannot be read). Raises TreeTooLarge."""
    out = Walked()
    total = 0
    for dirpath, dirnames, filenames in os.walk(root, onerror=_unreadable(out, root)):
        here = Path(dirpath)
        rel_dir = here.relative_to(root)
        _prune_dirs(here, rel_dir, dirnames, out, keep_git)
        for name in sorted(filenames):
            path = here / name
            rel = (rel_dir / name).as_posix()
            why = _name_finding(rel_dir, name)
            if why is not None:
                out.findings.append(why)
                continue
            try:
                mode = path.lstat().st_mode
            except OSError as error:
                out.findings.append(f"{rel}: unreadable ({error.strerror}), not graded")
                continue
            if not stat.S_ISREG(mode):
                out.findings.append(f"{rel}: {_kind(mode)}, not graded")
                continue
            if name.endswith(COMPILED_SUFFIXES):
                out.findings.append(f"{rel}: a compiled file, not graded")
                continue
            if len(out.files) >= MAX_TREE_FILES:
                raise TreeTooLarge(f"more than {MAX_TREE_FILES} files in the copy")
            data = read_regular(path, MAX_FILE_BYTES)
            if data is None:
                out.findings.append(f"{rel}: larger than {MAX_FILE_BYTES} bytes, not graded")
                continue
            total += len(data)
            if total > MAX_TREE_BYTES:
                raise TreeTooLarge(f"more than {MAX_TREE_BYTES} bytes in the copy")
            out.files[rel] = data
    return out


def overlay(snapshot: dict[str, bytes], work: Walked) -> tuple[dict[str, bytes], list[str]]:
    """The graded files: the snapshot's, with the agent's changes to regular text files laid
    over (and its deletions); a changed binary file keeps the snapshot's bytes, and a new
    module named like the evaluator's tools or the standard library is not carried: each a
    finding."""
    files = dict(snapshot)
    findings = list(work.findings)
    for rel in changes(snapshot, work.files):
        data = work.files.get(rel)
        if data is None:
            files.pop(rel, None)
        elif rel not in snapshot and (name := shadowed(rel, work.files)):
            findings.append(f"{rel}: would shadow the toolchain's {name!r}, not graded")
        elif rel.split("/")[0] == GIT_DIR and (why := rewrites_history(rel, data)):
            findings.append(f"{rel}: {why}, not graded (the snapshot's kept)")
        elif rel.split("/")[0] == GIT_DIR or _text(data):
            files[rel] = data
        else:
            findings.append(f"{rel}: not a text file, not graded")
    return files, findings


# What changes how git shows a checkout's history and state rather than the history itself:
# a commit the task forbids, hidden by a replace ref, a graft or a shallow boundary, or a
# configuration whose hooks (core.fsmonitor) answer `git status` for it.
GIT_VIEW = frozenset(
    {".git/config", ".git/shallow", ".git/info/grafts", ".git/objects/info/alternates"}
)
GIT_VIEW_PREFIXES = (".git/refs/replace/", ".git/hooks/")


def rewrites_history(rel: str, data: bytes) -> str | None:
    """Why a change to `rel` in git's folder is not carried (it changes what git shows of the
    checkout, not what it holds), or None."""
    if rel in GIT_VIEW or rel.startswith(GIT_VIEW_PREFIXES):
        return "changes how git shows the checkout"
    if rel == ".git/packed-refs" and b"refs/replace/" in data:
        return "a replace ref changes how git shows the history"
    return None


def shadowed(rel: str, files: dict[str, bytes]) -> str | None:
    """The toolchain or standard-library module `rel` would stand in for when its folder is
    on sys.path (a check's working folder, pytest's `pythonpath`, a test folder pytest
    inserts), or None. A `pytest.py` or `hypothesis/` the agent adds in the copy would
    otherwise be what the checks import as pytest or hypothesis."""
    path = PurePosixPath(rel)
    if path.suffix != ".py":
        return None
    name, folder = path.stem, path.parent
    while f"{folder.as_posix()}/__init__.py" in files and folder.name:
        name, folder = folder.name, folder.parent  # inside a package: its top-level name
    if name == "__init__" and folder.name:
        name = folder.name
    return name if name in SHADOWED_MODULES else None


def tree_mark(files: dict[str, bytes]) -> int:
    """A 48-bit mark of a tree's files, git's database left out: a pytest run whose mark is not
    the finished copy's ran on another tree (something changed after it, whoever changed it)."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        if rel.split("/")[0] != GIT_DIR:
            digest.update(f"{rel}\0{len(files[rel])}\0".encode())
            digest.update(files[rel])
    return int(digest.hexdigest()[:12], 16)


def changes(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """Relative paths whose bytes differ (added, changed or deleted), sorted."""
    return sorted(rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel))


def build(snapshot: Path, target: Path, files: dict[str, bytes]) -> None:
    """`target` as a fresh tree holding exactly `files` (the snapshot's modes kept)."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for rel, data in files.items():
        path = target / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        try:
            mode = (snapshot / rel).lstat().st_mode
        except OSError:
            continue
        if mode & stat.S_IXUSR:
            path.chmod(0o755)
