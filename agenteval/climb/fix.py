"""`agenteval fix`: a fixer patches the agent in a scratch worktree, one climb round a patch.

The user's tree is not touched: the session runs in a git worktree of HEAD (under
runs/fix/<time>/tree, kept for inspection) on the branch fix/<time>, which holds one commit
per kept patch. Everything else is the climb's own session — the split, the guard, held
evaluated outside the repository, the keep rule by kind of edit (a patch is free text: held
must improve beyond noise), test once at the end — so a patch that helps train and not held
is reverted. Merge the branch to adopt the kept patches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agenteval.climb import git
from agenteval.climb.artifacts import ClimbError
from agenteval.climb.evaluation import session_params
from agenteval.climb.fixers import FIXERS, make_fixer
from agenteval.climb.proposers import Proposer
from agenteval.climb.run import run_session
from agenteval.climb.session import stamp


def scratch_worktree(root: Path, name: str) -> Path:
    """A worktree of HEAD for the fix session (the branch is made by the session)."""
    tree = root / "runs" / "fix" / name / "tree"
    tree.parent.mkdir(parents=True, exist_ok=True)
    git.git(root, "worktree", "add", "-q", "--detach", str(tree), "HEAD")
    return tree


def run_fix(
    root: Path,
    overrides: Sequence[str],
    fixer: str = "llm",
    echo: Callable[[str], None] = print,
    proposer: Proposer | None = None,
) -> dict[str, Any]:
    """One fix session; returns the climb summary with the worktree it ran in."""
    git.require_repository(root)
    git.require_clean(root)
    if proposer is None and fixer not in FIXERS:
        raise ClimbError(f"--fixer: {fixer!r} is not one of {', '.join(FIXERS)}")
    name = stamp()
    sets = [*overrides, f"climb.branch=fix/{name}"]
    session_params(root, sets)  # every value checked before a worktree exists
    start = git.head(root)
    tree = scratch_worktree(root, name)
    echo(f"fix {name}: worktree {tree}, branch fix/{name}")
    try:
        chosen = proposer or make_fixer(fixer, session_params(tree, sets), tree)
        summary = run_session(tree, sets, proposer=chosen, echo=echo)
    except BaseException:  # a failure or an interrupt (KeyboardInterrupt, SIGTERM's exit)
        discard(root, tree, f"fix/{name}", start, echo)
        raise
    summary["worktree"] = str(tree)
    echo(f"kept patches are commits on fix/{name}: git merge fix/{name} adopts them; "
         f"git worktree remove {tree} when done")  # fmt: skip
    return summary


def discard(root: Path, tree: Path, branch: str, start: str, echo: Callable[[str], None]) -> None:
    """Remove a failed session's worktree, and its branch unless it holds a kept patch
    (a commit beyond `start`): nothing the session made is left behind, nothing kept lost."""
    git.git(root, "worktree", "remove", "--force", str(tree), check=False)
    git.git(root, "worktree", "prune", check=False)
    tip = git.git(root, "rev-parse", "--verify", "-q", f"refs/heads/{branch}", check=False)
    if tip and tip.strip() != start:
        echo(f"fix: branch {branch} kept: it holds kept patches ({tip.strip()[:12]})")
    elif tip:
        git.git(root, "branch", "-D", branch, check=False)
    if tree.parent.is_dir() and not any(tree.parent.iterdir()):
        tree.parent.rmdir()
