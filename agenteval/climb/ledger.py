"""The held split's ledger: every held query, in the repository, appended and never rewritten.

`eval/climb/holdout_ledger.jsonl` is a git-tracked file (a clone has it; docs/climb.md says
why git and not DVC): one JSON object a line, each carrying the sha256 of its own content
(`hash`) and of the line before it (`prev`), so an edited line, or one taken out of the
middle, is refused with its `path:line`.

What it protects is the held split's content: the digest of every held scenario's id and
ground truth, over every scenario file (never a path, a selection or a param), so selecting
fewer scenarios or pinning one where it already is changes nothing. A query counts once ANY
version of the file the repository has recorded holds it: the working tree, every commit of
every branch, remote-tracking branch and tag, and a journal in the repository's own folder
(`.git/agenteval/`, which outlives a checkout or a deleted branch). Removing lines, switching
branches or cloning therefore gives no query back.

Entries (`kind`):
  split  the held split sessions work on: its digest, every scenario's split, each held
         scenario's ground-truth digest, the Thresholdout limits it opened with, its parent
  query  one held query: the split, who answered (train | held), the noise draws it used
  reset  the limits of a split changed (`--reset-holdout`): before and after
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agenteval.climb import git
from agenteval.climb.artifacts import ClimbError
from agenteval.climb.holdout import Thresholdout
from agenteval.fileio import canonical_json, digest_of, sha256_text, write_atomic
from agenteval.schema.suite import Suite, SuiteItem

LEDGER = "eval/climb/holdout_ledger.jsonl"
JOURNAL = "agenteval/holdout_ledger.jsonl"  # under the repository's own folder (.git)
LIMITS = ("max_queries", "budget", "threshold", "noise", "seed")


@dataclass(frozen=True)
class HeldSplit:
    """What the ledger protects, and where every scenario file sits."""

    digest: str
    held: dict[str, str]  # held scenario id -> digest of its ground truth
    assignment: dict[str, str]  # every scenario file's id -> split
    rule: dict[str, Any]  # the salt and fractions that dealt it

    @classmethod
    def of(cls, everything: Suite) -> HeldSplit:
        """From the suite of every scenario file (no selection)."""
        held = {i.scenario.id: _truth(i) for i in everything.items if i.split == "held"}
        assignment = {i.scenario.id: i.split or "train" for i in everything.items}
        rule = {k: v for k, v in (everything.split or {}).items() if k != "counts"}
        return cls(digest_of(sorted(held.items())), held, assignment, rule)


def _truth(item: SuiteItem) -> str:
    """A scenario's ground truth: each turn's, and the manifest answers it names."""
    turns = [t.ground_truth.model_dump(mode="json") if t.ground_truth else None
             for t in item.scenario.turns]  # fmt: skip
    return digest_of({"turns": turns, "facts": {k: f.answer for k, f in item.facts.items()}})


@dataclass(frozen=True)
class HoldoutFlags:
    """What a person asked for on the command line: never a param (a commit would keep it)."""

    new_split: bool = False  # the split moved: start the ledger of the new one
    reset: bool = False  # the limits differ from the ledger's: record a holdout reset


NO_FLAGS = HoldoutFlags()


# ------------------------------------------------------------------ the file


def _hash(entry: Mapping[str, Any]) -> str:
    return sha256_text(canonical_json({k: v for k, v in entry.items() if k != "hash"}))


def _lines(
    data: bytes, where: str, strict: bool = True, fix: str = f"git checkout -- {LEDGER}"
) -> list[tuple[int, dict[str, Any]]]:
    """(line number, entry) of every line whose hash matches its content. A line that does
    not parse or match is an edit: refused with where:line, or left out when not strict (a
    committed version whose edit was later undone)."""
    out = []
    for number, raw in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            entry = json.loads(raw)
        except json.JSONDecodeError:
            entry = None
        if isinstance(entry, dict) and entry.get("hash") == _hash(entry):
            out.append((number, entry))
        elif strict:
            raise ClimbError(
                f"{where}:{number}: this ledger line was edited (its hash does not match "
                f"its content); the ledger is append-only: restore it ({fix})"
            )
    return out


def _chain(data: bytes, where: str) -> list[dict[str, Any]]:
    """The working tree's file: every line intact, each appended after a line still there
    (git's union merge of two branches' appends keeps both, each after its own line)."""
    seen, out = {""}, []
    for number, entry in _lines(data, where):
        if entry.get("prev") not in seen:
            raise ClimbError(
                f"{where}:{number}: the line this one was appended after is gone (a line was "
                f"removed); the ledger is append-only: restore it (git checkout -- {LEDGER})"
            )
        seen.add(entry["hash"])
        out.append(entry)
    return out


def _journal_entries(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):  # a write cut off by a crash: the line never was
        data = data[: data.rfind(b"\n") + 1]
    return [entry for _, entry in _lines(data, str(path), fix="undo the edit of this journal")]


def _history_entries(root: Path) -> list[dict[str, Any]]:
    """Every intact line of every version of the file the repository has committed."""
    return [entry for _, data in git.versions(root, LEDGER) for _, entry in _lines(data, "", False)]


def _order(entry: Mapping[str, Any]) -> tuple[str, int, str]:
    return (str(entry.get("at")), int(entry.get("seq", 0)), str(entry.get("hash")))


# ------------------------------------------------------------------ the ledger


@dataclass
class Ledger:
    root: Path
    split: HeldSplit
    mechanism: Thresholdout
    session: str
    parent: str | None = None  # the split before this one (a new split records it)
    notes: list[str] = field(default_factory=list)  # what opening it did, for the console
    reset: dict[str, Any] | None = None  # this session's holdout reset
    resets: list[dict[str, Any]] = field(default_factory=list)  # every reset of the split
    pending: list[dict[str, Any]] = field(default_factory=list)  # written with the next save
    recorded: tuple[int, int, int] = (0, 0, 0)  # queries, overfits, draws in the ledger

    @property
    def path(self) -> Path:
        return self.root / LEDGER

    @classmethod
    def open(
        cls,
        root: Path,
        params: Mapping[str, Any],
        split: HeldSplit,
        session: str,
        flags: HoldoutFlags = NO_FLAGS,
    ) -> Ledger:
        """The ledger of the current held split; refuses what would reset it unrecorded."""
        own = _chain(_read(root / LEDGER), LEDGER)
        known = _union(own, _history_entries(root), _journal_entries(_journal(root)))
        wanted = {k: params["climb"]["holdout"][k] for k in LIMITS}
        ledger = cls(root, split, Thresholdout(**wanted), session)
        active = _active(own, known)
        if active is None:
            ledger._open_split(None, None, wanted, "the first held split of this repository")
        else:
            ledger._check_moves(active, known, wanted, flags.new_split)
        ledger._check_limits(_limits(known, split.digest, ledger.pending)[0], wanted, flags.reset)
        limits, ledger.resets = _limits(known, split.digest, ledger.pending)
        ledger._replay([*known, *ledger.pending], limits)
        return ledger

    def _open_split(
        self, parent: str | None, continues: str | None, limits: Mapping[str, Any], why: str
    ) -> None:
        self.parent = parent
        self.pending.append(
            {
                "kind": "split",
                "split": self.split.digest,
                "parent": parent,
                "continues": continues,
                "why": why,
                "rule": self.split.rule,
                "assignment": self.split.assignment,
                "held": self.split.held,
                "limits": dict(limits),
            }
        )

    def _check_moves(
        self, active: dict[str, Any], known: list[dict[str, Any]], wanted: dict[str, Any],
        new_split: bool,
    ) -> None:  # fmt: skip
        """The split moved since `active`: refused without --new-split; with it, a held
        split seen before continues its own ledger, one whose held scenarios were mostly
        held in its parent continues the parent's (queries spent on the same scenarios stay
        spent), any other starts a new ledger. Either way its parent is recorded."""
        moved = describe_moves(active, self.split)
        digest, parent = self.split.digest, active["split"]
        if not moved:
            if new_split:
                raise ClimbError(f"--new-split: nothing moved; the held split is {digest[:12]}")
            self.parent = active.get("parent")
            return
        before = _first_limits(known, digest)
        shared = sum(sid in active["held"] for sid in self.split.held)
        continues = before is None and 2 * shared > len(self.split.held)
        if before is not None:
            fate = "its own ledger, opened before, continues"
        elif continues:
            fate = (
                f"it continues the ledger of its parent {parent[:12]} ({shared} of "
                f"{len(self.split.held)} held scenarios were held there)"
            )
        else:
            fate = f"it starts a new ledger whose parent, {parent[:12]}, is recorded"
        if not new_split:
            raise ClimbError(
                "\n".join([*moved, f"the split moved: rerun with --new-split; {fate}"])
            )
        self.notes += [*moved, f"held split {digest[:12]}: {fate}; {_overlap(active, self.split)}"]
        limits = before or (_limits(known, parent, [])[0] if continues else wanted)
        self._open_split(parent, parent if continues else None, limits, "--new-split: " + moved[0])

    def _check_limits(
        self, limits: Mapping[str, Any], wanted: Mapping[str, Any], reset: bool
    ) -> None:
        differ = [k for k in LIMITS if limits[k] != wanted[k]]
        if not differ:
            if reset:
                raise ClimbError(
                    "--reset-holdout: climb.holdout is what the ledger holds; nothing to reset"
                )
            return
        said = ", ".join(f"climb.holdout.{k} = {wanted[k]} (the ledger's: {limits[k]})"
                         for k in differ)  # fmt: skip
        if not reset:
            raise ClimbError(
                f"{said}: held split {self.split.digest[:12]} keeps the limits of its ledger "
                f"({LEDGER}); set them back, or pass --reset-holdout to record a holdout "
                "reset on this session (MLflow, reports/climb.json)"
            )
        self.reset = {"split": self.split.digest, "before": dict(limits),
                      "after": dict(wanted), "changed": differ}  # fmt: skip
        self.pending.append({"kind": "reset", **self.reset})
        self.notes.append(f"HOLDOUT RESET recorded: {said}")

    def _replay(self, known: list[dict[str, Any]], limits: Mapping[str, Any]) -> None:
        """The mechanism's state from every query of this split and of the splits it
        continues."""
        lineage = _lineage(known, self.split.digest)
        asked = sorted(
            (e for e in known if e["kind"] == "query" and e["split"] in lineage), key=_order
        )
        m = Thresholdout(**{k: limits[k] for k in LIMITS})
        m.queries = len(asked)
        m.overfits = sum(e["source"] == "held" for e in asked)
        m.draws = sum(int(e["draws"]) for e in asked)
        m.gamma = asked[-1]["gamma"] if asked else None
        self.mechanism = m
        self.recorded = (m.queries, m.overfits, m.draws)

    def save(self) -> None:
        """Append what happened since the last save: the opening, and a query if one was
        asked (its answer's source and the noise it drew)."""
        m, (queries, overfits, draws) = self.mechanism, self.recorded
        if m.queries > queries:
            self.pending.append(
                {
                    "kind": "query",
                    "split": self.split.digest,
                    "query": m.queries,
                    "source": "held" if m.overfits > overfits else "train",
                    "draws": m.draws - draws,
                    "gamma": m.gamma,
                }
            )
            self.recorded = (m.queries, m.overfits, m.draws)
        self.flush()

    def flush(self) -> None:
        """Write the pending entries to the file and the journal."""
        if not self.pending:
            return
        old = _read(self.path)
        chain = _chain(old, LEDGER)
        prev = chain[-1]["hash"] if chain else ""
        seq = max((int(e["seq"]) for e in chain), default=0)
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        lines = []
        for entry in self.pending:
            seq += 1
            head = {"seq": seq, "kind": entry["kind"], "split": entry["split"], "at": at}
            full = head | {"session": self.session} | entry | {"prev": prev}
            full["hash"] = prev = _hash(full)  # of the canonical form: key order is for reading
            lines.append(json.dumps(full, ensure_ascii=False, separators=(",", ":")) + "\n")
        if old and not old.endswith(b"\n"):
            old += b"\n"
        write_atomic(self.path, old + "".join(lines).encode("utf-8"))
        journal = _journal(self.root)
        journal.parent.mkdir(parents=True, exist_ok=True)
        with journal.open("ab") as handle:
            handle.write("".join(lines).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        self.pending = []

    def summary(self) -> dict[str, Any]:
        """What climb.json and MLflow say of the ledger (aggregate: no scenario results)."""
        m = self.mechanism
        return {"ledger": LEDGER, "split": self.split.digest, "parent": self.parent,
                "queries": m.queries, "max_queries": m.max_queries, "overfits": m.overfits,
                "budget": m.budget, "reset": self.reset, "resets": self.resets}  # fmt: skip


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.is_file() else b""


def _journal(root: Path) -> Path:
    return git.common_dir(root) / JOURNAL


def _union(*groups: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for group in groups:
        for entry in group:
            seen.setdefault(entry["hash"], entry)
    return sorted(seen.values(), key=_order)


def _active(own: list[dict[str, Any]], known: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The split sessions work on: the last one this checkout's file opened, else the last
    one the repository knows of (a clone whose branch never held the file)."""
    for entries in (own, known):
        splits = [e for e in entries if e["kind"] == "split"]
        if splits:
            return splits[-1]
    return None


def _lineage(known: list[dict[str, Any]], digest: str) -> set[str]:
    """The split and every split it continues (a new split mostly made of its parent)."""
    found, todo = set(), [digest]
    while todo:
        current = todo.pop()
        if current not in found:
            found.add(current)
            opened = [e for e in known if e["kind"] == "split" and e["split"] == current]
            todo += [e["continues"] for e in opened if e.get("continues")]
    return found


def _first_limits(known: list[dict[str, Any]], digest: str) -> dict[str, Any] | None:
    opened = [e for e in known if e["kind"] == "split" and e["split"] == digest]
    return dict(opened[0]["limits"]) if opened else None


def _limits(
    known: list[dict[str, Any]], digest: str, pending: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The split's limits now (opened with, then every reset) and its resets."""
    entries = [*known, *pending]
    opened = _first_limits(entries, digest)
    assert opened is not None, "a split is opened before its limits are read"
    resets = [e for e in entries if e["kind"] == "reset" and e["split"] == digest]
    limits = dict(resets[-1]["after"]) if resets else opened
    return limits, [{k: e.get(k) for k in ("at", "session", "before", "after")} for e in resets]


def describe_moves(active: Mapping[str, Any], now: HeldSplit) -> list[str]:
    """Lines naming every scenario whose split or held ground truth changed since `active`
    was opened; none when nothing did."""
    before: dict[str, str] = active["assignment"]
    old_held: dict[str, str] = active["held"]
    moved: dict[str, list[str]] = {}
    for sid, split in sorted(now.assignment.items()):
        if sid in before and before[sid] != split:
            moved.setdefault(f"{before[sid]} -> {split}", []).append(sid)
    for name, ids in (
        ("held ground truth changed", [s for s in now.held if old_held.get(s, now.held[s])
                                       != now.held[s]]),
        ("held scenario file removed", [s for s in old_held if s not in now.assignment]),
        ("new scenario file in held", [s for s in now.held if s not in before]),
    ):  # fmt: skip
        if ids:
            moved[name] = sorted(ids)
    if not moved and active["split"] == now.digest:
        return []
    count = len({s for ids in moved.values() for s in ids})
    salt = (active.get("rule") or {}).get("salt"), now.rule.get("salt")
    head = (
        f"the split moved since held split {active['split'][:12]} was opened ({active['at']}"
        + (f"; salt {salt[0]!r} -> {salt[1]!r}" if salt[0] != salt[1] else "")
        + f"): {count} of {len(now.assignment)} scenarios"
    )
    return [head] + [f"  {name} ({len(ids)}): {', '.join(ids)}" for name, ids in moved.items()]


def _overlap(active: Mapping[str, Any], now: HeldSplit) -> str:
    before: dict[str, str] = active["assignment"]
    held = sorted(now.held)
    again = sum(before.get(s) == "held" for s in held)
    trained = sum(before.get(s) == "train" for s in held)
    return (
        f"{len(held)} held scenarios: {again} were held before (already queried), "
        f"{trained} were train (a proposer saw their failures)"
    )
