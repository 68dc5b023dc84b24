"""`agenteval climb`: one hillclimb session, round by round, on a scratch branch.

Start: a clean tree, the split (train / held / test) of the whole suite, the parent (HEAD)
evaluated on train and held. Each round: one edit from the proposer, the guard, train
evaluated against the parent with the same seeds; only if train improved beyond noise is
held asked (one counted Thresholdout query); keep = commit, otherwise every byte restored.
Stop after `patience` flat rounds, `rounds` rounds, a spent held split or a proposer with
nothing new; then test is evaluated once (baseline and final agent) and the remaining train
failures are rolled up by failure class.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agenteval.climb.artifacts import (
    Change,
    ClimbError,
    Edit,
    Spec,
    fingerprint,
    knob_values,
    load_spec,
    materialize,
    write,
)
from agenteval.climb.evaluation import (
    Evaluation,
    check_comparable,
    evaluate,
    session_params,
    split_suite,
    suites,
)
from agenteval.climb.failures import failures, redact, unique_per_scenario
from agenteval.climb.guard import Guard, GuardRules, Material, corpus_files
from agenteval.climb.holdout import HoldoutSpent, Thresholdout
from agenteval.climb.keep import Delta, held_verdict, keep_rule, paired_delta, train_improves
from agenteval.climb.ledger import NO_FLAGS, HeldSplit, HoldoutFlags, Ledger
from agenteval.climb.proposers import Context, Proposer
from agenteval.climb.sealed import SEALED, aggregate
from agenteval.fileio import digest_of, write_text
from agenteval.schema.suite import Suite
from agenteval.split import SPLITS


@dataclass
class State:
    """What a session knows; `held` and `test` never leave it for a proposer."""

    root: Path
    overrides: list[str]
    params: dict[str, Any]
    spec: Spec
    splits: dict[str, list[str]]
    guard: Guard
    mechanism: Thresholdout
    ledger: Ledger
    folder: Path
    parent: dict[str, Evaluation] = field(default_factory=dict)
    rounds: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, bytes] = field(default_factory=dict)
    start: dict[str, Evaluation] = field(default_factory=dict)
    screened: int = 0  # train try-outs proposers made
    suites: dict[str, Suite] = field(default_factory=dict)  # resolved once per split
    sealed: Path | None = None  # held and test evaluations (climb.sealed), outside the repo

    @property
    def climb(self) -> dict[str, Any]:
        return dict(self.params["climb"])

    def eval(self, split: str, tag: str) -> Evaluation:
        base = self.sealed if split in SEALED and self.sealed is not None else self.folder
        return evaluate(self.root, self.overrides, self.suites[split], split, base / tag / split)


def prepare(
    root: Path, overrides: Sequence[str], folder: Path, flags: HoldoutFlags = NO_FLAGS
) -> State:
    """Everything a session or `climb evaluate` needs, checked before any work."""
    params = session_params(root, overrides)
    spec = load_spec(root, params)
    suite, everything = suites(root, overrides)
    splits = {
        name: sorted(i.scenario.id for i in suite.items if i.split == name) for name in SPLITS
    }
    for name in ("train", "held"):
        if len(splits[name]) < 2:
            raise ClimbError(
                f"the {name} split has {len(splits[name])} scenario(s); a paired "
                "bound needs at least 2 (more scenarios, or pin some with split:)"
            )
    rules = GuardRules.from_params(params, root)
    guard = Guard(spec, Material.of(everything, corpus_files(root)), rules)
    ledger = Ledger.open(root, params, HeldSplit.of(everything), folder.name, flags)
    iterations = int(params["climb"]["iterations"])
    resolved = {name: split_suite(suite, ids, iterations) for name, ids in splits.items()}
    return State(root, list(overrides), params, spec, splits, guard, ledger.mechanism, ledger,
                 folder, suites=resolved)  # fmt: skip


def context(state: State, number: int) -> Context:
    """What the proposer may read: train failures (references removed), the parent's files
    and knobs as they are now (after any kept round) and its history."""
    train = state.parent["train"]
    found = failures(train.card, train.folder / "data" / "transcripts", state.guard.material)
    files = {p: (state.root / p).read_text(encoding="utf-8") for p in state.spec.files}
    history = [proposer_history(r) for r in state.rounds]
    knobs = knob_values(session_params(state.root, state.overrides), state.spec)
    ctx = Context(state.spec, knobs, files, unique_per_scenario(found), history, number)
    ctx.parent = digest_of(fingerprint(state.root, state.spec.artifacts))
    ctx.try_train = lambda edit: screen(state, number, edit)
    ctx.transcripts = train.folder / "data" / "transcripts"
    ctx.redact = lambda text: redact(text, state.guard.material)
    return ctx


def proposer_history(record: dict[str, Any]) -> dict[str, Any]:
    """A round as a proposer sees it: the edit, its outcome, the train gain and, when held
    was asked, only what Thresholdout released (its answer, who answered, the bound)."""
    held = record.get("held") or {}
    return {
        "round": record["round"],
        "edit": record["edit"],
        "outcome": record["outcome"],
        "train_gain": (record.get("train") or {}).get("mean"),
        "held": {k: held[k] for k in ("released", "answered_by", "bound") if k in held} or None,
    }


def screen(state: State, number: int, edit: Edit) -> Delta | None:
    """A proposer's try-out of an edit on train only; the files are restored byte for byte."""
    try:
        change = materialize(edit, state.root)
    except (ClimbError, OSError, UnicodeDecodeError):
        return None
    if state.guard.check(change):
        return None
    before = fingerprint(state.root, tuple(change.files))
    state.screened += 1
    write(change, state.root)
    try:
        tag = f"round-{number:02d}/screen-{state.screened:03d}"
        trial = state.eval("train", tag)
    finally:
        write(change, state.root, new=False)
        if fingerprint(state.root, tuple(change.files)) != before:
            raise ClimbError(f"round {number}: restoring the parent's files after a try failed")
    check_comparable(state.parent["train"], trial)
    conf = float(state.climb["conf"])
    return paired_delta(state.parent["train"].card, trial.card, state.splits["train"], conf)


def run_round(state: State, proposer: Proposer, number: int) -> dict[str, Any]:
    started = time.monotonic()
    edit = proposer.propose(context(state, number))
    prompt = getattr(proposer, "last_prompt", "")
    if prompt:  # what a model proposer read, kept for audit beside the round's evaluations
        write_text(state.folder / f"round-{number:02d}" / "proposer_prompt.md", prompt)
    if edit is None:
        return {
            "round": number,
            "edit": None,
            "outcome": "no_edit",
            "reason": "the proposer has nothing new to offer",
        }
    edit = _resolve(edit, state.spec)
    record: dict[str, Any] = {"round": number, "edit": edit.describe(), "why": edit.why}
    change: Change | None = None
    try:
        change = materialize(edit, state.root)
        reasons = state.guard.check(change)
        record["diff"] = change.diff()
    except (ClimbError, OSError, UnicodeDecodeError) as exc:
        reasons = [str(exc)]
    if change is None or reasons:
        proposer.observe(edit, "rejected", None)
        return record | {"outcome": "rejected", "reason": "; ".join(reasons)}
    before = fingerprint(state.root, tuple(change.files))
    write(change, state.root)
    try:
        verdict, evaluations = judge_candidate(state, number, change)
        record |= verdict
        if record["outcome"] == "kept":
            state.parent = evaluations
            record["changed"] = sorted(change.files)
    finally:
        if record.get("outcome") != "kept":
            write(change, state.root, new=False)
            if fingerprint(state.root, tuple(change.files)) != before:
                raise ClimbError(f"round {number}: restoring the parent's files failed")
    train = record.get("train_delta")
    proposer.observe(edit, record["outcome"], train)
    record["train"] = train.as_dict() if train else None
    record.pop("train_delta", None)
    record["seconds"] = round(time.monotonic() - started, 1)
    cost = getattr(proposer, "cost_usd", None)
    record["proposer_cost_usd"] = cost
    return record


def _resolve(edit: Edit, spec: Spec) -> Edit:
    """A file named as the agent folder lists it (system_prompt.md) is that editable file."""
    if edit.file is None or edit.file in spec.files:
        return edit
    named = [path for path in spec.files if Path(path).name == edit.file]
    return replace(edit, file=named[0]) if len(named) == 1 else edit


def _cost(*evaluations: Evaluation) -> float | None:
    known = [e.cost_usd for e in evaluations if e.cost_usd is not None]
    return round(sum(known), 6) if known else None


def judge_candidate(
    state: State, number: int, change: Change
) -> tuple[dict[str, Any], dict[str, Evaluation]]:
    """Train first; held only when train improved beyond noise (a counted query), judged by
    the keep rule of the edit's kind (knob: non-inferior; free text: improved)."""
    conf, tag = float(state.climb["conf"]), f"round-{number:02d}"
    rule = keep_rule(change, state.spec, state.climb)
    train = state.eval("train", tag)
    check_comparable(state.parent["train"], train)
    delta = paired_delta(state.parent["train"].card, train.card, state.splits["train"], conf)
    out: dict[str, Any] = {
        "train_delta": delta,
        "evaluations": {"train": str(train.folder)},
        "cost_usd": _cost(train),
    }
    if not train_improves(delta):
        why = (
            f"train did not improve beyond noise (gain {delta.mean:+.3f}, {conf:.0%} lower "
            f"bound {delta.low:+.3f} <= 0)"
        )
        return out | {"outcome": "reverted", "reason": why}, {}
    if state.mechanism.spent_reason():
        why = f"held split spent: {state.mechanism.spent_reason()}"
        return out | {"outcome": "reverted", "reason": why, "spent": True}, {}
    held = state.eval("held", tag)
    check_comparable(state.parent["held"], held)
    held_delta = paired_delta(state.parent["held"].card, held.card, state.splits["held"], conf)
    try:
        verdict = held_verdict(delta, held_delta, state.mechanism, rule, conf)
    except HoldoutSpent as exc:
        return out | {
            "outcome": "reverted",
            "reason": f"held split spent: {exc}",
            "spent": True,
        }, {}
    finally:
        state.ledger.save()
    out["held"] = {
        "delta": aggregate(held_delta.as_dict()),
        "released": verdict.released,
        "answered_by": verdict.source,
        "bound": verdict.bound,
        "query": state.mechanism.queries,
        "allowance": verdict.allowance,
    }
    out["cost_usd"] = _cost(train, held)
    out["keep_rule"] = rule.name
    if not verdict.kept:
        return out | {"outcome": "reverted", "reason": rule.describe(verdict.bound)}, {}
    why = f"train gain {delta.mean:+.3f} (lower bound {delta.low:+.3f} > 0) and "
    why += rule.describe(verdict.bound)
    return out | {"outcome": "kept", "reason": why}, {"train": train, "held": held}


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
