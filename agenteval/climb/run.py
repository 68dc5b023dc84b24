"""The session driver: rounds until a stop, then test once, the rollup, reports and commits."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agenteval.climb import git
from agenteval.climb.artifacts import ClimbError, fingerprint
from agenteval.climb.evaluation import Evaluation, session_params
from agenteval.climb.failures import failures, rollup
from agenteval.climb.keep import Delta, judged_pass_rate, paired_delta
from agenteval.climb.ledger import LEDGER, NO_FLAGS, HoldoutFlags
from agenteval.climb.proposers import LLMProposer, Proposer, SearchProposer
from agenteval.climb.report import write_reports
from agenteval.climb.sealed import SEALED, aggregate, sealed_folder
from agenteval.climb.session import State, prepare, run_round, stamp
from agenteval.climb.worktree import close_worktree, open_worktree

Echo = Callable[[str], None]
FRESH_SPLIT = "deal a fresh one with a new suite.split.salt and --new-split"
WORKTREE_HINT = (
    "or `agenteval climb --worktree` runs the session from HEAD on a worktree of its own, "
    "your changes left as they are"
)


def make_proposer(params: dict[str, Any], root: Path, name: str | None = None) -> Proposer:
    chosen = name or params["climb"]["proposer"]
    if chosen == "search":
        section = params["climb"]
        return SearchProposer(seed=int(section["seed"]), trials=int(section["search_trials"]))
    if chosen == "llm":
        return LLMProposer(params, root)
    raise ClimbError(f"climb.proposer: unknown proposer {chosen!r} (search, llm)")


def run_session(
    root: Path,
    overrides: Sequence[str],
    proposer: Proposer | None = None,
    echo: Echo = print,
    flags: HoldoutFlags = NO_FLAGS,
    worktree: bool = False,
) -> dict[str, Any]:
    """One session; returns the summary written to reports/climb.json. With `worktree` it
    runs on a worktree of its own (climb.worktree), a dirty tree left as it is."""
    git.require_repository(root)
    session = stamp()
    if not worktree:
        git.require_clean(root, WORKTREE_HINT)
        return _prepared(root, overrides, session, proposer, echo, flags)
    tree, overrides = open_worktree(root, session, overrides)
    echo(f"climb {session}: on worktree {tree} (HEAD); your working tree is left as it is")
    try:
        summary = _prepared(tree, overrides, session, proposer, echo, flags)
    except ClimbError:
        if git.current_branch(tree) == "HEAD":  # refused before its branch: no litter left
            close_worktree(root, tree)
        raise
    echo(f"worktree {tree} on branch {summary['branch']}: `git worktree remove {tree}` "
         "when done with it")  # fmt: skip
    return summary


def _prepared(
    root: Path,
    overrides: Sequence[str],
    session: str,
    proposer: Proposer | None,
    echo: Echo,
    flags: HoldoutFlags,
) -> dict[str, Any]:
    proposer = proposer or make_proposer(session_params(root, overrides), root)
    state = prepare(root, overrides, root / "runs" / "climb" / session, flags)
    spent = state.mechanism.spent_reason()
    if spent:
        raise ClimbError(f"the held split is spent ({spent}): {FRESH_SPLIT}")
    with sealed_folder() as state.sealed:
        return _session(state, session, proposer, echo)


def _session(state: State, session: str, proposer: Proposer, echo: Echo) -> dict[str, Any]:
    root = state.root
    branch = state.climb.get("branch") or f"climb/{session}"
    started, origin = time.monotonic(), git.current_branch(root)
    for note in state.ledger.notes:
        echo(note)
    git.start_branch(root, branch)
    state.ledger.flush()  # the split it opened or the reset it records, before any query
    summary: dict[str, Any] = {
        "session": session,
        "branch": branch,
        "from_branch": origin,
        "start_commit": git.head(root),
        "proposer": proposer.name,
    }
    tracker = _tracker(state, session, summary)
    state.baseline = {p: (root / p).read_bytes() for p in state.spec.artifacts}
    echo(f"climb {session}: branch {branch}; split {_counts(state)}; evaluating the parent")
    queries_before = state.mechanism.queries
    try:
        state.parent = {s: state.eval(s, "round-00") for s in ("train", "held")}
        state.start = dict(state.parent)
        summary["stop_reason"] = _rounds(state, proposer, tracker, echo)
    except BaseException:
        if tracker is not None:  # the parent run says the session broke off
            tracker.finish(summary | {"stop_reason": "failed"}, [], failed=True)
        raise
    summary["held_queries"] = {
        "session": state.mechanism.queries - queries_before,
        "split_total": state.mechanism.queries,
        "max_queries": state.mechanism.max_queries,
        "overfits": state.mechanism.overfits,
        "budget": state.mechanism.budget,
    }
    summary |= _closing(state)
    summary["holdout"] = state.ledger.summary()
    summary["seconds"] = round(time.monotonic() - started, 1)
    files = write_reports(root, summary)
    message = f"climb {session}: {_headline(summary)}"
    summary["final_commit"] = git.commit(root, [*files, LEDGER], message)
    if tracker is not None:
        tracker.finish(summary, [root / f for f in files])
    echo(_closing_lines(summary))
    for line in _holdout_lines(summary["holdout"]):
        echo(line)
    return summary


def _counts(state: State) -> str:
    return ", ".join(f"{name} {len(ids)}" for name, ids in state.splits.items())


def _tracker(state: State, session: str, summary: dict[str, Any]) -> Any:
    if not (state.params.get("tracking") or {}).get("enabled", True):
        return None
    from agenteval.tracking.climb import ClimbTracker

    tracker = ClimbTracker(state.params, state.root)
    tags = {
        "climb.session": session,
        "climb.branch": summary["branch"],
        "climb.proposer": summary["proposer"],
        "climb.start_commit": summary["start_commit"],
        "climb.holdout_split": state.ledger.split.digest,
    }
    if state.ledger.parent:
        tags["climb.holdout_parent"] = state.ledger.parent
    if state.ledger.reset:  # a holdout reset is said on the run, from its start
        tags["climb.holdout_reset"] = _reset_text(state.ledger.reset)
    tracker.start(
        f"climb-{session}", {"climb": state.climb, "split": state.params["suite"]["split"]}, tags
    )
    return tracker


def _rounds(state: State, proposer: Proposer, tracker: Any, echo: Echo) -> str:
    """Run rounds until one of the stops; returns why it stopped."""
    patience, flat = int(state.climb["patience"]), 0
    for number in range(1, int(state.climb["rounds"]) + 1):
        spent = state.mechanism.spent_reason()
        if spent:
            return f"held split spent: {spent}; {FRESH_SPLIT}"
        record = run_round(state, proposer, number)
        if record["outcome"] == "kept":
            record["commit"] = _commit_round(state, record)
        state.rounds.append(record)
        if tracker is not None:
            tracker.log_round(record)
        echo(f"round {number}: {record.get('edit')}: {record['outcome']} ({record.get('reason')})")
        if record.get("held"):
            echo(held_line(record["held"]))
        if record.get("spent"):
            return f"{record['reason']}; {FRESH_SPLIT}"
        if record["outcome"] == "no_edit":
            return str(record["reason"])
        flat = 0 if record["outcome"] == "kept" else flat + 1
        if flat >= patience:
            return f"{flat} flat round(s) in a row (patience {patience})"
    return f"all {state.climb['rounds']} rounds used"


def _commit_round(state: State, record: dict[str, Any]) -> str:
    """The kept edit as a commit; with climb.repro, `dvc repro`'s outputs go in with it."""
    paths = [*record["changed"], LEDGER]  # the round's held query goes in with it
    if state.climb.get("repro") and (state.root / "dvc.yaml").is_file():
        done = subprocess.run(
            ["dvc", "repro"], cwd=state.root, capture_output=True, text=True, timeout=3600
        )
        if done.returncode != 0:
            raise ClimbError(
                f"dvc repro after round {record['round']} failed: "
                f"{(done.stderr or done.stdout).strip()[-2000:]}"
            )
        paths += ["dvc.lock", "reports"]
    train = record["train"]
    message = (
        f"climb round {record['round']}: {record['edit']}\n\n{record['reason']}\n"
        f"train pass share {train['parent']:.3f} -> {train['candidate']:.3f}"
    )
    return git.commit(state.root, paths, message)


def _closing(state: State) -> dict[str, Any]:
    """Test once (baseline and final agent), gains per split, optimism gap, the rollup."""
    conf = float(state.climb["conf"])
    kept = [r for r in state.rounds if r["outcome"] == "kept"]
    final_test = state.eval("test", "test-final")
    start_test = _baseline_test(state) if kept else final_test
    figures: dict[str, Any] = {}
    for split, before, after in (
        ("train", state.start["train"], state.parent["train"]),
        ("held", state.start["held"], state.parent["held"]),
        ("test", start_test, final_test),
    ):
        gain = _gain(before, after, state.splits[split], conf)
        figures[split] = aggregate(gain) if split in SEALED else gain
    figures["optimism_gap"] = round(figures["train"]["mean"] - figures["test"]["mean"], 6)
    train = state.parent["train"]
    found = failures(train.card, train.folder / "data" / "transcripts", state.guard.material)
    outcomes = [r["outcome"] for r in state.rounds]
    return {
        "split": {"rule": state.params["suite"]["split"], "ids": state.splits},
        "rounds": state.rounds,
        "kept": outcomes.count("kept"),
        "reverted": outcomes.count("reverted"),
        "rejected": outcomes.count("rejected"),
        "figures": figures,
        "rollup": rollup(found),
        "params": state.climb,
    }


def _gain(before: Evaluation, after: Evaluation, ids: list[str], conf: float) -> dict[str, Any]:
    if len(ids) >= 2:
        delta: Delta = paired_delta(before.card, after.card, ids, conf)
        return delta.as_dict()
    start, end = judged_pass_rate(before.card, ids), judged_pass_rate(after.card, ids)
    return {
        "mean": (end or 0) - (start or 0),
        "low": None,
        "n": len(ids),
        "parent_judged": start,
        "candidate_judged": end,
    }


def _baseline_test(state: State) -> Evaluation:
    """The session's starting agent on test: its bytes back for one evaluation, then restored."""
    final = {p: (state.root / p).read_bytes() for p in state.baseline}
    before = fingerprint(state.root, tuple(final))
    try:
        for path, data in state.baseline.items():
            (state.root / path).write_bytes(data)
        return state.eval("test", "test-baseline")
    finally:
        for path, data in final.items():
            (state.root / path).write_bytes(data)
        if fingerprint(state.root, tuple(final)) != before:
            raise ClimbError("restoring the final agent after the baseline test run failed")


def _headline(summary: dict[str, Any]) -> str:
    f = summary["figures"]
    return (
        f"train {f['train']['mean']:+.3f}, held {f['held']['mean']:+.3f}, test "
        f"{f['test']['mean']:+.3f}; {summary['kept']} kept, {summary['reverted']} reverted, "
        f"{summary['rejected']} rejected"
    )


def _closing_lines(summary: dict[str, Any]) -> str:
    f = summary["figures"]
    lines = [
        f"stopped: {summary['stop_reason']}",
        f"rounds: {summary['kept']} kept, {summary['reverted']} reverted, "
        f"{summary['rejected']} rejected",
        f"train gain {f['train']['mean']:+.3f}   held gain {f['held']['mean']:+.3f}   "
        f"test gain {f['test']['mean']:+.3f}   optimism gap {f['optimism_gap']:+.3f}",
        f"held queries: {summary['held_queries']['session']} this session, "
        f"{summary['held_queries']['split_total']} of {summary['held_queries']['max_queries']} "
        "on this split",
    ]
    for row in summary["rollup"][:8]:
        lines.append(
            f"  {row['iterations']:3d} x {row['failure_class']} "
            f"({len(row['scenarios'])} scenario(s))"
        )
    lines.append(
        f"branch {summary['branch']} at {summary['final_commit'][:12]}; "
        "reports/climb.json, reports/climb/deltas.png"
    )
    return "\n".join(lines)


def held_line(held: dict[str, Any]) -> str:
    """A round's held query on the console: the aggregate and what Thresholdout released."""
    delta = held["delta"]
    return (
        f"  held: gain {delta['mean']:+.3f} over {delta['n']} scenarios; Thresholdout "
        f"answered {held['released']:+.3f} from {held['answered_by']}, bound "
        f"{held['bound']:+.3f} (query {held['query']})"
    )


def _reset_text(reset: dict[str, Any]) -> str:
    return (
        ", ".join(
            f"climb.holdout.{k} {reset['before'][k]} -> {reset['after'][k]}"
            for k in reset["changed"]
        )
        + f" (held split {reset['split'][:12]})"
    )


def _holdout_lines(holdout: dict[str, Any]) -> list[str]:
    lines = [
        f"held ledger: {holdout['ledger']}, split {holdout['split'][:12]}"
        + (f" (parent {holdout['parent'][:12]})" if holdout.get("parent") else "")
        + f": {holdout['queries']} of {holdout['max_queries']} queries, "
        f"{holdout['overfits']} of {holdout['budget']} answered from held"
    ]
    if holdout.get("reset"):
        lines.append(f"HOLDOUT RESET this session: {_reset_text(holdout['reset'])}")
    if len(holdout.get("resets") or []) > (1 if holdout.get("reset") else 0):
        lines.append(f"this split's limits were reset {len(holdout['resets'])} time(s) in all")
    return lines
