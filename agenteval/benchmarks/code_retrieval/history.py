"""A repository's history through git plumbing: pinned fix commits as queries with their
relevance, and one working tree moved from commit to commit.

Nothing here checks out, resets or writes the repository itself: files are read from its
objects (`git cat-file`, `git ls-tree`, `git diff-tree`) and written into a separate folder.

A fix's relevance is read at its parent (the base the fix was made on): the files it
modified that the index holds there (files it created did not exist yet, so they are not
scored), and the innermost def/class (by `ast`, in the parent's version) around each line
the fix removed or changed. A pure insertion counts only when one definition spans both
lines it sits between: an insertion at a definition's edge belongs to neither.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agenteval.benchmarks.code_retrieval.chunks import Span, innermost, symbol_spans
from agenteval.benchmarks.code_retrieval.records import PinnedRepository

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.MULTILINE)


class HistoryError(ValueError):
    """A pinned commit or repository cannot be used (named, with the reason)."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode  # git's exit status, when git ran and failed


def git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | {"LC_ALL": "C"}
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True,
                          env=env)  # fmt: skip
    if done.returncode != 0:
        raise HistoryError(f"git {' '.join(args[:3])}: {done.stderr.decode(errors='replace')}",
                           done.returncode)  # fmt: skip
    return done.stdout


@dataclass(frozen=True)
class Selection:
    """Which files of a tree are indexed (and searched by the grep baseline)."""

    extensions: tuple[str, ...]
    exclude: tuple[str, ...] = ()

    def wants(self, path: str) -> bool:
        return path.endswith(self.extensions) and not path.startswith(self.exclude)

    def pathspecs(self) -> list[str]:
        specs = [f"*{ext}" for ext in self.extensions]
        return specs + [f":(exclude){prefix}*" for prefix in self.exclude]


@dataclass
class FixQuery:
    id: str
    commit: str
    base: str
    query: str
    files: list[str]
    symbols: list[str]  # "path::Qualified.name"
    created: list[str] = field(default_factory=list)


def resolve(repo: Path, commit: str) -> str:
    try:
        return (
            git(repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").decode().strip()
        )
    except HistoryError:
        raise HistoryError(
            f"commit {commit[:12]} is not in the history of {repo} (a shallow clone, or a "
            "history that never had it)"
        ) from None


def tree_files(repo: Path, commit: str, selection: Selection) -> dict[str, str]:
    """{path: blob id} of the regular files the selection indexes at `commit`."""
    out = {}
    raw = git(repo, "ls-tree", "-r", "-z", commit)
    for entry in raw.split(b"\0"):
        if not entry:
            continue
        meta, path = entry.decode("utf-8", errors="surrogateescape").split("\t", 1)
        mode, kind, blob = meta.split()
        if kind == "blob" and mode in ("100644", "100755") and selection.wants(path):
            out[path] = blob
    return out


def blobs(repo: Path, ids: list[str]) -> list[bytes]:
    """The contents of many blobs through one `git cat-file --batch`."""
    if not ids:
        return []
    raw = git(repo, "cat-file", "--batch", data=("\n".join(ids) + "\n").encode())
    out, at = [], 0
    for _ in ids:
        header_end = raw.index(b"\n", at)
        size = int(raw[at:header_end].split()[2])
        out.append(raw[header_end + 1 : header_end + 1 + size])
        at = header_end + 1 + size + 1  # the content, then a newline
    return out


def decode(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def blob_text(repo: Path, blob: str) -> str:
    return decode(blobs(repo, [blob])[0])


def fix_query(repo: Path, name: str, commit: str, selection: Selection) -> FixQuery:
    full = resolve(repo, commit)
    parents = git(repo, "rev-list", "--parents", "-n", "1", full).decode().split()[1:]
    if len(parents) != 1:
        raise HistoryError(f"commit {full[:12]} has {len(parents)} parents; a fix has one")
    base = parents[0]
    message = git(repo, "log", "-1", "--format=%B", full).decode("utf-8", "replace").strip()
    status = git(repo, "diff-tree", "-r", "--no-commit-id", "--name-status", "-z", base, full)
    fields = [f for f in status.decode("utf-8", "surrogateescape").split("\0") if f]
    at_base = tree_files(repo, base, selection)
    modified, created = [], []
    i = 0
    while i < len(fields):
        kind, path = fields[i], fields[i + 1]
        i += 3 if kind[:1] in "RC" else 2  # renames and copies carry two paths
        if kind == "M" and path in at_base:
            modified.append(path)
        elif kind == "A" and selection.wants(path):
            created.append(path)
    symbols = []
    for path in modified:
        spans = symbol_spans(blob_text(repo, at_base[path])) if path.endswith(".py") else []
        for line in changed_base_lines(repo, base, full, path, spans):
            found = innermost(spans, line)
            if found is not None and f"{path}::{found.name}" not in symbols:
                symbols.append(f"{path}::{found.name}")
    query_id = f"{name}@{full[:10]}"
    return FixQuery(query_id, full, base, message, modified, symbols, created)


def changed_base_lines(
    repo: Path, base: str, commit: str, path: str, spans: list[Span]
) -> list[int]:
    """Lines of the base version the fix removed or changed, and, for a pure insertion, the
    line before it when one definition spans both sides of the insertion point."""
    diff = git(repo, "diff", "-U0", "--no-color", base, commit, "--", path).decode(
        "utf-8", "replace"
    )
    lines: list[int] = []
    for match in HUNK.finditer(diff):
        start, count = int(match.group(1)), int(match.group(2) or "1")
        if count:
            lines += range(start, start + count)
        elif any(s.start <= start and start + 1 <= s.end for s in spans):
            lines.append(start)  # inserted after line `start`, inside a definition
    return lines


class WorkTree:
    """One folder holding a commit's selected files, moved between commits by writing only
    the files that differ (and deleting the ones that went away)."""

    def __init__(self, repo: Path, folder: Path, selection: Selection) -> None:
        self.repo, self.folder, self.selection = repo, folder, selection
        self.commit: str | None = None
        self.files: dict[str, str] = {}

    def move_to(self, commit: str) -> list[str]:
        """Check `commit` out into the folder; the paths written or deleted."""
        wanted = tree_files(self.repo, commit, self.selection)
        changed = [p for p, blob in wanted.items() if self.files.get(p) != blob]
        gone = [p for p in self.files if p not in wanted]
        for path in gone:
            (self.folder / path).unlink(missing_ok=True)
        for path, data in zip(changed, blobs(self.repo, [wanted[p] for p in changed]), strict=True):
            target = self.folder / PurePosixPath(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self.files, self.commit = wanted, commit
        return sorted(changed + gone)


def oldest_first(repo: Path, commits: list[str]) -> list[str]:
    """The commits in the order history made them (by commit time, then id)."""
    stamps = {}
    for commit in commits:
        stamps[commit] = int(git(repo, "log", "-1", "--format=%ct", commit).decode().strip())
    return sorted(commits, key=lambda c: (stamps[c], c))


def pinned_queries(root: Path, spec: PinnedRepository) -> tuple[Path, Selection, list[FixQuery]]:
    repo = (root / spec.path).resolve()
    selection = Selection(tuple(spec.extensions), tuple(spec.exclude))
    queries = [fix_query(repo, spec.name, fix.commit, selection) for fix in spec.fixes]
    return repo, selection, queries
