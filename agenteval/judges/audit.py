"""What a passing grade still needs: evidence that the whole reply commits only to values the
corpus backs.

The graders in `judges.correctness` and `judges.abstention` find the asked value; a reply can
state it and still invent beside it (a sale price, a rollover cap, a postmortem id, a former
employer), paraphrase a quoted passage into a figure it never gave, or emphasise another line
as its answer. Code cannot tell an invented fact from a true one the documents merely phrase
otherwise, so a pass that meets one of these defers; it never fails here:
- a figure no indexed document (nor the evidence, the question or the expected answer)
  holds, unless it is a term of shown working or its result with the arithmetic right;
- an identifier (`PM-2291`) or, in an English reply, a capitalised word mid-sentence that no
  document, question or answer writes;
- a reply that emphasises (bold) an answer of the asked kind and never the expected one;
- a per-period fact restated as spread over several periods ("18 days across two years").
Without documents or evidence there is nothing to check against and the grade stands.
"""

from __future__ import annotations

import ast
import functools
import math
import operator
import re
import threading
from typing import NamedTuple

from agenteval.judges import literals
from agenteval.judges.candidates import Part, literal_spans, operand
from agenteval.judges.commitment import RETRACTION_CUES
from agenteval.judges.numbers import Quantity, misquoted, quantities
from agenteval.judges.reading import COMMON_CAPITALISED, normalize, spoken_and_coded
from agenteval.scoring import AUTO_ZERO_DEVIATION

# Plain counts this small are the reply's own framing ("two of your five days"), not facts.
SMALL_COUNT = 10
# A shown result counts as backed when its arithmetic is right to this relative error (the
# reply rounds the result it writes: "112 / 60 = 1.87").
ARITHMETIC_TOLERANCE = 0.005
# Capitalised words of any reply that name no fact: formats, currencies, protocol words.
FORMAT_WORDS = frozenset(
    """csv pdf json yaml yml api http https sql url usd eur gbp fy ok tl dr markdown md id
    ids q1 q2 q3 q4 h1 h2 us uk eu faq i'm i've i'd i'll jan feb mar apr jun jul aug sep
    sept oct nov dec mon tue wed thu fri sat sun""".split()
)


class Backing(NamedTuple):
    values: tuple[tuple[str, float], ...]  # (kind, figure) of the documents' other figures
    dates: frozenset[object]  # the documents' dates (year, month, day) and years
    physical: frozenset[tuple[str, float]]  # (dimension, base value) of physical figures
    words: frozenset[str]
    lowered: str


# A figure in another unit of one dimension is a conversion of a document's figure when it
# is this near in base units ("60.4 lb" for 27.4 kg).
CONVERSION_TOLERANCE = 0.01


@functools.lru_cache(maxsize=32)
def _backing(seen: str) -> Backing:
    """The figures (as written and in base units), the words, and the lowered text of `seen`."""
    text = normalize(seen)
    values: set[tuple[str, float]] = set()
    physical: set[tuple[str, float]] = set()
    for x in quantities(text, literal_spans(text)):
        if x.physical:
            physical |= {(x.kind, x.low), (x.kind, x.high)}
        else:
            values |= {(x.kind, v) for v in (x.low, x.high, *x.raw)}
    lowered = text.lower()
    words = re.findall(r"[^\W_][\w'’-]*", f"{lowered}\n{seen.lower()}")
    dates = {d.key for d in literals.dates(text)} | {y.key for y in literals.years(text, [])}
    dates |= {d.key[0] for d in literals.dates(text) if isinstance(d.key, tuple)}
    # a CSV's months ("2026-03"): no date reader takes a year and month alone
    dates |= {(int(y), int(m), None) for y, m in re.findall(r"\b(\d{4})-(\d{2})\b", text)}
    return Backing(
        tuple(sorted(values)), frozenset(dates), frozenset(physical), frozenset(words), lowered
    )


def _converted(x: Quantity, physical: frozenset[tuple[str, float]]) -> bool:
    return x.physical and any(
        kind == x.kind and math.isclose(x.low, v, rel_tol=CONVERSION_TOLERANCE)
        for kind, v in physical
    )


def _held(value: float, kind: str, values: tuple[tuple[str, float], ...]) -> bool:
    """A figure of a kind that compares with `kind` (a bare number with any) equal to it."""
    return any(
        (k == kind or "plain" in (k, kind)) and math.isclose(value, v, rel_tol=1e-9, abs_tol=1e-12)
        for k, v in values
    )


# A figure after a slash ("38/48"): no quantity (a fraction, a ratio, or an alternative to
# the figure before it), but a value the reply commits to all the same.
_SLASHED = re.compile(r"(?<=\d)\s?/\s?(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?![\d/])")


def _slashed_figure(text: str, values: tuple[tuple[str, float], ...]) -> str | None:
    masked = literal_spans(text)
    for m in _SLASHED.finditer(text):
        if any(s < m.end() and m.start() < e for s, e in masked):
            continue  # a date ("7/11/2026") or an identifier
        if not _held(float(m.group(1).replace(",", "")), "plain", values):
            return f"states {m.group(0).strip()!r}, a figure no document holds"
    return None


# A figure the reply rules out in the same breath ("not $99 but $79", "16 weeks, not 12"):
# no claim. Only "not" right before the figure and a clause's end or "but" right after it:
# "not counting the extra 4 weeks" still claims the 4 weeks.
_NOT_BEFORE = re.compile(r"\b(?:not|rather than|instead of)\s+$", re.I)
_NOT_AFTER = re.compile(r"\s*(?:,?\s*but\b|[.,;!?)\n]|$)")


def _ruled_out(text: str, x: Quantity) -> bool:
    before = text[max(0, x.start - 14) : x.start]
    # "not 12 but 16": the reader takes "but" for the noun a bare count counts
    after = _NOT_AFTER.match(text, x.end) or x.noun.split()[:1] == ["but"]
    return bool(_NOT_BEFORE.search(before) and after)


def unbacked(
    reply: str, seen: str, english: bool, answers: tuple[Quantity, ...] = ()
) -> str | None:
    """Why a value of the reply is one `seen` (the documents, evidence, question and
    expected answer, joined) does not back, or None when every one is backed. A rounding of
    an expected figure (`answers`) is the answer the grade already read."""
    if not seen.strip():
        return None
    values, dates, physical, words, lowered = _backing(seen)
    text = normalize(reply)
    cues = list(RETRACTION_CUES.finditer(text))
    withdrawn = cues[-1].start() if cues else 0  # what a correction takes back is no claim
    for x in quantities(text, literal_spans(text)):
        if x.end <= withdrawn or _backed_figure(x, text, values) or _converted(x, physical):
            continue
        if _ruled_out(text, x):
            continue
        if any(a.deviation(x) <= AUTO_ZERO_DEVIATION and not misquoted(a, x) for a in answers):
            continue
        return f"states {text[x.start : x.end].strip()!r}, a figure no document holds"
    slashed = _slashed_figure(text, values)
    if slashed is not None:
        return slashed
    for d in literals.dates(text):
        if not _date_backed(d.key, dates):
            return f"states {d.text!r}, a date no document holds"
    for y in literals.years(text, [(d.start, d.end) for d in literals.dates(text)]):
        if y.key not in dates:
            return f"states {y.text!r}, a year no document holds"
    for m in re.finditer(r"\b[A-Z]{1,6}-\d+[A-Z]?\b", text):
        if m.group(0).lower() not in lowered:
            return f"names {m.group(0)!r}, an identifier no document has"
    return _unbacked_name(spoken_and_coded(reply), words) if english else None


def _date_backed(key: object, dates: frozenset[object]) -> bool:
    """A date the documents hold, to the parts the reply writes ("March 2026" for 2026-03-…)."""
    if not isinstance(key, tuple):
        return key in dates
    return any(
        isinstance(d, tuple) and all(a is None or a == b for a, b in zip(key, d, strict=False))
        for d in dates
    )


def _backed_figure(x: Quantity, text: str, values: tuple[tuple[str, float], ...]) -> bool:
    if not x.physical and any(_held(v, x.kind, values) for v in (x.low, x.high, *x.raw)):
        return True
    small = x.kind in ("count", "plain") and x.low == x.high and float(x.raw[0]).is_integer()
    if small and abs(x.raw[0]) <= SMALL_COUNT:
        return True
    if x.kind == "percent" and x.raw[0] in (0.0, 100.0):
        return True
    if x.kind == "plain" and 0 < abs(x.raw[0]) < 1 and _held(100 * x.raw[0], "percent", values):
        return True  # "0.04 of base salary": the document's 4% as a fraction
    if x.low < x.high and any(k == x.kind and x.low <= v <= x.high for k, v in values):
        return True  # a range around a document's figure commits to no other figure
    return operand(text, x.start, x.end) or _shown_result(text, x)


_EXPRESSION = re.compile(r"([\d.,\s()+\-−×*/÷]+?)\s*[=≈]\s*[$€£]?\s*$")


def _shown_result(text: str, x: Quantity) -> bool:
    """`x` follows '=' (or '≈') after working whose arithmetic gives it."""
    line_start = text.rfind("\n", 0, x.start) + 1
    # words (with any digits they hold: "SEV1s", "km/h") and currency marks are no terms
    before = re.sub(r"(?<=\d)\s*x\s*(?=[$€£]?\d)", " × ", text[line_start : x.start])
    before = re.sub(r"\w*[^\W\d_][\w/]*|[$€£%]", " ", before)
    m = _EXPRESSION.search(before)
    if not m or not re.search(r"\d\s*[+\-−×*/÷]\s*\(?\s*\d", m.group(1)):
        return False
    expr = m.group(1).replace(",", "").replace("−", "-").replace("×", "*").replace("÷", "/")
    if not re.fullmatch(r"[\d.\s()+\-*/]+", expr):
        return False
    try:
        with _PARSING:
            tree = ast.parse(expr.strip(), mode="eval")
        result = _evaluate(tree.body)
    except (SyntaxError, ZeroDivisionError, ValueError):
        return False
    return math.isclose(result, x.raw[0], rel_tol=ARITHMETIC_TOLERANCE)


# CPython 3.11's ast.parse is not safe from several threads at once (SystemError: AST
# constructor recursion depth mismatch, seen when `agenteval run` judges concurrently)
_PARSING = threading.Lock()

_OPERATIONS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
               ast.Div: operator.truediv}  # fmt: skip


def _evaluate(node: ast.expr) -> float:
    """The value of an expression of numbers and + - * / (nothing else is evaluated)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATIONS:
        return float(_OPERATIONS[type(node.op)](_evaluate(node.left), _evaluate(node.right)))
    raise ValueError("not arithmetic")


_SENTENCE_OPEN = re.compile(r"(?:^|[.!?:;|>#\-•\n\"“(\[]|\d\.)\s*$")


def _unbacked_name(reply: str, words: frozenset[str]) -> str | None:
    """A capitalised word mid-sentence that no document, question or answer writes."""
    plain = re.sub(r"\*+|`+|(?<!\w)_+|_+(?!\w)", " ", reply)
    for m in re.finditer(r"\b[A-Z][\w'’-]*", plain):
        word = m.group(0).lower().rstrip("'’-")
        forms = {word, re.sub(r"(?:['’]s|(?<=\d)s)$", "", word), word.replace("’", "'")}
        # "GPLv3", "SEV1s": the letters before a version or number are the documents' word
        forms.add(re.sub(r"v?\d[\w.]*$", "", word))
        if forms & (words | COMMON_CAPITALISED | FORMAT_WORDS):
            continue
        if _SENTENCE_OPEN.search(plain[: m.start()]):
            continue
        return f"names {m.group(0)!r}, which no document writes"
    return None


_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__", re.S)
_LABEL = re.compile(r"^\W*(?:answer|short answer|in short|summary|note|source|tl;?dr)\W*$", re.I)


def emphasised_other(reply: str, question: str, part: Part) -> str | None:
    """The bold span the reply gives as its answer when no bold span holds the expected
    value and one holds a value of the asked kind: the emphasis names another answer."""
    spans = [m.group(1) or m.group(2) for m in _BOLD.finditer(reply)]
    spans = [s for s in spans if not _LABEL.match(s) and not s.rstrip().endswith(":")]
    if not spans or part.kind not in ("quantity", "name", "text"):
        return None
    if part.kind == "quantity":
        key = part.key
        assert isinstance(key, Quantity)
        found = [(s, x) for s in spans for x in quantities(normalize(s))]
        deviations = [key.deviation(x) for _, x in found]
        if not found or any(d <= AUTO_ZERO_DEVIATION for d in deviations):
            return None
        if all(d == math.inf for d in deviations):
            return None
        return next(s for (s, _), d in zip(found, deviations, strict=True) if d < math.inf)
    wanted = [w for w in re.findall(r"[a-z0-9]{3,}", part.text.lower())]
    asked = question.lower()
    # a bold subject the question names ("**Cybersecurity awareness training** is owned by")
    spans = [s for s in spans if not _named_by(s, asked)]
    for s in spans:
        if wanted and sum(w in s.lower() for w in wanted) * 2 >= len(wanted):
            return None
    return spans[0] if spans else None


_PERIOD_WORDS = r"(?:years?|months?|weeks?|days?|quarters?|nights?)"
_SPREAD = re.compile(
    rf"[^.;\n]{{0,40}}?\b(?:across|over|spread over|for|in total over)\s+(?:the\s+|those\s+|"
    rf"these\s+|both\s+|all\s+)?(?:first\s+)?(?:[2-9]|\d\d)\s+{_PERIOD_WORDS}\b",
    re.I,
)
_PER_PERIOD = re.compile(r"\b(?:per|a|an|each|every)\s+(?:calendar\s+)?(?:year|month|week|day)\b|"
                         r"\b(?:annual|yearly|monthly|weekly|daily)\b", re.I)  # fmt: skip


def _named_by(span: str, asked: str) -> bool:
    return all(w in asked for w in re.findall(r"[a-z0-9]{3,}", span.lower()))


_PER_WORD = re.compile(r"(?:\bper|\ba|\ban|\beach|\bevery|/)\s*(?:calendar\s+)?"
                       r"(year|month|week|day|quarter|hour|minute|second|night|meal|trip)\b",
                       re.I)  # fmt: skip


_ADJECTIVES = {
    "annual": "year",
    "yearly": "year",
    "monthly": "month",
    "weekly": "week",
    "daily": "day",
    "nightly": "night",
    "hourly": "hour",
    "quarterly": "quarter",
}


def added_period(question: str, expected: str, text: str, part: Part) -> str | None:
    """The expected figure given as a rate per a period neither the question nor the answer
    names ("5 days per quarter" for five days carried into the next year)."""
    if part.kind != "quantity":
        return None
    key = part.key
    assert isinstance(key, Quantity)
    if key.per is not None:
        return None  # a rate asked for: another period is a conversion, graded as such
    asked = f"{question} {expected}".lower()
    asked += "".join(f" {period}" for word, period in _ADJECTIVES.items() if word in asked)
    for x in quantities(text, literal_spans(text)):
        # the period in the figure ("18 days/month") or a few words on ("18 days of PTO per
        # month")
        m = _PER_WORD.search(text[x.start : x.end]) or _PER_AFTER.match(text, x.end)
        if m and key.deviation(x) == 0 and m.group(1).lower() not in asked:
            return f"states {text[x.start : m.end()].strip()!r}, a rate the question never asks"
    return None


_PER_AFTER = re.compile(
    r"(?:\s+(?!per\b|a\b|an\b|each\b|every\b)[\w-]+){0,3}?\s+(?:per|a|an|each|every)\s+"
    r"(?:calendar\s+)?(year|month|week|day|quarter|hour|minute|second|night|meal|trip)\b",
    re.I,
)
# "4% of your annual bonus" for a match of base salary: a share of a base the question
# never names. Words that say nothing of which base.
_OF_BASE = re.compile(r"\s+of\s+((?:[\w-]+\s+){0,3}[\w-]+)")
_BASE_FILLER = frozenset("the your their its his her our a an this that each every".split())


def trailing_period(text: str, part: Part) -> str | None:
    """The expected rate's figure with another period a few words on ("2 days of remote
    work each month" for 2 days per week): defer."""
    key = part.key
    own = _PER_WORD.search(part.text)
    if part.kind != "quantity" or not isinstance(key, Quantity) or own is None:
        return None
    for x in quantities(text, literal_spans(text)):
        m = _PER_AFTER.match(text, x.end)
        if x.per is None and m and m.group(1).lower() != own.group(1).lower() and x.raw == key.raw:
            return f"states {text[x.start : m.end()].strip()!r}, the figure per another period"
    return None


def other_base(question: str, expected: str, text: str, part: Part) -> str | None:
    """The expected percentage given as a share of something the question and answer never
    name ("4% of your annual bonus" for a match of base salary): defer."""
    key = part.key
    if part.kind != "quantity" or not isinstance(key, Quantity) or key.kind != "percent":
        return None
    asked = set(re.findall(r"[a-z]{3,}", f"{question} {expected}".lower()))
    if not re.search(r"\bof\b", question.lower()):
        return None  # the question names no base: any the reply names is its own
    for x in quantities(text, literal_spans(text)):
        m = _OF_BASE.match(text, x.end)
        if not m or key.deviation(x) != 0:
            continue
        words = [w for w in re.findall(r"[a-z]{3,}", m.group(1).lower()) if w not in _BASE_FILLER]
        if words and not any(w in asked or w.rstrip("s") in asked for w in words):
            return f"states {text[x.start : m.end()].strip()!r}, a share of another base"
    return None


def spread_rate(question: str, text: str, part: Part) -> str | None:
    """A per-period fact ("18 days per year") restated as spanning several periods ("18 days
    ... across those two years")."""
    if part.kind != "quantity" or not _PER_PERIOD.search(question):
        return None
    key = part.key
    assert isinstance(key, Quantity)
    for x in quantities(text, literal_spans(text)):
        if key.deviation(x) == 0 and (m := _SPREAD.match(text, x.end)):
            return f"states {text[x.start : m.end()].strip()!r}, a total over several periods"
    return None


def other_period(text: str, part: Part, seen: str) -> str | None:
    """The expected rate restated per another period ("$476 per week" for $68 per day): the
    arithmetic may be right, but the document never gives that figure, and a day's rate
    times seven is not what a week's allowance is (working days, caps): defer, unless the
    documents (`seen`) state the restated figure themselves or the reply gives the
    document's own rate beside it (its working shown)."""
    key = part.key
    if part.kind != "quantity" or not isinstance(key, Quantity) or key.per is None:
        return None
    given = quantities(seen, literal_spans(seen)) if seen.strip() else []
    found = quantities(text, literal_spans(text))
    if any(x.per == key.per and key.deviation(x) == 0 for x in found):
        return None  # "7,200 per hour (120 a minute)": the document's own rate shown beside
    for x in found:
        if (
            x.per is None
            or x.per[0] != key.per[0]
            or math.isclose(x.per[1], key.per[1], rel_tol=0.05)
        ):
            continue
        if key.deviation(x) > AUTO_ZERO_DEVIATION:
            continue  # another figure altogether: the grade has read it
        if not any(g.per == x.per and g.raw == x.raw for g in given):
            return f"states {text[x.start : x.end].strip()!r}, the rate per another period"
    return None
