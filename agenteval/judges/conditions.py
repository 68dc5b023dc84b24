"""The asked condition, period and choice a right value must be given for.

A reply can carry the expected value and still not answer the question: it may deny the
condition the value is asked for, restate a period's total as a rate, or name another
option as the one chosen. Each check returns why, or None; `judges.correctness` turns a
reason into its finding.
"""

from __future__ import annotations

import re

from agenteval.judges.answers import SAME_VALUE_DEVIATION
from agenteval.judges.candidates import Part, literal_spans
from agenteval.judges.numbers import Quantity, quantities
from agenteval.judges.reading import COMMON_CAPITALISED, GENERIC, normalize

# The asked value must be asserted for the asked condition: a negation on a word the
# question asks about ("16 weeks, but not fully paid"; "isn't allowed, even over 8 hours"),
# or a price question answered "free" in a clause about what was asked ("delivery within the
# US is free; the $79 is only outside it").
_NEGATION = (
    r"(?:\bnot|n['’]t|\bnever|\bcannot|\bno longer)\s+(?:(?:be|been|always|ever|really)\s+)?"
)
_PRICE_ASKED = re.compile(r"\b(?:cost|costs|charge|charged|price|fee|pay)\b", re.I)
_FREE = re.compile(r"\b(?:is|are|comes|ships)\s+free\b|\bfree of charge\b|\bcosts? nothing\b",
                   re.I)  # fmt: skip


def denied_condition(asked: str, text: str) -> str | None:
    """Why the reply denies the condition the question asks the value for, or None."""
    words = {w for w in re.findall(r"[a-z]{4,}", asked.lower()) if w not in GENERIC}
    # a condition the question itself denies ("no longer paid") is asked, not denied
    words -= {m.group(1) for m in re.finditer(_NEGATION + r"([a-z]+)", asked.lower())}
    lowered = text.lower()
    for m in re.finditer(_NEGATION + r"([a-z]+)", lowered):
        if m.group(1) in words:
            return f"denies the asked condition: {m.group(0).strip()!r}"
    if not _PRICE_ASKED.search(asked):
        return None
    for clause in re.split(r"[;:.!?\n]|\bbut\b", lowered):
        shared = {w for w in re.findall(r"[a-z]{4,}", clause) if w in words}
        if _FREE.search(clause) and len(shared) >= 2:
            return f"says what was asked is free: {clause.strip()!r}"
    return None


# The period a question asks a total for, in seconds (as `numbers` reads "per month").
_PERIODS = (
    (r"\bQ[1-4]\b|\bquarter(?:ly)?\b", 7889400.0),
    (r"\bH[12]\b|\bhalf[- ]year\b", 15778800.0),
    (r"\bFY\d*\b|\bannual\b|\byear(?:ly)?\b", 31557600.0),
    (r"\bmonth(?:ly)?\b", 2629800.0),
)


_LOOKING_BACK = re.compile(r"\s*(?:earlier|ago|before|later|prior)\b", re.I)


def restated_rate(asked: str, text: str, parts: list[Part]) -> str | None:
    """Why the reply gives the asked period's total as a rate per another period ("$8.6
    million per month" when the quarter's net revenue was $8.6 million), or None."""
    seen = normalize(asked)
    periods = [seconds for pattern, seconds in _PERIODS if re.search(pattern, seen, re.I)]
    if not periods:
        return None
    # "Q2 of FY2026": the narrowest period named is the one the total covers
    for part in parts:
        if part.kind != "quantity" or not isinstance(part.key, Quantity) or part.key.per:
            continue
        for x in quantities(text, literal_spans(text)):
            slipped = x.per and x.per[0] == "[time]" and abs(x.per[1] / min(periods) - 1) > 0.05
            if _LOOKING_BACK.match(text, x.end) or x.kind == "percent":
                continue  # "43.0% a year earlier": a comparison, not a rate; a share is no total
            if slipped and part.key.deviation(x) <= SAME_VALUE_DEVIATION:
                return f"states {text[x.start : x.end]!r}, a rate, for the asked period's total"
    return None


# A question about a choice is answered by what the choice verb names: "after benchmarking
# PostgreSQL 16, the team chose CockroachDB" names the expected one only as what was tried.
_CHOICE_ASKED = re.compile(r"\b(?:chose|choose|chosen|choice|decide|decided|select|selected|"
                           r"pick|picked|opt|opted)\b", re.I)  # fmt: skip
_CHOSE = re.compile(
    r"\b(?:chose|chosen|picked|selected|went with|decided on|settled on|opted for|adopted)\s+"
    r"(?:to use\s+)?([A-Z][\w.+#-]*(?:\s+\d+(?:\.\d+)*)?)"
)


def chosen_other(asked: str, expected: str, text: str) -> str | None:
    """The name a choice verb in the reply gives when it is not the expected one, or None."""
    if not _CHOICE_ASKED.search(asked):
        return None
    wanted = set(re.findall(r"[a-z0-9]+", expected.lower()))
    for m in _CHOSE.finditer(text):
        words = re.findall(r"[a-z0-9]+", m.group(1).lower())
        if words and not wanted & set(words) and not set(words) <= COMMON_CAPITALISED:
            return m.group(1)
    return None
