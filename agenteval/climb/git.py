"""The git a session needs: a clean tree, a scratch branch, one commit per kept round."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from agenteval.climb.artifacts import ClimbError

# Used only when the repository has no identity of its own configured.
IDENTITY = {"GIT_AUTHOR_NAME": "agenteval climb", "GIT_AUTHOR_EMAIL": "climb@agenteval.invalid"}


def git(root: Path, *args: str, check: bool = True) -> str:
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    try:
        done = subprocess.run(
            ["git", *args], cwd=root, env=env, capture_output=True, text=True, timeout=120
        )
    except FileNotFoundError as exc:
        raise ClimbError("git is not installed: a session works on a scratch branch") from exc
    if check and done.returncode != 0:
        raise ClimbError(f"git {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def show(root: Path, rev: str, path: str) -> bytes | None:
    """The bytes of `path` at `rev`, or None when it did not exist there."""
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    done = subprocess.run(
        ["git", "show", f"{rev}:{path}"], cwd=root, env=env, capture_output=True, timeout=60
    )
    return done.stdout if done.returncode == 0 else None


def require_repository(root: Path) -> None:
    top = git(root, "rev-parse", "--show-toplevel", check=False).strip()
    if not top:
        raise ClimbError(f"{root}: not a git repository: a session works on a scratch branch")
    if Path(top).resolve() != root.resolve():
        raise ClimbError(f"run from the repository root ({top})")


def changed_paths(root: Path) -> list[str]:
    """Modified, staged and untracked (not ignored) paths: what makes the tree dirty."""
    out = git(root, "status", "--porcelain=v1", "--untracked-files=all", "-z")
    paths = []
    entries = out.split("\0")
    index = 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        if len(entry) < 4:
            continue
        if entry[0] in "RC":  # a rename carries its source as the next entry
            index += 1
        paths.append(entry[3:])
    return sorted(set(paths))


def require_clean(root: Path, hint: str = "") -> None:
    """Refuse a dirty tree; `hint` is a further way out the caller offers."""
    dirty = changed_paths(root)
    if dirty:
        shown = ", ".join(dirty[:8]) + (f" and {len(dirty) - 8} more" if len(dirty) > 8 else "")
        raise ClimbError(
            f"the working tree is not clean ({shown}): commit or stash first, "
            "a session starts from a commit" + (f"; {hint}" if hint else "")
        )


def head(root: Path) -> str:
    return git(root, "rev-parse", "HEAD").strip()


def current_branch(root: Path) -> str:
    return git(root, "rev-parse", "--abbrev-ref", "HEAD").strip()


def start_branch(root: Path, name: str) -> None:
    if git(root, "rev-parse", "--verify", "--quiet", f"refs/heads/{name}", check=False).strip():
        raise ClimbError(f"branch {name} exists: choose another climb.branch")
    git(root, "checkout", "-q", "-b", name)


def commit(root: Path, paths: Sequence[str], message: str) -> str:
    """Commit `paths` (and nothing else); returns the new commit."""
    git(root, "add", "-A", "--", *paths)
    # `dvc repro` (autostage) writes this index through another git implementation just
    # before; tracked files are hashed again from the disk rather than trusted by the stat
    # data in the index, so the commit holds the bytes the round evaluated.
    present = [p for p in paths if (root / p).exists()]  # a deleted path has nothing to hash
    if present:
        git(root, "add", "--renormalize", "--", *present)
    if not git(root, "diff", "--cached", "--name-only").strip():
        return head(root)
    git(root, *_identity(root), "commit", "-q", "--no-verify", "-m", message)
    return head(root)


def _identity(root: Path) -> list[str]:
    """`-c` options naming the climb's identity when the repository has none of its own."""
    if git(root, "config", "user.email", check=False).strip():
        return []
    return ["-c", f"user.name={IDENTITY['GIT_AUTHOR_NAME']}",
            "-c", f"user.email={IDENTITY['GIT_AUTHOR_EMAIL']}"]  # fmt: skip


def common_dir(root: Path) -> Path:
    """The repository's own folder (`.git`, shared by its worktrees)."""
    found = Path(git(root, "rev-parse", "--git-common-dir").strip())
    return found if found.is_absolute() else (root / found).resolve()


def versions(root: Path, path: str) -> list[tuple[str, bytes]]:
    """(commit, bytes) of `path` in every commit of every ref (branches, remote-tracking
    branches, tags) that changed it: what the repository has ever recorded of the file."""
    commits = git(root, "rev-list", "--all", "--", path).split()
    if not commits:
        return []
    env = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    asked = "".join(f"{commit}:{path}\n" for commit in commits).encode()
    done = subprocess.run(["git", "cat-file", "--batch"], cwd=root, env=env, input=asked,
                          capture_output=True, timeout=120, check=True)  # fmt: skip
    out, at = [], 0
    data = done.stdout
    for commit in commits:
        end = data.index(b"\n", at)
        header = data[at:end].split()
        at = end + 1
        if header[-1] == b"missing":  # the commit deleted the file
            continue
        size = int(header[2])
        out.append((commit, data[at : at + size]))
        at += size + 1
    return out


def commit_only(root: Path, path: str, message: str) -> str | None:
    """Commit `path` alone (whatever else is staged or edited stays as it is); None when it
    has nothing new."""
    git(root, "add", "--", path)
    if not git(root, "diff", "--cached", "--name-only", "--", path).strip():
        return None
    git(root, *_identity(root), "commit", "-q", "--no-verify", "-m", message, "--only", "--", path)
    return head(root)
