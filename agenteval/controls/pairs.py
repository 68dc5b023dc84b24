"""Pairwise controls: the written controls paired into (better, worse) replies, to measure a
pairwise judge's position bias and what the two-order rule leaves of it.

Two controls make a pair when they put the same question about the same fact, with no earlier
turns, and one is labelled pass and the other fail: the pass reply is the better one. Which of
the two is "A" (shown first in the first order) is dealt by a salted hash, so a judge that
always picks the first reply is right half the time in one order, not always.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.controls.load import LoadedControl
from agenteval.judges.pairwise import PairOutcome, PairwiseJudge, position_bias
from agenteval.stats import wilson_interval

PAIR_SALT = "agenteval-pairwise-controls-v1"


@dataclass(frozen=True)
class ControlPair:
    id: str
    split: str
    question: str
    a: str
    b: str
    better: str  # "a" or "b"


def pairs_from(controls: Sequence[LoadedControl], questions: dict[str, str]) -> list[ControlPair]:
    """Every (pass, fail) pair of single-turn controls on one fact and question, in one split.
    `questions` maps a control id to the question it asks (its own or its fact's)."""
    groups: dict[tuple[str, str, str], dict[str, list[LoadedControl]]] = {}
    for c in controls:
        if c.control.history or c.control.fact is None:
            continue
        key = (c.split, c.control.fact, questions[c.control.id])
        groups.setdefault(key, {"pass": [], "fail": []})[c.control.label.verdict].append(c)
    pairs = []
    for (split, _fact, question), by in sorted(groups.items()):
        for good in by["pass"]:
            for bad in by["fail"]:
                pid = f"{good.control.id}~{bad.control.id}"
                flip = int(hashlib.sha256(f"{PAIR_SALT}:{pid}".encode()).hexdigest()[:8], 16) % 2
                a, b = (bad, good) if flip else (good, bad)
                pairs.append(ControlPair(pid, split, question, a.control.reply, b.control.reply,
                                         "b" if flip else "a"))  # fmt: skip
    return pairs


async def judge_pairs(
    judge: PairwiseJudge, pairs: Sequence[ControlPair], concurrency: int = 4
) -> list[PairOutcome]:
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(pair: ControlPair) -> PairOutcome:
        async with semaphore:
            return await judge.compare(pair.question, "", pair.a, pair.b)

    return list(await asyncio.gather(*(one(p) for p in pairs)))


def _share(k: int, n: int) -> dict[str, Any]:
    if not n:
        return {"count": k, "rate": None, "low": None, "high": None}
    low, high = wilson_interval(k, n)
    return {"count": k, "rate": round(k / n, 4), "low": round(low, 4), "high": round(high, 4)}


def pairwise_report(
    pairs: Sequence[ControlPair], outcomes: Sequence[PairOutcome]
) -> dict[str, Any]:
    """Position bias, and the judge's right and wrong picks in one order (A first) against
    the two-order rule's: the rule turns position-driven picks into ties."""
    one_right = one_wrong = right = wrong = ties = unmeasured = 0
    for pair, o in zip(pairs, outcomes, strict=True):
        single = {"first": "a", "second": "b"}.get(o.ab or "")
        one_right += single == pair.better
        one_wrong += single is not None and single != pair.better
        if o.winner is None:
            unmeasured += 1
        elif o.winner == "tie":
            ties += 1
        else:
            right += o.winner == pair.better
            wrong += o.winner != pair.better
    n = len(pairs) - unmeasured
    return {
        "pairs": len(pairs),
        "unmeasured": unmeasured,
        "position_bias": position_bias(outcomes),
        "one_order": {"right": _share(one_right, n), "wrong": _share(one_wrong, n)},
        "two_orders": {
            "right": _share(right, n),
            "wrong": _share(wrong, n),
            "tie": _share(ties, n),
        },
    }


def measure_pairwise(
    params: dict[str, Any], root: Path, split: str, n: int | None = None
) -> dict[str, Any]:
    """The configured endpoint as a pairwise judge on the paired controls of a split."""
    from agenteval.controls.build import fact_of
    from agenteval.controls.measure import chosen_controls

    manifest, controls = chosen_controls(params, root, split, None)
    asked = {
        c.control.id: c.control.question
        or (fact_of(manifest, c.control.fact)[1].question if c.control.fact else "")
        for c in controls
    }
    pairs = pairs_from(controls, asked)[:n] if n else pairs_from(controls, asked)
    if not pairs:
        raise ValueError(f"split {split!r} has no pass/fail pair on one fact and question")
    judge = PairwiseJudge(params, root)
    concurrency = int((params.get("run") or {}).get("concurrency", 4))
    outcomes = asyncio.run(judge_pairs(judge, pairs, concurrency))
    return {"judge": judge.participant.model_dump(mode="json"), "split": split,
            **pairwise_report(pairs, outcomes)}  # fmt: skip
