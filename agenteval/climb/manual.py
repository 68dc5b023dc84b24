"""`agenteval climb evaluate`: the keep rule applied to an edit a person made in the tree.

The parent is HEAD; the edit is whatever the working tree changes against it. The same guard,
the same paired train bound, the same counted held query through the split's ledger (a
query is committed at once, the ledger file alone, so a clone of this repository has it).
Kept: the edit stays in the tree (commit it). Not kept: every byte of HEAD is restored and
the edit is saved as a patch beside the evaluations (`git apply` brings it back). Held is
evaluated outside the repository and only its aggregate is said (agenteval.climb.sealed).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenteval.climb import git
from agenteval.climb.artifacts import Change, ClimbError, fingerprint, write
from agenteval.climb.ledger import LEDGER, NO_FLAGS, HoldoutFlags
from agenteval.climb.sealed import sealed_folder
from agenteval.climb.session import judge_candidate, prepare, stamp
from agenteval.fileio import write_json


def working_change(root: Path) -> Change:
    """HEAD's bytes and the working tree's for every changed path (b'' when absent)."""
    change = Change()
    for path in git.changed_paths(root):
        old = git.show(root, "HEAD", path) or b""
        new = (root / path).read_bytes() if (root / path).is_file() else b""
        change.files[path] = (old, new)
    return change


def evaluate_edit(
    root: Path, overrides: Sequence[str], flags: HoldoutFlags = NO_FLAGS
) -> dict[str, Any]:
    git.require_repository(root)
    change = working_change(root)
    if not change.files:
        raise ClimbError("the working tree has no edit against HEAD to evaluate")
    if LEDGER in change.files:
        raise ClimbError(
            f"{LEDGER} differs from HEAD: the ledger is written by climb alone; restore it "
            f"(git checkout -- {LEDGER})"
        )
    folder = root / "runs" / "climb" / f"evaluate-{stamp()}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "edit.patch").write_text(change.diff(), encoding="utf-8")
    record: dict[str, Any] = {
        "edit": ", ".join(sorted(change.files)),
        "diff": change.diff(),
        "head": git.head(root),
        "patch": str(folder / "edit.patch"),
    }
    edited = fingerprint(root, tuple(change.files))
    write(change, root, new=False)  # HEAD's bytes: the parent is evaluated first
    try:
        state = prepare(root, overrides, folder, flags)
        reasons = state.guard.check(change)
        if reasons:
            record |= {"outcome": "rejected", "reason": "; ".join(reasons)}
        else:
            with sealed_folder() as state.sealed:
                state.parent = {s: state.eval(s, "parent") for s in ("train", "held")}
                write(change, root)
                verdict, _ = judge_candidate(state, 1, change)
            train = verdict.pop("train_delta")
            record |= verdict | {"train": train.as_dict(), "held_queries": state.mechanism.queries}
            record |= {"holdout": state.ledger.summary(), "notes": state.ledger.notes}
    finally:  # kept, or refused before a decision (a moved split, a reset): the edit stays
        write(change, root, new=record.get("outcome", "kept") == "kept")
    if (root / LEDGER).is_file():  # what this evaluation appended, committed alone
        message = f"holdout ledger: {record['outcome']} edit evaluated ({folder.name})"
        record["ledger_commit"] = git.commit_only(root, LEDGER, message)
    if record["outcome"] == "kept" and fingerprint(root, tuple(change.files)) != edited:
        raise ClimbError("putting the edit back failed; it is saved in " + record["patch"])
    write_json(folder / "decision.json", record)
    return record
