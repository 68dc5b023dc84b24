"""The train / held / test split of scenario ids used by hillclimbing (pure: no I/O).

Each id gets a point in [0, 1) from a salted sha256; within a category the ids are ordered by
that point and dealt by the position of their midpoint, so every category is split in the
configured proportions (to within one scenario) and nothing but the salt and the set of
scenarios decides where an id lands. A scenario may pin its split (`split:` in its file);
pinned ids keep it and the others are dealt among themselves.

Scenarios that share an expected answer are dealt together: an edit that memorises a train
answer must not be rewarded on held or test by the same value. They form a group (linked
through any answer they share, compared after `normalise_answer`), the group is dealt as one
unit of its size in the category of its smallest id, by the point of that id, and a pin on
any member carries the whole group. Only pins can still split a group; `overlaps` reports
every answer shared across splits.

Stability: the split is computed over every scenario file, never over a run's selection, so
`--scenario` or a tier does not move anything. Adding a scenario to a category can move at
most the scenarios next to a boundary of that category (and those sharing an answer with
it); rotating the salt deals afresh (the way to start over once a held split is spent).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

SPLITS = ("train", "held", "test")
DEFAULT_SALT = "agenteval-split-1"
DEFAULT_FRACTIONS = (0.6, 0.25, 0.15)


@dataclass(frozen=True)
class SplitRule:
    salt: str = DEFAULT_SALT
    train: float = DEFAULT_FRACTIONS[0]
    held: float = DEFAULT_FRACTIONS[1]
    test: float = DEFAULT_FRACTIONS[2]

    def __post_init__(self) -> None:
        shares = (self.train, self.held, self.test)
        if any(s < 0 for s in shares) or abs(sum(shares) - 1.0) > 1e-9:
            raise ValueError(f"split fractions must be >= 0 and sum to 1, got {shares}")

    def describe(self) -> dict[str, object]:
        return {"salt": self.salt, "train": self.train, "held": self.held, "test": self.test}


@dataclass(frozen=True)
class Member:
    """What the split needs to know about one scenario: `answers` are its expected answers,
    normalised (see `normalise_answer`)."""

    id: str
    category: str
    pinned: str | None = None
    answers: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Overlap:
    """An expected answer whose scenarios sit in more than one split (ids per split)."""

    answer: str
    splits: dict[str, list[str]]

    def describe(self, selected: Iterable[str] | None = None) -> dict[str, Any]:
        """As recorded; with `selected`, other scenarios are only counted per split."""
        entry: dict[str, Any] = {"answer": self.answer, "splits": self.splits}
        return entry if selected is None else narrow_overlap(entry, selected)


def narrow_overlap(entry: Mapping[str, Any], selected: Iterable[str]) -> dict[str, Any]:
    """An overlap entry as a selection may see it: its own ids named, the others counted per
    split (a train-only suite must not learn which held or test scenarios share an answer)."""
    keep = set(selected)
    hidden = dict(entry.get("unselected") or {})
    shown: dict[str, list[str]] = {}
    for name, ids in (entry.get("splits") or {}).items():
        mine = [i for i in ids if i in keep]
        if mine:
            shown[name] = mine
        if len(ids) > len(mine):
            hidden[name] = hidden.get(name, 0) + len(ids) - len(mine)
    return {"answer": entry["answer"], "splits": shown, "unselected": hidden}


def normalise_answer(text: str) -> str:
    """One spelling of an answer for comparison: case, runs of spaces, surrounding quotes and
    closing punctuation do not matter."""
    return " ".join(text.casefold().split()).strip(" .,;:!'\"")


def point(salt: str, scenario_id: str) -> float:
    """The id's place in [0, 1): the first 8 bytes of sha256(salt NUL id) as a fraction."""
    digest = hashlib.sha256(f"{salt}\0{scenario_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _deal(position: float, rule: SplitRule) -> str:
    if position < rule.train:
        return "train"
    return "held" if position < rule.train + rule.held else "test"


def groups(members: Iterable[Member]) -> list[list[Member]]:
    """Members linked by any shared answer, each group sorted by id (singletons included)."""
    ordered = sorted(members, key=lambda m: m.id)
    parent = {m.id: m.id for m in ordered}

    def top(sid: str) -> str:
        while parent[sid] != sid:
            parent[sid] = parent[parent[sid]]
            sid = parent[sid]
        return sid

    first: dict[str, str] = {}
    for member in ordered:
        for answer in member.answers:
            if answer in first:
                a, b = sorted((top(first[answer]), top(member.id)))
                parent[b] = a
            else:
                first[answer] = member.id
    found: dict[str, list[Member]] = {}
    for member in ordered:
        found.setdefault(top(member.id), []).append(member)
    return list(found.values())


def assign(members: Iterable[Member], rule: SplitRule) -> dict[str, str]:
    """{scenario id: split}, stratified by category, answer groups kept together; pinned
    splits are kept as written and carry the rest of their group."""
    out: dict[str, str] = {}
    shared: list[list[Member]] = []
    single: dict[str, list[Member]] = {}
    for group in groups(members):
        pins = [m.pinned for m in group if m.pinned is not None]
        for member in group:
            if member.pinned is not None and member.pinned not in SPLITS:
                raise ValueError(f"{member.id}: split must be one of {SPLITS}, got {member.pinned}")
        if pins:
            out.update((m.id, m.pinned or pins[0]) for m in group)
        elif len(group) > 1:
            shared.append(group)
        else:
            single.setdefault(group[0].category, []).append(group[0])
    placed = _deal_groups(shared, rule, out)
    for category, alone in single.items():
        _deal_category(alone, [placed.get((category, name), 0) for name in SPLITS], rule, out)
    return dict(sorted(out.items()))


def _deal_groups(
    shared: list[list[Member]], rule: SplitRule, out: dict[str, str]
) -> dict[tuple[str, str], int]:
    """Answer groups, one stratum: each dealt whole at the midpoint of the share it takes,
    in the order of its smallest id's point. Returns how many each put per (category,
    split), for the categories' own deal to make up."""
    ordered = sorted(shared, key=lambda g: (point(rule.salt, g[0].id), g[0].id))
    total, before = sum(len(g) for g in ordered), 0
    placed: dict[tuple[str, str], int] = {}
    for group in ordered:
        split = _deal((before + len(group) / 2) / total, rule)
        before += len(group)
        for member in group:
            out[member.id] = split
            placed[(member.category, split)] = placed.get((member.category, split), 0) + 1
    return placed


def _deal_category(
    alone: list[Member], placed: list[int], rule: SplitRule, out: dict[str, str]
) -> None:
    """A category's remaining scenarios fill what its groups left of each split's share:
    the category's n places are dealt by their midpoints, the places its groups took are
    struck out, and the rest are handed out in point order (exactly the plain deal when
    no group took any)."""
    n = len(alone) + sum(placed)
    wanted = [sum(_deal((i + 0.5) / n, rule) == name for i in range(n)) for name in SPLITS]
    slots = [name for name, w, p in zip(SPLITS, wanted, placed, strict=True) for _ in range(w - p)]
    ordered = sorted(alone, key=lambda m: (point(rule.salt, m.id), m.id))
    for index, member in enumerate(ordered):
        out[member.id] = slots[int((index + 0.5) * len(slots) / len(ordered))]


def overlaps(members: Iterable[Member], assignment: Mapping[str, str]) -> list[Overlap]:
    """Every answer shared by scenarios of different splits (only pins can cause one)."""
    holders: dict[str, list[str]] = {}
    for member in members:
        for answer in member.answers:
            holders.setdefault(answer, []).append(member.id)
    found = []
    for answer, ids in sorted(holders.items()):
        splits: dict[str, list[str]] = {}
        for sid in sorted(ids):
            splits.setdefault(assignment[sid], []).append(sid)
        if len(splits) > 1:
            found.append(Overlap(answer, {name: splits[name] for name in SPLITS if name in splits}))
    return found


def ids_of(assignment: Mapping[str, str], split: str) -> list[str]:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return sorted(sid for sid, name in assignment.items() if name == split)


def counts(assignment: Mapping[str, str]) -> dict[str, int]:
    return {name: sum(1 for v in assignment.values() if v == name) for name in SPLITS}
