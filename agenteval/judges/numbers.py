"""Quantities as people write them, and how far one is from another.

Reads `$`, `%`, thousands separators, k/M/B and thousand/million/billion, ranges ("15-18%",
"$34 million to $36 million"), units and their abbreviations ("2,300 g", "4 hrs", "0.625
kWh", "120 requests per minute") and compound durations ("1 hour 52 minutes"). Units are
converted by pint within one dimension; two dimensions never compare ("5 miles" is not
5 km, "625 W" is not 625 Wh). Numbers that are labels — section and item numbers, tiers,
identifiers, versions, years — are not quantities. Number words are turned into digits by
`judges.reading.normalize` before this module reads a text.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, replace
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from typing import Any

from agenteval.judges import literals
from agenteval.scoring import AUTO_ZERO_DEVIATION, numeric_cap

MULTIPLIERS = {
    "k": 1e3, "thousand": 1e3,
    "m": 1e6, "mn": 1e6, "million": 1e6,
    "b": 1e9, "bn": 1e9, "billion": 1e9,
    "lakh": 1e5, "lakhs": 1e5, "crore": 1e7, "crores": 1e7,
}  # fmt: skip
CURRENCY_SYMBOLS = {"$": "USD", "€": "EUR", "£": "GBP"}
CURRENCY_WORDS = {
    "dollars": "USD", "dollar": "USD", "usd": "USD", "euros": "EUR", "euro": "EUR",
    "eur": "EUR", "cents": "USD/100", "cent": "USD/100",
}  # fmt: skip
# Written unit -> pint unit. Only these words are read as units, so a noun that pint also
# knows ("a", "point", "day" in "day one") is never a unit by accident.
UNITS = {
    "km": "kilometer", "kilometre": "kilometer", "kilometres": "kilometer",
    "kilometer": "kilometer", "kilometers": "kilometer", "cm": "centimeter",
    "mm": "millimeter", "mi": "mile", "mile": "mile", "miles": "mile",
    "kg": "kilogram", "kgs": "kilogram", "kilogram": "kilogram", "kilograms": "kilogram",
    "kilo": "kilogram", "kilos": "kilogram", "g": "gram", "gram": "gram", "grams": "gram",
    "lb": "pound", "lbs": "pound", "pound": "pound", "pounds": "pound",
    "t": "tonne", "tonne": "tonne", "tonnes": "tonne",
    "h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
    "min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute",
    "s": "second", "sec": "second", "secs": "second", "second": "second",
    "seconds": "second", "ms": "millisecond", "millisecond": "millisecond",
    "milliseconds": "millisecond", "day": "day", "days": "day", "night": "day",
    "nights": "day", "week": "week", "weeks": "week", "wk": "week", "wks": "week",
    "month": "month", "months": "month", "mo": "month", "mos": "month",
    "year": "year", "years": "year", "yr": "year", "yrs": "year",
    "wh": "watt_hour", "kwh": "kilowatt_hour", "watt-hour": "watt_hour",
    "watt-hours": "watt_hour", "w": "watt", "kw": "kilowatt", "watt": "watt",
    "watts": "watt", "mph": "mile/hour", "km/h": "kilometer/hour", "kph": "kilometer/hour",
}  # fmt: skip
# The same units as other languages write them (German, French, Spanish, Italian, Dutch): a
# reply may answer in the user's language around the document's figure.
UNITS.update({
    "tage": "day", "tagen": "day", "jour": "day", "jours": "day",
    "día": "day", "días": "day", "dia": "day", "dias": "day", "giorno": "day",
    "giorni": "day", "dag": "day", "dagen": "day", "nuit": "day", "nuits": "day",
    "noche": "day", "noches": "day", "nacht": "day", "woche": "week", "wochen": "week",
    "semaine": "week", "semaines": "week", "semana": "week", "semanas": "week",
    "settimana": "week", "settimane": "week", "weken": "week", "monat": "month",
    "monate": "month", "monaten": "month", "mois": "month", "mes": "month",
    "meses": "month", "mese": "month", "mesi": "month", "maand": "month",
    "maanden": "month", "jahr": "year", "jahre": "year", "jahren": "year",
    "ans": "year", "année": "year", "années": "year", "año": "year", "años": "year",
    "anno": "year", "anni": "year", "jaar": "year", "stunde": "hour", "stunden": "hour",
    "heure": "hour", "heures": "hour", "hora": "hour", "horas": "hour", "ore": "hour",
    "uur": "hour", "minuten": "minute", "minuto": "minute", "minutos": "minute",
    "minuti": "minute", "sekunde": "second", "sekunden": "second", "seconde": "second",
    "secondes": "second", "segundo": "second", "segundos": "second", "secondi": "second",
    "milla": "mile", "millas": "mile", "meile": "mile", "meilen": "mile",
    "kilogramm": "kilogram", "kilogramme": "kilogram", "kilogrammes": "kilogram",
})  # fmt: skip
# A number right after one of these words labels something; it is not an amount.
LABELS = (
    r"section|sections|sec\.|§|item|items|step|appendix|chapter|article|clause|tier|version|"
    r"v|level|sev|phase|room|extension|ext\.|table|figure|line|page|part|paragraph|no\.|"
    r"number|#|rule|option|point|question|row|rows|entry|annex|schedule|exhibit"
)
_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
QUANTITY = re.compile(
    rf"(?<![\w.,/:#§])(?<![A-Za-z]-)(?P<sign>[-+])?(?P<cur>[$€£])?\s?(?P<num>{_NUM})(?![\w.]*\d)"
    rf"(?:\s?(?P<mult>k|m|mn|b|bn|thousand|million|billion|lakhs?|crores?)(?![a-z]))?"
    rf"(?:\s?(?P<pct>%|percent\b|per cent\b|percentage points?\b))?",
    re.I,
)
_LABELLED = re.compile(rf"(?:\b(?:{LABELS})|[§#])\s*$", re.I)
_UNIT_WORDS = re.compile(
    r"\s?(?P<unit>[A-Za-z\u00c0-\u024f°/][A-Za-z\u00c0-\u024f/-]*)"
    r"(?:\s+(?P<unit2>[A-Za-z\u00c0-\u024f]+))?"
)
_PER = re.compile(r"\s*(?:(?:per|a|an|each|every|par|pro|por|je|al)\s+|/\s*)"
                  r"(?P<den>[A-Za-z\u00c0-\u024f]+)", re.I)  # fmt: skip
_RANGE_GAP = re.compile(r"^\s*(?:-|–|—|to)\s*$", re.I)
_AND_GAP = re.compile(r"^\s*(?:,\s*)?(?:and\s+)?$", re.I)
_YEARLIKE = re.compile(r"^(?:19|20)\d{2}$")
_ADJECTIVES = frozenset("new more additional unused extra full consecutive other such".split())
_FUNCTION = frozenset(
    "or and to of the in on at with for from per a an was were is are as by".split()
)


@functools.cache
def _registry() -> Any:
    import pint  # lazy: pint's import and registry cost ~0.5 s, paid only when judging

    return pint.UnitRegistry()


def _pint(unit: str) -> tuple[str, float]:
    """(dimensionality, base-unit factor) of a pint unit."""
    q = _registry().Quantity(1.0, unit).to_base_units()
    return str(q.dimensionality), float(q.magnitude)


@dataclass(frozen=True)
class Quantity:
    low: float  # in base units (SI for physical units, currency units, percent points)
    high: float
    kind: str  # money:<currency> | percent | count | plain | <pint dimensionality>
    raw: tuple[float, float]  # as written, before unit conversion
    start: int
    end: int
    noun: str = ""  # the words after a count ("cafés", "action items")
    per: tuple[str, float] | None = None  # denominator: (kind, base factor)
    mult: float = 1.0  # the k/million/billion it was written with

    @property
    def physical(self) -> bool:
        return self.kind.startswith("[")

    def deviation(self, other: Quantity) -> float:
        """Relative deviation of `other` from this (expected) quantity; inf if not comparable."""
        pair = self._comparable(other)
        if pair is None:
            return math.inf
        mine, theirs = pair
        found = max(_point_deviation(*mine, v) for v in theirs)
        if self.kind == "percent" and other.kind == "plain" and 0 < abs(other.raw[1]) < 1:
            # "0.04 of base salary" is 4%: a bare fraction read as the share it writes. A
            # figure that says "percent" keeps its own reading ("0.17 percent" is not 17%).
            share = max(_point_deviation(*mine, 100 * v) for v in other.raw)
            found = min(found, share)
        return found

    def excluded_by(self, other: Quantity) -> bool:
        """`other` is a range ("24 to 26 kg") that leaves out every value of this (expected)
        quantity: it commits to the answer being something else, however near its ends."""
        pair = self._comparable(other)
        if pair is None or other.low >= other.high:
            return False
        (low, high), (their_low, their_high) = pair
        return their_high < low or high < their_low

    def _comparable(
        self, other: Quantity
    ) -> tuple[tuple[float, float], tuple[float, float]] | None:
        """(this, other) as ranges in one unit, or None when they are not comparable."""
        if not compatible(self, other):
            return None
        mine, theirs = (self.low, self.high), (other.low, other.high)
        if "plain" in (self.kind, other.kind) and self.kind != other.kind:
            mine, theirs = self.raw, other.raw  # a bare number is read in the expected unit
        elif self.per and other.per:
            mine = (mine[0] / self.per[1], mine[1] / self.per[1])
            theirs = (theirs[0] / other.per[1], theirs[1] / other.per[1])
        return mine, theirs


def _point_deviation(low: float, high: float, value: float) -> float:
    if low <= value <= high:
        return 0.0
    nearest = low if abs(value - low) < abs(value - high) else high
    if nearest == 0:
        return 0.0 if value == 0 else math.inf
    return abs(value - nearest) / abs(nearest)


def compatible(expected: Quantity, found: Quantity) -> bool:
    kinds = {expected.kind, found.kind}
    if expected.per and found.per and expected.per[0] != found.per[0]:
        return False
    if len(kinds) == 1:
        return True
    if "plain" in kinds:
        return True
    return kinds == {"count", "plain"}


def _unit_after(text: str, end: int) -> tuple[str, str, float, int, str]:
    """(kind, unit word, factor, new end, noun) for the words right after a number."""
    m = _UNIT_WORDS.match(text, end)
    if not m:
        return "count", "", 1.0, end, ""
    word = m["unit"].lower().rstrip(".")
    second = (m["unit2"] or "").lower()
    if word in _ADJECTIVES and second in UNITS:  # "5 unused days", "3 new weeks"
        dimension, factor = _pint(UNITS[second])
        return dimension, second, factor, m.end("unit2"), ""
    if word in CURRENCY_WORDS:
        code = CURRENCY_WORDS[word]
        factor = 0.01 if code.endswith("/100") else 1.0
        return f"money:{code.split('/')[0]}", word, factor, m.end("unit"), ""
    if word == "us" and (m["unit2"] or "").lower() in ("dollars", "dollar"):
        return "money:USD", "us dollars", 1.0, m.end("unit2"), ""
    if word in UNITS:
        dimension, factor = _pint(UNITS[word])
        return dimension, word, factor, m.end("unit"), ""
    if word in _FUNCTION:
        return "count", "", 1.0, end, ""
    words = [word, (m["unit2"] or "").lower()]
    noun = " ".join(w for w in words if w and w not in _ADJECTIVES and w not in _FUNCTION)
    return "count", "", 1.0, m.end("unit"), noun


def _denominator(text: str, end: int) -> tuple[tuple[str, float] | None, int]:
    m = _PER.match(text, end)
    if not m:
        return None, end
    word = m["den"].lower()
    if word in UNITS:
        dimension, factor = _pint(UNITS[word])
        return (dimension, factor), m.end()
    if len(word) > 2 and word not in _ADJECTIVES:
        return (f"noun:{word.rstrip('s')}", 1.0), m.end()
    return None, end


_ENUMERATOR = re.compile(r"\(\d{1,2}\)")
_COMPOUND = re.compile(r"-(?P<word>[A-Za-z]+)")  # "12-month", "40-store": a number as adjective


def _one(m: re.Match[str], text: str) -> Quantity | None:
    if _LABELLED.search(text[max(0, m.start() - 14) : m.start()]):
        return None
    if _ENUMERATOR.fullmatch(text[max(0, m.start() - 1) : m.end() + 1]):
        return None  # "(1) a copy ..." numbers a list item
    number = m["num"]
    value = float(number.replace(",", ""))
    mult = MULTIPLIERS.get((m["mult"] or "").lower(), 1.0)
    if m["sign"] == "-":
        value = -value
    end, noun, per = m.end(), "", None
    if m["pct"]:
        kind, factor = "percent", 1.0
    elif m["cur"]:
        kind, factor = f"money:{CURRENCY_SYMBOLS[m['cur']]}", 1.0
    elif (compound := _COMPOUND.match(text, m.end())) and not m["mult"]:
        word = compound["word"].lower()
        kind, factor, end = "count", 1.0, compound.end()
        noun = word
        if word in UNITS:
            kind, factor = _pint(UNITS[word])
            noun = ""
    else:
        kind, _word, factor, end, noun = _unit_after(text, m.end())
        if kind == "count" and not noun:
            kind = "plain"
        if kind in ("count", "plain") and _YEARLIKE.match(number) and not m["mult"]:
            return None  # a year, read as a literal elsewhere
    per, end = _denominator(text, end)
    amount = value * mult
    return Quantity(amount * factor, amount * factor, kind, (amount, amount), m.start(), end,
                    noun, per, mult)  # fmt: skip


def _merge(found: list[Quantity], text: str) -> list[Quantity]:
    """Join ranges ("$34-36 million") and compound durations ("1 hour 52 minutes")."""
    merged: list[Quantity] = []
    for q in found:
        if merged:
            prev = merged[-1]
            gap = text[prev.end : q.start]
            joined = _join(prev, q, gap, text)
            if joined is not None:
                merged[-1] = joined
                continue
        merged.append(q)
    return merged


def _join(a: Quantity, b: Quantity, gap: str, text: str) -> Quantity | None:
    between = text[max(0, a.start - 9) : a.start].lower().endswith("between ")
    if _RANGE_GAP.match(gap) or (between and gap.strip().lower() == "and"):
        if a.mult == 1 and b.mult != 1:  # "$34-36 million": the first borrows the million
            a = replace(a, low=a.low * b.mult, high=a.high * b.mult,
                        raw=(a.raw[0] * b.mult, a.raw[1] * b.mult))  # fmt: skip
        if a.kind == "plain" and b.kind != "plain":  # "15-18%": the first borrows the unit
            factor = b.low / b.raw[0] if b.raw[0] else 1.0
            a = replace(a, low=a.raw[0] * factor, high=a.raw[0] * factor, kind=b.kind)
        elif b.kind == "plain" and a.kind != "plain":  # "$34-36 million": and the second
            b = replace(b, kind=a.kind)
        if a.kind != b.kind:
            return None
        lo, hi = sorted((a.low, b.low))
        rlo, rhi = sorted((a.raw[0], b.raw[0]))
        return Quantity(lo, hi, b.kind, (rlo, rhi), a.start, b.end, b.noun, b.per or a.per,
                        b.mult)  # fmt: skip
    seconds = _pint("second")[0]
    if a.kind == b.kind == seconds and _AND_GAP.match(gap) and a.low > b.low > 0:
        total = a.low + b.low  # "1 hour 52 minutes"
        scale = a.raw[0] / a.low if a.low else 1.0
        return Quantity(total, total, a.kind, (total * scale, total * scale), a.start, b.end,
                        per=b.per)  # fmt: skip
    return None


def quantities(text: str, masked: list[tuple[int, int]] | None = None) -> list[Quantity]:
    """Every quantity in (normalised) `text` outside the `masked` spans (default: its dates,
    times, identifiers and versions), in order."""
    skip = literals.spans(text) if masked is None else masked
    found = []
    for m in QUANTITY.finditer(text):
        if any(s < m.end() and m.start() < e for s, e in skip):
            continue
        q = _one(m, text)
        if q is not None:
            found.append(q)
    return _merge(found, text)


def precision_score(deviation: float) -> float:
    """Highest correctness for a relative deviation: the rubric's table, zero beyond 5%."""
    return numeric_cap(deviation)


# Within this relative deviation the precision table gives any marks at all: a figure this
# near that no rounding writes is a misquote ('$35,629' for $36,529), not a rounding.
NEAR = AUTO_ZERO_DEVIATION


def _grain(value: float) -> Decimal:
    """The place of a figure's last significant digit (199,690 -> 10; 8.6e6 -> 1e5)."""
    written = Decimal(repr(round(value, 6))).normalize()
    return Decimal(1).scaleb(int(written.as_tuple().exponent))


def misquoted(expected: Quantity, found: Quantity) -> bool:
    """`found` differs from the expected figure although it is written to the same place or
    a finer one: no rounding of the expected figure writes it, so it is another figure (a
    transposition, '$199,960' for $199,690), however near. Only a figure as written compares
    so: a converted unit's digits say nothing of its rounding, and a range is no one figure;
    only a figure the table would give marks is judged so (further off, it scores zero)."""
    # A bare figure ('542120' in a JSON value for $524,120) is written to the same place; a
    # physical figure in the expected one's own unit ('6 hours 15 minutes' for 6 hours 10
    # minutes) compares as written, a converted one ('68.4 mi' for 110 km) does not.
    bare = found.kind == "plain" and (expected.kind.startswith("money") or expected.kind == "count")
    kind = expected.kind if bare else found.kind
    same_writing = (kind, found.per, found.mult) == (expected.kind, expected.per, expected.mult)
    if expected.physical:
        same_writing = same_writing and math.isclose(
            found.raw[0] * expected.low, expected.raw[0] * found.low, rel_tol=1e-9
        )
    if not same_writing or expected.deviation(found) > NEAR:
        return False
    if expected.low != expected.high or found.low != found.high or found.low == expected.low:
        return False
    mine, theirs = (
        (expected.raw[0], found.raw[0])
        if expected.physical
        else (
            expected.low,
            found.low,
        )
    )
    grain = _grain(theirs)
    if grain <= _grain(mine):
        return True
    # Written coarser: a rounding (or a truncation) of the expected figure to that place is
    # an approximation; any other figure is not ('96.2%' for 99.62% drops a digit).
    exact = Decimal(repr(round(mine, 6)))
    written = Decimal(repr(round(theirs, 6)))
    roundings = {exact.quantize(grain, rounding=mode) for mode in (ROUND_HALF_UP, ROUND_DOWN)}
    return written.quantize(grain) not in roundings
