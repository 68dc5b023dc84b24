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
from agenteval.climb.evaluation import session_params
from agenteval.climb.fixers import make_fixer
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
    name = stamp()
    sets = [*overrides, f"climb.branch=fix/{name}"]
    session_params(root, sets)  # every value checked before a worktree exists
    tree = scratch_worktree(root, name)
    echo(f"fix {name}: worktree {tree}, branch fix/{name}")
    chosen = proposer or make_fixer(fixer, session_params(tree, sets), tree)
    summary = run_session(tree, sets, proposer=chosen, echo=echo)
    summary["worktree"] = str(tree)
    echo(f"kept patches are commits on fix/{name}: git merge fix/{name} adopts them; "
         f"git worktree remove {tree} when done")  # fmt: skip
    return summary
