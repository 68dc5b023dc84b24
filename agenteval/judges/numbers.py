"""Reading numbers the way people write them, and grading numeric closeness.

Understands `$`, `%`, thousands separators, k/M/B and thousand/million/billion, and ranges
("15-18%"). Dates and clock times are not quantities: callers match them literally.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# (max relative deviation, max score): the numeric precision table of the rubric.
PRECISION_TABLE: tuple[tuple[float, float], ...] = (
    (0.01, 10.0),
    (0.05, 8.0),
    (0.15, 4.0),
    (0.50, 1.0),
)
MULTIPLIERS = {
    "k": 1e3, "thousand": 1e3,
    "m": 1e6, "mn": 1e6, "million": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9,
}  # fmt: skip
DATE_OR_TIME = re.compile(
    r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}:\d{2}(?:\s?[ap]\.?m\.?)?\b|\b\d{1,2}/\d{1,2}/\d{2,4}\b", re.I
)
_NUM = r"(?<![A-Za-z\d.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
_MULT = r"(?:k|m|mn|b|bn|thousand|million|billion)(?![a-z])"
QUANTITY = re.compile(
    rf"(?P<cur>[$€£])?\s?(?P<num>{_NUM})\s?(?P<mult>{_MULT})?\s?(?P<pct>%|percent\b)?", re.I
)
RANGE = re.compile(
    rf"(?P<cur>[$€£])?\s?(?P<lo>{_NUM})\s?(?P<lomult>{_MULT})?\s?%?\s?(?:-|–|—|to)\s?"
    rf"(?P<cur2>[$€£])?\s?(?P<hi>{_NUM})\s?(?P<mult>{_MULT})?\s?(?P<pct>%|percent\b)?",
    re.I,
)


@dataclass(frozen=True)
class Quantity:
    low: float
    high: float
    kind: str  # "percent" | "money" | "plain"
    has_multiplier: bool = False
    mantissa: tuple[float, float] | None = None

    def deviation(self, other: Quantity) -> float:
        """Relative deviation of `other` from this quantity (0 inside a range)."""
        if not _compatible(self.kind, other.kind):
            return math.inf
        best = _range_deviation(self.low, self.high, other.low)
        if self.mantissa and not other.has_multiplier:
            # "14.2" written under a "$ millions" heading still names the same figure.
            best = min(best, _range_deviation(*self.mantissa, other.low))
        return best


def _compatible(expected: str, found: str) -> bool:
    return expected == found or "plain" in (expected, found)


def _range_deviation(low: float, high: float, value: float) -> float:
    if low <= value <= high:
        return 0.0
    nearest = low if abs(value - low) < abs(value - high) else high
    if nearest == 0:
        return 0.0 if value == 0 else math.inf
    return abs(value - nearest) / abs(nearest)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _kind(cur: str | None, pct: str | None) -> str:
    return "percent" if pct else "money" if cur else "plain"


def strip_dates(text: str) -> tuple[str, list[str]]:
    dates = [m.group(0) for m in DATE_OR_TIME.finditer(text)]
    return DATE_OR_TIME.sub(" ", text), dates


def quantities(text: str, ranges: bool = True) -> list[Quantity]:
    """Every quantity in `text`; with `ranges`, "15-18%" is one quantity, not two."""
    text, _ = strip_dates(text)
    found: list[Quantity] = []
    if ranges:
        for m in RANGE.finditer(text):
            mult = MULTIPLIERS.get((m["mult"] or m["lomult"] or "").lower(), 1.0)
            lo, hi = sorted((_number(m["lo"]), _number(m["hi"])))
            kind = _kind(m["cur"] or m["cur2"], m["pct"])
            mantissa = (lo, hi) if mult != 1.0 else None
            found.append(Quantity(lo * mult, hi * mult, kind, mult != 1.0, mantissa))
        text = RANGE.sub(" ", text)
    for m in QUANTITY.finditer(text):
        mult = MULTIPLIERS.get((m["mult"] or "").lower(), 1.0)
        value = _number(m["num"])
        mantissa = (value, value) if mult != 1.0 else None
        kind = _kind(m["cur"], m["pct"])
        found.append(Quantity(value * mult, value * mult, kind, mult != 1.0, mantissa))
    return found


def precision_score(deviation: float) -> float:
    """Max correctness score for a relative deviation, per the precision table."""
    for limit, score in PRECISION_TABLE:
        if deviation <= limit + 1e-12:
            return score
    return 0.0


def best_deviation(expected: Quantity, found: list[Quantity]) -> float:
    return min((expected.deviation(q) for q in found), default=math.inf)


def strip_quantities(text: str) -> str:
    """`text` without its quantities (and their units), leaving the words around them."""
    return QUANTITY.sub(" ", RANGE.sub(" ", text))
