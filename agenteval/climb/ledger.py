"""The held split's ledger: its Thresholdout state, kept across sessions and `climb evaluate`.

One file per held split (its salt and scenario ids) under `climb.holdout.ledger`, so every
query a split answers is counted, whichever session or person asked it; a fresh split (a new
`suite.split.salt`) starts a fresh ledger. The limits come from params; the counts and the
noise generator's position carry over.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.climb.holdout import Thresholdout
from agenteval.fileio import digest_of, read_json, write_json


@dataclass
class Ledger:
    path: Path
    mechanism: Thresholdout
    split: dict[str, Any]

    @classmethod
    def open(cls, root: Path, params: dict[str, Any], held_ids: list[str]) -> Ledger:
        section = params["climb"]["holdout"]
        split = {"salt": params["suite"]["split"]["salt"], "held": sorted(held_ids)}
        path = root / section["ledger"] / f"{digest_of(split)[:16]}.json"
        mechanism = Thresholdout(
            threshold=float(section["threshold"]),
            noise=float(section["noise"]),
            budget=int(section["budget"]),
            max_queries=int(section["max_queries"]),
            seed=int(section["seed"]),
        )
        if path.is_file():
            saved = read_json(path).get("state") or {}
            for name in ("queries", "overfits", "draws", "gamma", "seed"):
                if name in saved:
                    setattr(mechanism, name, saved[name])
        return cls(path, mechanism, split)

    def save(self) -> None:
        write_json(self.path, {"split": self.split, "state": self.mechanism.state()})
