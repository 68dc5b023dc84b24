"""Values that compare exactly: dates, clock times, years, identifiers, versions and names.

Each reader returns spans of a (normalised) text with a comparable key: "November 7, 2026",
"7 Nov 2026" and "2026-11-07" share one key; "INC-2303" and "inc-2303" too; "Section 8" and
"§ 8" too. One off is another value: there is no tolerance here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agenteval.judges.reading import COMMON_CAPITALISED

MONTHS = {
    m: i + 1
    for i, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"),
         ("may",), ("june", "jun"), ("july", "jul"), ("august", "aug"),
         ("september", "sep", "sept"), ("october", "oct"), ("november", "nov"),
         ("december", "dec")]
    )
    for m in names
}  # fmt: skip
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d{2})"
DATE_PATTERNS = (
    re.compile(rf"\b{_MONTH}\s+{_DAY}(?:,?\s+{_YEAR})?\b", re.I),
    re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", re.I),
    # ISO 8601, a date-time's date included ("2026-11-07T14:05Z")
    re.compile(r"\b(?P<year>(?:19|20)\d{2})-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?:\b|(?=T\d))"),
    re.compile(rf"\b{_MONTH}\s+{_YEAR}\b", re.I),
    re.compile(r"\b(?P<year>(?:19|20)\d{2})([/.])(?P<month>[01]?\d)\2(?P<day>[0-3]?\d)\b"),
)
# "11/07/2026", "7.11.2026": which number is the month the numbers say (one above 12) or the
# words beside it do ("US format", "day first"); otherwise the date is ambiguous.
NUMERIC_DATE = re.compile(r"\b(?P<a>[0-3]?\d)([/.])(?P<b>[0-3]?\d)\2(?P<year>(?:19|20)\d{2})\b")
_MONTH_FIRST = re.compile(r"\b(?:US|U\.S\.|American|month[- ]first|MM/DD)\b", re.I)
_DAY_FIRST = re.compile(r"\b(?:UK|EU|European|British|day[- ]first|DD/MM)\b", re.I)
TIME = re.compile(
    r"\b(?P<h>[0-2]?\d)(?::(?P<m>[0-5]\d))?\s?(?P<ampm>a\.?m\.?|p\.?m\.?)(?![a-z])"
    r"|\b(?P<h24>[0-2]?\d):(?P<m24>[0-5]\d)\b|\b(?P<word>noon|midnight)\b",
    re.I,
)
YEAR = re.compile(r"(?<![\w$.,-])(?:19|20)\d{2}(?![\w,]|\.\d)")
IDENTIFIER = re.compile(
    r"\b(?P<id>[A-Z]{1,6}-\d+[A-Z]?|Q[1-4]|H[12]|FY\d{4})\b"
    r"|(?P<ref>\b(?:section|sec\.|clause|article|item|appendix|directive|tier)\s*|§\s*)"
    r"(?P<num>\d+(?:\.\d+)*(?:\([a-z0-9]\))?(?:/\d+/[A-Z]+)?|[A-Z]\b)",
    re.I,
)
VERSION = re.compile(
    r"\b(?:version|v)\s?(?P<v>\d+(?:\.\d+)*)\b|(?<![\w.])(?P<dotted>\d+\.\d+\.\d+)(?![\w.])",
    re.I,
)
NAME_TOKEN = r"[A-Z][a-z\u00c0-\u024f]+(?:[-'][A-Z][a-z\u00c0-\u024f]+)*"
NAME = re.compile(rf"\b{NAME_TOKEN}(?:\s+(?:(?:de|van|von|da|di|del|le)\s+)?{NAME_TOKEN})*")


@dataclass(frozen=True)
class Literal:
    kind: str  # date | time | year | id | version | name
    key: object
    start: int
    end: int
    text: str
    other: object = None  # a numeric date's other reading, when nothing says which it is


def dates(text: str) -> list[Literal]:
    found: list[Literal] = []
    for pattern in DATE_PATTERNS:
        for m in pattern.finditer(text):
            if any(f.start < m.end() and m.start() < f.end for f in found):
                continue
            groups = m.groupdict()
            month = groups["month"]
            number = int(month) if month.isdigit() else MONTHS[month.lower().rstrip(".")]
            day = int(groups["day"]) if groups.get("day") else None
            year = int(groups["year"]) if groups.get("year") else None
            if day is not None and not 1 <= day <= 31:
                continue
            found.append(Literal("date", (year, number, day), m.start(), m.end(), m.group(0)))
    for m in NUMERIC_DATE.finditer(text):
        if not any(f.start < m.end() and m.start() < f.end for f in found):
            found += _numeric_date(m, text)
    return sorted(found, key=lambda f: f.start)


def _numeric_date(m: re.Match[str], text: str) -> list[Literal]:
    a, b, year = int(m["a"]), int(m["b"]), int(m["year"])
    around = text[max(0, m.start() - 24) : m.end() + 24]
    if a > 12 or (b <= 12 and _DAY_FIRST.search(around) and not _MONTH_FIRST.search(around)):
        day, month, other = a, b, None
    elif b > 12 or _MONTH_FIRST.search(around):
        day, month, other = b, a, None
    else:
        day, month, other = b, a, (year, b, a)
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return []
    other = None if other == (year, month, day) else other
    return [Literal("date", (year, month, day), m.start(), m.end(), m.group(0), other)]


def times(text: str) -> list[Literal]:
    found = []
    for m in TIME.finditer(text):
        if m["word"]:
            minutes = 720 if m["word"].lower() == "noon" else 0
        elif m["h24"] is not None:
            minutes = int(m["h24"]) * 60 + int(m["m24"])
        else:
            hour = int(m["h"]) % 12 + (12 if m["ampm"].lower().startswith("p") else 0)
            minutes = hour * 60 + int(m["m"] or 0)
        if minutes < 24 * 60:
            found.append(Literal("time", minutes, m.start(), m.end(), m.group(0)))
    return found


def identifiers(text: str) -> list[Literal]:
    found = []
    for m in IDENTIFIER.finditer(text):
        if m["id"]:
            key = m["id"].upper()
        else:
            ref = m["ref"].strip().rstrip(".").lower()
            ref = {"§": "section", "sec": "section"}.get(ref, ref)
            key = f"{ref} {m['num'].lower()}"
        found.append(Literal("id", key, m.start(), m.end(), m.group(0)))
    return found


def versions(text: str, product: str | None = None) -> list[Literal]:
    """`version 3.2`, `5.14.2`, and, for a named product, "PostgreSQL 16"."""
    found = [
        Literal("version", m["v"] or m["dotted"], m.start(), m.end(), m.group(0))
        for m in VERSION.finditer(text)
    ]
    if product:
        stem = re.escape(product[:6])
        pattern = re.compile(rf"\b{stem}\w*\s+(?P<v>\d+(?:\.\d+)*)\b", re.I)
        for m in pattern.finditer(text):
            if not any(f.start <= m.start("v") < f.end for f in found):
                found.append(Literal("version", m["v"], m.start(), m.end(), m.group(0)))
    return sorted(found, key=lambda f: f.start)


def years(text: str, taken: list[tuple[int, int]]) -> list[Literal]:
    return [
        Literal("year", int(m.group(0)), m.start(), m.end(), m.group(0))
        for m in YEAR.finditer(text)
        if not any(s < m.end() and m.start() < e for s, e in taken)
    ]


def names(text: str, exclude: set[str]) -> list[Literal]:
    """Capitalised name spans, without leading function words or the question's own names."""
    found = []
    for m in NAME.finditer(text):
        tokens = m.group(0).split()
        start = m.start()
        while tokens and tokens[0].lower() in COMMON_CAPITALISED:
            start += len(tokens[0]) + 1
            tokens = tokens[1:]
        tokens = [t.removesuffix("'s") for t in tokens]
        while tokens and tokens[-1].lower() in COMMON_CAPITALISED:
            tokens = tokens[:-1]
        if not tokens or all(t.lower() in exclude for t in tokens):
            continue
        key = tuple(t.lower() for t in tokens)
        found.append(Literal("name", key, start, start + len(" ".join(tokens)), " ".join(tokens)))
    return found


def name_tokens(text: str) -> tuple[str, ...] | None:
    """The expected answer as a name: every word capitalised (particles allowed)."""
    words = text.replace(",", " ").split()
    if not words or len(words) > 5:
        return None
    particles = {"de", "van", "von", "da", "di", "del", "le", "&"}
    if all(re.fullmatch(NAME_TOKEN, w) or w in particles for w in words):
        return tuple(w.lower() for w in words if w not in particles)
    return None


def spans(text: str) -> list[tuple[int, int]]:
    """Where dates, times, identifiers and versions sit: no amount is read inside them."""
    found = dates(text) + times(text) + identifiers(text) + versions(text)
    return [(x.start, x.end) for x in found]
