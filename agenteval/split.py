"""The train / held / test split of scenario ids used by hillclimbing (pure: no I/O).

Each id gets a point in [0, 1) from a salted sha256; within a category the ids are ordered by
that point and dealt by the position of their midpoint, so every category is split in the
configured proportions (to within one scenario) and nothing but the salt and the set of
scenarios decides where an id lands. A scenario may pin its split (`split:` in its file);
pinned ids keep it and the others are dealt among themselves.

Stability: the split is computed over every scenario file, never over a run's selection, so
`--scenario` or a tier does not move anything. Adding a scenario to a category can move at
most the scenarios next to a boundary of that category; rotating the salt deals afresh
(the way to start over once a held split is spent).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

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
    """What the split needs to know about one scenario."""

    id: str
    category: str
    pinned: str | None = None


def point(salt: str, scenario_id: str) -> float:
    """The id's place in [0, 1): the first 8 bytes of sha256(salt NUL id) as a fraction."""
    digest = hashlib.sha256(f"{salt}\0{scenario_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


def _deal(position: float, rule: SplitRule) -> str:
    if position < rule.train:
        return "train"
    return "held" if position < rule.train + rule.held else "test"


def assign(members: Iterable[Member], rule: SplitRule) -> dict[str, str]:
    """{scenario id: split}, stratified by category; pinned splits are kept as written."""
    by_category: dict[str, list[Member]] = {}
    out: dict[str, str] = {}
    for member in members:
        if member.pinned is not None:
            if member.pinned not in SPLITS:
                raise ValueError(f"{member.id}: split must be one of {SPLITS}, got {member.pinned}")
            out[member.id] = member.pinned
        else:
            by_category.setdefault(member.category, []).append(member)
    for group in by_category.values():
        ordered = sorted(group, key=lambda m: (point(rule.salt, m.id), m.id))
        for index, member in enumerate(ordered):
            out[member.id] = _deal((index + 0.5) / len(ordered), rule)
    return dict(sorted(out.items()))


def ids_of(assignment: Mapping[str, str], split: str) -> list[str]:
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    return sorted(sid for sid, name in assignment.items() if name == split)


def counts(assignment: Mapping[str, str]) -> dict[str, int]:
    return {name: sum(1 for v in assignment.values() if v == name) for name in SPLITS}
