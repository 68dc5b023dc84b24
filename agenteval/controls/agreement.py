"""Agreement between a judge and labels, and a judge with itself: pure functions over arrays.

Binary verdicts (1 = pass). Cohen's kappa corrects raw agreement for the chance agreement
of the two marginals; Gwet's AC1 does the same with a chance term that stays sensible when
one class dominates (kappa's paradox: high agreement, low kappa). Intervals are percentile
bootstraps over controls. ICC(1,1) is the one-way random-effects intraclass correlation of
repeated scores (repeats of one judge are exchangeable, so there is no rater effect).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Estimate:
    value: float | None
    low: float | None
    high: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "low": self.low, "high": self.high}


def _rates(a: FloatArray, b: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per row: observed agreement, share of 1s by rater a, share of 1s by rater b."""
    return (a == b).mean(axis=-1), a.mean(axis=-1), b.mean(axis=-1)


def _kappa(a: FloatArray, b: FloatArray) -> FloatArray:
    po, pa, pb = _rates(a, b)
    pe = pa * pb + (1 - pa) * (1 - pb)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def _ac1(a: FloatArray, b: FloatArray) -> FloatArray:
    po, pa, pb = _rates(a, b)
    pi = (pa + pb) / 2
    pe = 2 * pi * (1 - pi)  # two categories: sum_k pi_k (1 - pi_k) / (K - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pe < 1, (po - pe) / (1 - pe), np.nan)


def _agreement(a: FloatArray, b: FloatArray) -> FloatArray:
    return np.asarray((a == b).mean(axis=-1), dtype=np.float64)


STATISTICS = {"agreement": _agreement, "kappa": _kappa, "ac1": _ac1}


def _value(x: float) -> float | None:
    return None if math.isnan(x) else round(float(x), 4)


def estimate(
    name: str,
    labels: Sequence[int],
    verdicts: Sequence[int],
    resamples: int = 2000,
    conf: float = 0.95,
    seed: int = 0,
) -> Estimate:
    """`name` (agreement, kappa, ac1) with a percentile bootstrap interval over items."""
    if len(labels) != len(verdicts):
        raise ValueError("labels and verdicts must have the same length")
    if not labels:
        return Estimate(None, None, None)
    fn = STATISTICS[name]
    a = np.asarray(labels, dtype=np.float64)
    b = np.asarray(verdicts, dtype=np.float64)
    point = float(fn(a, b))
    rng = np.random.default_rng(seed)
    rows = rng.integers(0, len(a), size=(resamples, len(a)))
    boot = fn(a[rows], b[rows])
    boot = boot[~np.isnan(boot)]
    if boot.size == 0:
        return Estimate(_value(point), None, None)
    tail = (1 - conf) / 2 * 100
    low, high = np.percentile(boot, [tail, 100 - tail])
    return Estimate(_value(point), _value(low), _value(high))


def cohen_kappa(labels: Sequence[int], verdicts: Sequence[int]) -> float | None:
    a, b = np.asarray(labels, dtype=np.float64), np.asarray(verdicts, dtype=np.float64)
    return _value(float(_kappa(a, b))) if len(a) else None


def gwet_ac1(labels: Sequence[int], verdicts: Sequence[int]) -> float | None:
    a, b = np.asarray(labels, dtype=np.float64), np.asarray(verdicts, dtype=np.float64)
    return _value(float(_ac1(a, b))) if len(a) else None


def icc_oneway(scores: Sequence[Sequence[float]]) -> float | None:
    """ICC(1,1): rows are items, columns repeated measurements of the same judge.

    None when it is undefined (fewer than two items or repeats, or no variance at all);
    1.0 when the repeats never differ but the items do.
    """
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 2:
        return None
    n, k = x.shape
    grand = x.mean()
    msb = k * ((x.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    msw = ((x - x.mean(axis=1, keepdims=True)) ** 2).sum() / (n * (k - 1))
    if msb + (k - 1) * msw == 0:
        return None
    return _value((msb - msw) / (msb + (k - 1) * msw))


def self_consistency(
    verdicts: Sequence[Sequence[str]],
    scores: Sequence[Sequence[float | None]],
    conf: float = 0.95,
) -> dict[str, object] | None:
    """A judge against itself over repeated judgings of the same items.

    `verdicts[i]` are item i's K outcomes (pass/fail/deferred or statuses), `scores[i]` its
    K scores. Flip rate: share of items whose outcomes are not all the same (Wilson
    interval). Score SEM: per item, the standard deviation of its scores over sqrt(K),
    averaged over items with at least two scores: how far one judging's score is from the
    judge's own mean. ICC(1,1) over items scored every time. None below two repeats.
    """
    k = min((len(v) for v in verdicts), default=0)
    if k < 2:
        return None
    from agenteval.stats import wilson_interval

    n = len(verdicts)
    flips = sum(len(set(v[:k])) > 1 for v in verdicts)
    low, high = wilson_interval(flips, n, conf)
    sems = []
    for row in scores:
        given = [x for x in row[:k] if x is not None]
        if len(given) >= 2:
            sems.append(float(np.std(given, ddof=1)) / math.sqrt(len(given)))
    complete = [
        [float(x) for x in row[:k] if x is not None]
        for row in scores
        if all(x is not None for x in row[:k])
    ]
    return {
        "repeats": k,
        "items": n,
        "flips": flips,
        "flip_rate": round(flips / n, 4) if n else None,
        "flip_rate_low": round(low, 4),
        "flip_rate_high": round(high, 4),
        "identical_verdicts": round(1 - flips / n, 4) if n else None,
        "score_sem": round(sum(sems) / len(sems), 4) if sems else None,
        "scored_items": len(sems),
        "icc_scores": icc_oneway(complete),
    }
