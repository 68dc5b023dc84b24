"""A session from a dirty tree: on a git worktree of its own, the user's tree left alone.

`agenteval climb --worktree` checks HEAD out into a new worktree beside the repository
(`<repo>-climb-<session>`), lays the pinned corpus out there (from the shared content cache:
`data/corpora` is an output no commit holds) and runs the session in it. The user's working
tree, its uncommitted edits included, is never read or written: the session evaluates what
HEAD holds, as it would from a clean tree. Its MLflow runs go to the repository's own store
unless the params name another, so `mlflow ui` in the repository shows them.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from agenteval.climb import git
from agenteval.climb.artifacts import ClimbError
from agenteval.climb.evaluation import session_params


def worktree_path(root: Path, session: str) -> Path:
    """Beside the repository, never inside it: DVC would read the copy's dvc.yaml files as
    stages of the repository's own, and pytest and the linters would walk into it."""
    return root.parent / f"{root.name}-climb-{session}"


def open_worktree(root: Path, session: str, overrides: Sequence[str]) -> tuple[Path, list[str]]:
    """(the new worktree at HEAD, detached; the overrides the session runs it with)."""
    path = worktree_path(root, session)
    if path.exists():
        raise ClimbError(f"{path} exists: remove it or wait a second for a new session time")
    git.git(root, "worktree", "add", "-q", "--detach", str(path), "HEAD")
    try:
        lay_out_corpus(path)
    except ClimbError:
        close_worktree(root, path)
        raise
    return path, [*overrides, *_tracking_override(path, root, overrides)]


def lay_out_corpus(path: Path) -> None:
    """`data/corpora` in the worktree, as the `fetch` stage lays it out (verified bytes,
    hard-linked from the shared cache where it can)."""
    from agenteval.corpus.errors import FetchError
    from agenteval.corpus.fetch import fetch_sources

    sources = path / "eval/sources.yaml"
    if not sources.is_file():
        return
    try:
        fetch_sources(sources, path / "data/corpora", progress=False)
    except FetchError as exc:
        raise ClimbError(f"the worktree's corpus could not be laid out: {exc}") from exc


def _tracking_override(path: Path, root: Path, overrides: Sequence[str]) -> list[str]:
    """The repository's store for the session's runs when HEAD's params name none (the
    default, `<root>/mlflow.db`, would be a store inside the worktree that the user's
    `mlflow ui` never shows)."""
    configured = (session_params(path, overrides).get("tracking") or {}).get("uri")
    if configured or os.environ.get("MLFLOW_TRACKING_URI", "").strip():
        return []
    return [f"tracking.uri=sqlite:///{(root / 'mlflow.db').resolve().as_posix()}"]


def close_worktree(root: Path, path: Path) -> None:
    """Remove a worktree the session made (its files are the session's own, never the user's)."""
    git.git(root, "worktree", "remove", "--force", str(path), check=False)
