"""Where and when a unit of work ran: the repository's commit and the time, per unit.

Provenance is per run (tracking.provenance), but a run resumed with `--resume`, a retry or
a `dvc repro` after a commit keeps the units it already had: its scorecard can hold units
measured on several commits (so can a tasks scorecard, whose stored attempts are reused).
Each transcript, model judge's verdict and coding-task attempt therefore carries the commit
it ran at; the scorecard lists the commits of its units and says when
they differ (`commits_of`, `spans_commits`), in its headline and in MLflow.

A unit whose output is a function of its code (an in-process agent such as the builtin,
the scripted simulator, the code judge, the tasks' scripted harness) records no commit and
no time: both would make the same outputs differ between commits and between a fresh clone
and the committed dvc.lock.
It is stamped by content instead (`code_stamp`): the source files that produced it, each
with its sha256, as the participants' details already name them (`fileio.code_of`). Which
commits such a unit measured is then git's to say: every commit whose tree holds those
files byte for byte (`holds_code`), so a clean checkout of the commit reproduces it.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path


def git_state(root: Path) -> dict[str, str]:
    """HEAD and whether the work tree differs from it; empty outside git or without git."""
    try:
        commit = _git(root, "rev-parse", "HEAD")
        changes = _git(root, "status", "--porcelain")
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "dirty": "true" if changes else "false"}


def head(path: Path) -> str | None:
    """The commit checked out in the repository holding `path` (which need not exist yet),
    or None outside git (a copy, an unpacked archive). A dirty tree is not part of a unit's
    stamp: the run's provenance records it."""
    folder = path
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        return _git(folder, "rev-parse", "HEAD") or None
    except (OSError, subprocess.SubprocessError):
        return None


def now() -> str:
    """The time a unit ran, as every stamp writes it (UTC, to the second)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def commits_of(stamps: Iterable[tuple[str | None, str | None]]) -> list[str]:
    """The distinct commits of (commit, time) stamps, in the order they first ran; units
    without a commit (outside git, or an in-process agent: see engine.untimed) add none."""
    first: dict[str, str] = {}
    for commit, ran_at in stamps:
        if commit and (commit not in first or (ran_at or "") < first[commit]):
            first[commit] = ran_at or ""
    return sorted(first, key=lambda c: (first[c], c))


def spans_commits(commits: Iterable[str]) -> bool:
    return len(set(commits)) > 1


def span_line(commits: list[str], code: Iterable[str], units: Mapping[str, int]) -> str | None:
    """The headline's line for a scorecard whose units ran on several commits or content
    stamps (each with its count of `units`); None when they did not. The main scorecard and
    the tasks scorecard both say it in these words."""
    stamps = [*commits, *code]
    if not spans_commits(stamps):
        return None
    each = ", ".join(f"`{s[:12] if s in commits else s}` ({units.get(s, 0)} units)" for s in stamps)
    what = "commits" if len(stamps) == len(commits) else "stamps (commits or code)"
    return f"- **Units span {len(stamps)} {what}:** {each}"


CODE_PREFIX = "code:"
CODE_STAMP_CHARS = 16
PACKAGE = "agenteval"  # where the files of a code stamp live in the repository


def code_stamp(*codes: Mapping[str, str] | None) -> tuple[str, dict[str, str]] | None:
    """The content stamp of a unit (`code:` + 16 hex digits) and the files it covers, from
    the {file: short sha256} maps of the participants that produced it; None: no code."""
    files: dict[str, str] = {}
    for code in codes:
        files |= {str(k): str(v) for k, v in (code or {}).items()}
    if not files:
        return None
    listing = "\n".join(f"{path} {sha}" for path, sha in sorted(files.items()))
    digest = hashlib.sha256(listing.encode()).hexdigest()[:CODE_STAMP_CHARS]
    return CODE_PREFIX + digest, dict(sorted(files.items()))


def holds_code(root: Path, commit: str, files: Mapping[str, str]) -> bool:
    """Whether `commit`'s tree holds every file of a code stamp with the same content (the
    package's files, keyed by their path inside it, with a sha256 prefix)."""
    if not files:
        return False
    for path, sha in files.items():
        try:
            done = subprocess.run(
                ["git", "show", f"{commit}:{PACKAGE}/{path}"],
                cwd=root, capture_output=True, timeout=30, check=True,
            )  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return False
        if not hashlib.sha256(done.stdout).hexdigest().startswith(sha):
            return False
    return True


def _git(root: Path, *args: str) -> str:
    # No optional locks: a status refresh must not take index.lock while DVC or the user
    # runs git in the same tree.
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    done = subprocess.run(
        ["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True, timeout=30
    )
    return done.stdout.strip()
