"""The values a reply offers for each part of the expected answer, before any decision.

`parts_of` cuts an expected answer into the parts graded apart (a date, a time, an
identifier, a version, a year, quantities, a name, free text); the readers below find the
reply's candidates of each part's kind with how well each matches: quantities through the
precision table (a figure of the documents that is another fact, or a range that leaves the
expected value out, never matches), the exact literals, and names as sets of tokens. What a
reply commits to among them is decided in `judges.correctness`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from agenteval.judges import literals
from agenteval.judges.answers import Candidate, Context
from agenteval.judges.numbers import Quantity, misquoted, precision_score, quantities
from agenteval.judges.reading import GENERIC, normalize
from agenteval.scoring import AUTO_ZERO_DEVIATION, MINOR_SCORE, SCORE_MAX, SCORE_MIN


@dataclass
class Part:
    kind: str
    key: object
    text: str


def parts_of(expected: str) -> list[Part]:
    text = normalize(expected)
    found: list[Part] = []
    taken: list[tuple[int, int]] = []

    def take(items: list[literals.Literal]) -> None:
        for lit in items:
            if not any(s < lit.end and lit.start < e for s, e in taken):
                found.append(Part(lit.kind, lit.key, lit.text))
                taken.append((lit.start, lit.end))

    take(literals.dates(text))
    clock = [t for t in literals.times(text) if not _overlaps(t, taken)]
    if clock:
        found.append(Part("time", tuple(t.key for t in clock), text))
        taken += [(t.start, t.end) for t in clock]
    take(literals.identifiers(text))
    product = re.fullmatch(r"\s*([A-Z][A-Za-z]+)\s+(\d+(?:\.\d+)*)\s*", text)
    if product and product.group(1).lower() not in literals.MONTHS:  # "January 2004" is a date
        return [Part("version", product.group(2), product.group(1))]
    take(literals.versions(text))
    take(literals.years(text, taken))
    for q in quantities(text, taken):
        found.append(Part("quantity", q, text[q.start : q.end]))
        taken.append((q.start, q.end))
    rest = _outside(text, taken).strip(" ,;-")
    tokens = literals.name_tokens(rest) if rest else None
    if tokens:
        found.append(Part("name", tokens, rest))
    elif rest and [w for w in re.findall(r"[a-z]+", rest.lower()) if w not in GENERIC]:
        found.append(Part("text", rest, rest))
    return found


def _overlaps(lit: literals.Literal, taken: list[tuple[int, int]]) -> bool:
    return any(s < lit.end and lit.start < e for s, e in taken)


def _outside(text: str, taken: list[tuple[int, int]]) -> str:
    keep = [c for i, c in enumerate(text) if not any(s <= i < e for s, e in taken)]
    return re.sub(r"\s+", " ", "".join(keep))


# -- candidates in the reply -----------------------------------------------------------------
def literal_spans(text: str) -> list[tuple[int, int]]:
    return literals.spans(text)


UP = re.compile(r"\b(?:grow|grew|grown|growth|rise|rose|risen|increase[sd]?|up(?!\s+to)|"
                r"higher|gain(?:ed)?|climb(?:ed)?|jump(?:ed)?)\b", re.I)  # fmt: skip
DOWN = re.compile(r"\b(?:fall|fell|fallen|decline[sd]?|decrease[sd]?|down|lower|drop(?:ped)?|"
                  r"shrank|shrunk|contract(?:ed)?|lost|loss)\b", re.I)  # fmt: skip


def _direction(text: str) -> int:
    up, down = bool(UP.search(text)), bool(DOWN.search(text))
    return 0 if up == down else (1 if up else -1)


def _flipped(ctx: Context, q: Quantity, asked: int) -> bool:
    """ "fell 17%" answers "by what percentage did it grow" with -17%."""
    if not asked or q.kind != "percent" or q.low < 0:
        return False
    before = " ".join(re.findall(r"[\w']+", ctx.text[max(0, q.start - 40) : q.start])[-3:])
    return _direction(before) == -asked


# An arithmetic operator between figures: "16 weeks × 7 days", "60 + 52", "4 x 60".
_OPERATOR = r"(?:[×*÷+]|\bx\b|\btimes\b)"


def operand(text: str, start: int, end: int) -> bool:
    """A figure that is a term of a calculation the reply shows, not a value it commits
    to: an operator joins it to another figure. The result after "=" or "≈" is not one."""
    after = re.match(rf"\s*{_OPERATOR}\s*[$€£]?\d", text[end : end + 12])
    before = re.search(rf"\d[^\d=≈]{{0,16}}?{_OPERATOR}\s*$", text[max(0, start - 24) : start])
    # "60 + 52": the sign read with the figure is the operator after another figure.
    signed = re.match(r"[-+]\s", text[start:end]) and re.search(r"\d\s*$", text[:start])
    return bool(after or before or signed)


# A figure within the table's tolerance that no rounding of the expected one writes.
MISQUOTED = "digits no rounding of the expected figure writes"
# A figure off the expected one behind a word of approximation or a bound ("around 40%",
# "roughly $550,000", "a bit over"): the question asks for the document's exact figure, and
# code cannot tell a grader's leniency from a wrong figure made vague.
APPROXIMATED = "an approximation of a figure the documents give exactly"
# One figure where the expected answer is a range ("at least $34 million" for "$34 million to
# $36 million"): a part of the answer, not the answer.
RANGE_END = "one end of a range the documents give"
# A span or a change ("from 41.5% to 43.0%") where the answer is one figure.
POINT_AS_RANGE = "a range or change where one figure is asked"
# Notes of candidates that neither match nor fail: the caller defers on them.
UNSETTLED = frozenset({MISQUOTED, APPROXIMATED, RANGE_END, POINT_AS_RANGE})
_APPROXIMATE = re.compile(
    r"(?:\b(?:about|around|roughly|essentially|basically|effectively|practically|virtually|"
    r"more or less|approximately|approx\.?|nearly|almost|circa|ca\.|some|"
    r"close to|just (?:under|over|below|above)|(?:a (?:bit|little|touch) )?(?:over|under|"
    r"above|below|more than|less than)|at least|at most|up to|in the region of|on the order of|"
    r"upwards of|north of|south of|etwa|ungefähr|rund|knapp|environ|près de|presque|"
    r"aproximadamente|alrededor de|circa|ongeveer|bijna)|~|≈|±)\s*(?:[$€£]|usd|eur)?\s*$",
    re.I,
)


def _as_written(expected: Quantity, found: Quantity) -> bool:
    """`found` is written in the expected figure's unit: a conversion ("≈ 68.4 mi" for 110
    km) is near by its arithmetic, not made vague."""
    return (found.kind, found.per) == (expected.kind, expected.per) and (
        not expected.physical or found.raw[0] * expected.low == expected.raw[0] * found.low
    )


# After the figure: "$200k flat", "100% or so", "50-ish": a round figure asserted or made
# vague where the documents give an exact one.
_APPROXIMATE_AFTER = re.compile(r"\s*(?:-?ish\b|flat\b|or so\b|give or take\b|odd\b)", re.I)


def _vague(expected: Quantity, found: Quantity, text: str) -> bool:
    vague = approximated(text, found.start) or _APPROXIMATE_AFTER.match(text, found.end)
    return _as_written(expected, found) and bool(vague)


def approximated(text: str, start: int) -> bool:
    """A word of approximation or a bound right before the figure at `start`."""
    return bool(_APPROXIMATE.search(text[max(0, start - 40) : start]))


def quantity_candidates(part: Part, ctx: Context, evidence: list[Quantity]) -> list[Candidate]:
    text = ctx.text
    expected = part.key
    assert isinstance(expected, Quantity)
    asked = _direction(ctx.question) if expected.low >= 0 else 0
    found = []
    question = normalize(ctx.question)
    given = quantities(question, literal_spans(question))
    for q in quantities(text, literal_spans(text)):
        if operand(text, q.start, q.end):
            continue  # "4 × 60 = 240 minutes": the working, not the answer
        if re.match(r"\s*0\d", text[q.start : q.end]):
            continue  # zero-padded ("2026-03", "row 07"): a code or a month, not an amount
        if _flipped(ctx, q, asked):
            q = Quantity(-q.high, -q.low, q.kind, (-q.raw[1], -q.raw[0]), q.start, q.end)
        deviation = expected.deviation(q)
        if deviation > 0 and any(g.kind == q.kind and g.deviation(q) == 0 for g in given):
            continue  # "in their first 2 years" echoes the question: its terms, no answer
        if deviation == float("inf"):
            continue
        c = Candidate("quantity", q.start, q.end, text[q.start : q.end], value=q)
        c.matches = deviation <= AUTO_ZERO_DEVIATION + 1e-12
        c.grade = precision_score(deviation)
        c.note = f"{deviation:.1%} off"
        if c.matches and expected.excluded_by(q):
            c.matches, c.grade, c.note = False, SCORE_MIN, "a range that leaves the figure out"
        elif c.matches and deviation > 0 and _another_fact(q, expected, evidence):
            # 43.0% beside an expected 41.5% is not a rounding: it is the document's
            # prior-year figure, another fact, hence a wrong answer.
            c.matches, c.grade, c.note = False, SCORE_MIN, "another figure of the documents"
        elif c.matches and misquoted(expected, q):
            # the table would give marks, the labels a fail: code cannot tell (defer)
            c.matches, c.grade, c.note = False, SCORE_MIN, MISQUOTED
        elif c.matches and deviation > 0 and _vague(expected, q, text):
            c.matches, c.grade, c.note = False, SCORE_MIN, APPROXIMATED
        elif c.matches and expected.low < expected.high and q.low == q.high:
            c.matches, c.grade, c.note = False, SCORE_MIN, RANGE_END
        elif c.matches and expected.low == expected.high and q.low < q.high:
            # "somewhere between 99.5% and 99.9%", "rose from 41.5% to 43.0%" for one figure:
            # a span, or a change, commits to no one value (code cannot tell which end)
            c.matches, c.grade, c.note = False, SCORE_MIN, POINT_AS_RANGE
        found.append(c)
    return found


def _another_fact(found: Quantity, expected: Quantity, evidence: list[Quantity]) -> bool:
    return any(
        e.deviation(found) == 0 and expected.deviation(e) > 0 and e.kind == found.kind
        for e in evidence
    )


# A numeric date whose day and month could be either way round, one way right: not settled.
AMBIGUOUS_DATE = "day and month could be read either way"


def literal_candidates(part: Part, ctx: Context, product: str | None) -> list[Candidate]:
    text = ctx.text
    readers: dict[str, Callable[[], list[literals.Literal]]] = {
        "date": lambda: literals.dates(text),
        "id": lambda: [i for i in literals.identifiers(text) if _same_family(i.key, part.key)],
        "version": lambda: literals.versions(text, product),
        "year": lambda: literals.years(text, literal_spans(text)),
        "time": lambda: literals.times(text),
    }
    found = []
    for lit in readers[part.kind]():
        c = Candidate(part.kind, lit.start, lit.end, lit.text, value=lit.key)
        if part.kind == "date":
            c.matches, c.grade = _date_match(part.key, lit.key)
            if lit.other is not None and _date_match(part.key, lit.other)[0] != c.matches:
                c.matches, c.note = False, AMBIGUOUS_DATE
        elif part.kind == "time":
            c.matches = lit.key in part.key  # type: ignore[operator]
            c.grade = SCORE_MAX
        else:
            c.matches = str(lit.key).lower() == str(part.key).lower()
            c.grade = SCORE_MAX
        found.append(c)
    if part.kind == "time" and all(c.matches for c in found) and not _both_ends(part.key, found):
        for c in found:  # "10:00" for "10:00 to 15:00": one end of the answer
            if c.matches:
                c.matches, c.grade, c.note = False, SCORE_MIN, RANGE_END
    return found


def _both_ends(key: object, found: list[Candidate]) -> bool:
    """Every end of an expected span of times is among the reply's times."""
    ends = set(key) if isinstance(key, tuple) else set()
    return len(ends) < 2 or ends <= {c.value for c in found}


def _same_family(found: object, expected: object) -> bool:
    """INC-2303 competes with INC-2304, section 8 with section 11, Q3 with Q4."""
    a, b = str(found).lower(), str(expected).lower()
    return re.sub(r"[\d.]+.*$", "", a) == re.sub(r"[\d.]+.*$", "", b)


def _date_match(expected: object, found: object) -> tuple[bool, float]:
    assert isinstance(expected, tuple) and isinstance(found, tuple)
    ey, em, ed = expected
    fy, fm, fd = found
    if em != fm or (ed is not None and fd is not None and ed != fd):
        return False, 0.0
    if ey is not None and fy is not None and ey != fy:
        return False, 0.0
    if ed is not None and fd is None:
        return False, 0.0
    return True, (MINOR_SCORE if ey is not None and fy is None else SCORE_MAX)


ROLE_WORDS = frozenset(
    """officer chief director manager lead president engineer foundation office team
    department group partner committee board council company studio finance operations
    people support security service services university institute""".split()
)


def name_candidates(part: Part, ctx: Context) -> list[Candidate]:
    expected = set(part.key)  # type: ignore[call-overload]
    found = []
    for lit in literals.names(ctx.text, ctx.asked - expected):
        tokens = set(lit.key)  # type: ignore[call-overload]
        if tokens & ROLE_WORDS and not tokens & expected:
            continue  # a title or an organisation beside a person is not a rival person
        c = Candidate("name", lit.start, lit.end, lit.text, value=frozenset(tokens))
        if expected <= tokens:
            c.matches, c.grade = True, SCORE_MAX
        elif tokens & expected:
            if tokens <= expected:
                c.matches, c.grade, c.note = True, MINOR_SCORE, "part of the name"
            else:
                c.note = "a different name sharing a part of the expected one"
        elif len(expected) > 1 and len(tokens) < 2:
            continue  # a lone capitalised word is not a rival to a full name
        found.append(c)
    return found + _uncased_names(part, ctx, found)


# The expected name found only in another case: its commitment cues (capitals) are gone.
UNCASED = "the name in another case"


def _uncased_names(part: Part, ctx: Context, found: list[Candidate]) -> list[Candidate]:
    """The expected name written in another case ("rafaela nwosu", "COASTAL"): the whole
    name, word for word, is the name; capitalisation is how it is typed, not what it says.
    A reply that types names so types its rivals so too: a one-word name the documents or
    the reply capitalise elsewhere ("north came out on top") is then a rival name."""
    text, expected = ctx.text, frozenset(part.key)  # type: ignore[call-overload]
    pattern = r"(?<![\w-])" + r"\s+".join(map(re.escape, part.text.split())) + r"(?![\w-])"
    extra = []
    for m in re.finditer(pattern, text, re.I):
        if not any(c.start < m.end() and m.start() < c.end for c in found):
            extra.append(_candidate(m, expected, True))
            extra[-1].note = UNCASED
    if not extra or len(expected) != 1:
        return extra
    rivals = (ctx.proper | ctx.named) - ctx.asked - expected
    for m in re.finditer(r"(?<![\w-])[a-z\u00e0-\u024f]{3,}(?![\w-])", text):
        if m.group(0) in rivals:
            extra.append(_candidate(m, frozenset({m.group(0)}), False))
    return sorted(extra, key=lambda c: c.start)


def _candidate(m: re.Match[str], value: frozenset[str], matches: bool) -> Candidate:
    c = Candidate("name", m.start(), m.end(), m.group(0), value=value)
    c.matches, c.grade = matches, SCORE_MAX if matches else SCORE_MIN
    return c
