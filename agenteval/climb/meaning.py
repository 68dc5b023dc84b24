"""What a text says about the suite: its ground-truth values and its questions, read for meaning.

Read with the code judge's own machinery, so an edit cannot tell the guard in other words what
the judge would credit as an answer:

- values: number words become digits (`judges.reading.normalize`, text2num), quantities are
  read with units and scales and compared within one dimension (`judges.numbers`, pint:
  "sixteen weeks" = "16 weeks" = "112 days"; "one hundred twenty requests each minute" =
  "120 requests per minute"), dates, clock times, identifiers and versions by their keys
  (`judges.literals`), names and multi-word answers by their words' Snowball stems;
- questions: BM25 (bm25s) over every scenario question; a sentence's similarity to a question
  is its score divided by the question's score against itself, the BM25-weighted share of the
  question the sentence says (1.0: all of it).

One reader serves the guard (an edit may not encode a value or a question) and the failures a
proposer reads (the values removed): what one refuses the other removes.

Specific enough (the rule that keeps honest edits out of the refusals). A value counts on its
own when it could hardly appear in an honest instruction: an amount of money, a percentage
other than 0, 50 or 100, a measured quantity or a rate (time, mass, length, energy, requests
per minute) written with more than 1 unit, a plain number of three or more significant
digits, a date with its day or year, a clock time, an identifier such as INC-2303 or
PO-55817, a product version ("PostgreSQL 16"), a name, an answer of two or more content
words. Everything else - small plain numbers ("3", "200"), counts of a noun ("10 lines"),
section and clause numbers, quarters, years, one-word answers - and a figure written so that
it could be anything ("16" alone for 16 weeks, "one day", "100%", "a 24-hour clock") or a
figure the judge would credit only in part (1-5% off) is everywhere, so it counts only in a
sentence that also names what it answers: CONTEXT_STEMS content words of a question that value
answers.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval.corpus.retrieval import tokenize
from agenteval.judges import literals
from agenteval.judges.numbers import Quantity, compatible, quantities
from agenteval.judges.reading import normalize, sentence_bounds
from agenteval.scoring import AUTO_ZERO_DEVIATION, PRECISION_TABLE

# A restated figure is the value when the judge would credit it at all: within the
# automatic-zero deviation ("$49,000" for "$48,000" still earns 8 of 10). Within the band the
# judge credits in full it counts on its own; further off only beside its question, so an
# honest example amount near a value ("$1,250" near "$1,200") is not refused for it.
VALUE_TOLERANCE = AUTO_ZERO_DEVIATION
EXACT_TOLERANCE = PRECISION_TABLE[0][0]
CONTEXT_STEMS = 2  # question words beside a non-specific value that tie it to its question
MIN_QUESTION_STEMS = 3  # shorter questions ("how heavy is it?") are follow-ups, not findable
PLAIN_DIGITS = 3  # significant digits a unitless number needs to be specific on its own
EVERYDAY_PERCENT = frozenset({0.0, 50.0, 100.0})
SPECIFIC_ID = re.compile(r"^[A-Z]{1,6}-\d+[A-Z]?$")  # INC-2303, PO-55817; not "section 3"
COMPOUND = re.compile(r"[$€£]?[\d.,]+-[A-Za-z]")  # "24-hour", "12-month": a number as adjective
NAME_GAP = r"\s+(?:(?:de|van|von|da|di|del|le)\s+)?"  # between the words of a name


@functools.cache
def _stemmer() -> Any:
    import Stemmer  # PyStemmer: the Snowball stemmer, ~1 ms to import

    return Stemmer.Stemmer("english")


def stems(text: str) -> list[str]:
    """Content words of a (normalised) text as Snowball stems, in order."""
    words = tokenize(text)
    return list(_stemmer().stemWords(words)) if words else []


def _context(text: str) -> set[str]:
    """The stems that can tie a value to its question: not one-character tokens ("q", "3")."""
    return {w for w in stems(normalize(text)) if len(w) >= 2}


SPLIT_ORDER = ("train", "held", "test")


@dataclass(frozen=True)
class Truth:
    """One ground-truth value and where it is expected."""

    value: str
    where: tuple[tuple[str, str], ...]  # (scenario, split) of every turn or fact expecting it
    asked: tuple[tuple[str, str], ...] = ()  # (question, split): what it answers

    @property
    def splits(self) -> tuple[str, ...]:
        found = {split for _, split in self.where}
        return tuple(sorted(found, key=lambda s: SPLIT_ORDER.index(s) if s in SPLIT_ORDER else 9))

    @property
    def questions(self) -> tuple[str, ...]:
        return tuple(question for question, _ in self.asked)


@dataclass(frozen=True)
class Sign:
    """One readable value of a truth: a quantity, a literal's key, a name or content words."""

    kind: str  # quantity | date | time | id | version | year | name | text
    key: Any
    specific: bool
    truth: Truth


# (start, end, counts on its own, the words apart when they are) of one place a text says a value
Match = tuple[int, int, bool, tuple[tuple[int, int], ...]]


@dataclass(frozen=True)
class Hit:
    sign: Sign
    start: int  # in the normalised text
    end: int
    found: str  # the words that say it
    counts: bool  # specific, or in a sentence that names its question
    parts: tuple[tuple[int, int], ...] = ()  # the words alone, when they are apart

    @property
    def spans(self) -> tuple[tuple[int, int], ...]:
        return self.parts or ((self.start, self.end),)


def _quantity_specific(q: Quantity) -> bool:
    magnitude = abs(q.raw[0])
    if q.kind == "percent":
        return q.raw[0] not in EVERYDAY_PERCENT
    if q.kind.startswith("money"):
        return magnitude > 0
    if q.kind == "plain":
        digits = f"{magnitude:.6f}".replace(".", "").strip("0")  # 199690 -> 19969, 200 -> 2
        return len(digits) >= PLAIN_DIGITS
    if q.kind == "count" and q.per is None:
        return False
    return magnitude > 1


def signs_of(truth: Truth) -> list[Sign]:
    """What in a ground truth an edit could restate, each marked specific or not."""
    text = normalize(truth.value)
    found: list[Sign] = []
    taken: list[tuple[int, int]] = []

    def take(kind: str, items: Iterable[literals.Literal], specific: Any) -> None:
        for lit in items:
            if not any(s < lit.end and lit.start < e for s, e in taken):
                found.append(Sign(kind, lit.key, bool(specific(lit)), truth))
                taken.append((lit.start, lit.end))

    take("date", literals.dates(text), lambda d: d.key[2] is not None or d.key[0] is not None)
    take("time", literals.times(text), lambda _t: True)
    take("id", literals.identifiers(text), lambda i: SPECIFIC_ID.match(str(i.key)))
    product = re.fullmatch(r"\s*([A-Z][A-Za-z]+)\s+(\d+(?:\.\d+)*)\s*", text)
    if product and not found:
        return [Sign("version", (product[1][:6].lower(), product[2]), True, truth)]
    take("version", literals.versions(text), lambda v: v.key.count(".") >= 2)
    take("year", literals.years(text, taken), lambda _y: False)
    for q in quantities(text, taken):
        found.append(Sign("quantity", q, _quantity_specific(q), truth))
        taken.append((q.start, q.end))
    rest = "".join(c for i, c in enumerate(text) if not any(s <= i < e for s, e in taken))
    rest = " ".join(rest.split()).strip(" ,;-")
    tokens = literals.name_tokens(rest) if rest else None
    if tokens:
        found.append(Sign("name", tokens, True, truth))
    elif rest and (words := stems(rest)):
        found.append(Sign("text", tuple(dict.fromkeys(words)), len(set(words)) >= 2, truth))
    return found


def _deviation(expected: Quantity, said: Quantity) -> float:
    """How far a written figure is from the value; inf when it is not the same kind."""
    if not compatible(expected, said):
        return math.inf
    nouns = expected.noun and said.noun and expected.kind == said.kind == "count"
    if nouns and stems(expected.noun)[:1] != stems(said.noun)[:1]:
        return math.inf
    return expected.deviation(said)


def _same_date(expected: Any, said: Any) -> bool:
    (ey, em, ed), (sy, sm, sd) = expected, said
    if em != sm or (ed is not None and sd != ed):
        return False
    return ey is None or sy is None or ey == sy


@dataclass
class Values:
    """Every ground-truth value of the suite, and where a text restates one."""

    truths: Sequence[Truth]
    signs: list[Sign] = field(init=False)
    _asked: dict[Truth, set[str]] = field(init=False)

    def __post_init__(self) -> None:
        self.signs = [s for t in self.truths for s in signs_of(t)]
        self._asked = {t: _context(" ".join(t.questions)) for t in self.truths}

    def hits(self, text: str) -> tuple[str, list[Hit]]:
        """The normalised text and every restated value in it (specific or not)."""
        norm = normalize(text)
        if not norm.strip():
            return norm, []
        said = _Said(norm)
        found = []
        for sign in self.signs:
            for start, end, alone, parts in said.matches(sign):
                counts = alone and sign.specific
                if not counts:
                    counts = self._in_context(norm, start, end, sign.truth)
                found.append(Hit(sign, start, end, norm[start:end], counts, parts))
        return norm, found

    def encoded(self, text: str) -> list[Hit]:
        """The restated values that count: specific ones, and the others beside their question."""
        return [h for h in self.hits(text)[1] if h.counts]

    def redact(self, text: str, mark: str) -> str:
        """The (normalised) text with every restated value replaced by `mark`, specific or not:
        a proposer must not learn even a small number that a scenario expects."""
        norm, found = self.hits(text)
        merged: list[list[int]] = []
        for start, end in sorted({span for h in found for span in h.spans}):
            if merged and not norm[merged[-1][1] : start].strip():  # touching: one mark
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        out, last = [], 0
        for start, end in merged:
            out += [norm[last:start], mark]
            last = end
        return "".join([*out, norm[last:]])

    def _in_context(self, text: str, start: int, end: int, truth: Truth) -> bool:
        lo, hi = sentence_bounds(text, start)
        around = _context(text[lo:start] + " " + text[end : max(hi, end)])
        return len(around & self._asked[truth]) >= CONTEXT_STEMS


class _Said:
    """One normalised text, read once for every kind of value."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lower = text.lower()
        self.quantities = quantities(text)
        self.dates = literals.dates(text)
        self.times = literals.times(text)
        self.ids = literals.identifiers(text)
        self.years = literals.years(text, literals.spans(text))
        self.sentences = _sentences(text)

    def matches(self, sign: Sign) -> list[Match]:
        """Every place the text says the sign's value (see `Match`)."""
        key = sign.key
        if sign.kind == "quantity":
            near = [(q, _deviation(key, q)) for q in self.quantities]
            return [(q.start, q.end, d <= EXACT_TOLERANCE + 1e-12 and self._alone(q, key), ())
                    for q, d in near if d <= VALUE_TOLERANCE + 1e-12]  # fmt: skip
        if sign.kind == "date":
            return [(d.start, d.end, True, ()) for d in self.dates if _same_date(key, d.key)]
        if sign.kind == "time":
            return [(t.start, t.end, True, ()) for t in self.times if t.key == key]
        if sign.kind == "id":
            wanted = str(key).lower()
            return [(i.start, i.end, True, ()) for i in self.ids if str(i.key).lower() == wanted]
        if sign.kind == "year":
            return [(y.start, y.end, True, ()) for y in self.years if y.key == key]
        if sign.kind == "version":
            return self._versions(key)
        if sign.kind == "name":
            joined = NAME_GAP.join(re.escape(w) for w in key)
            pattern = re.compile(rf"(?<!\w){joined}(?!\w)", re.I)
            return [(m.start(), m.end(), True, ()) for m in pattern.finditer(self.text)]
        return self._words(key)

    def _alone(self, said: Quantity, expected: Quantity) -> bool:
        """Whether the figure as written can stand for the value without its question: not a
        bare number for a value with a unit ("16" for "16 weeks"), not "one"/"a" of a unit,
        not an everyday percentage ("100%"), not an adjective ("24-hour times")."""
        if said.kind == "plain" and expected.kind != "plain":
            return False
        if said.kind == "percent":
            return said.raw[0] not in EVERYDAY_PERCENT
        if abs(said.raw[0]) <= 1:
            return False
        return not COMPOUND.match(self.text, said.start)

    def _versions(self, key: tuple[str, str]) -> list[Match]:
        product, version = key
        found = literals.versions(self.text, product)
        return [(v.start, v.end, True, ()) for v in found
                if v.key == version and product in v.text.lower()]  # fmt: skip

    def _words(self, wanted: tuple[str, ...]) -> list[Match]:
        """A multi-word answer: all its stems within one sentence; the span they cover, and
        each word (what redaction removes)."""
        found = []
        for _lo, _hi, words in self.sentences:
            spans = tuple((s, e) for s, e, w in words if w in wanted)
            if {w for _s, _e, w in words if w in wanted} == set(wanted):
                found.append((spans[0][0], spans[-1][1], True, spans))
        return found


_WORD_SPAN = re.compile(r"[A-Za-z\u00c0-\u024f]+|\d+(?:[.,]\d+)*")


def _sentences(text: str) -> list[tuple[int, int, list[tuple[int, int, str]]]]:
    """(start, end, [(word start, word end, stem)]) per sentence of the text."""
    out = []
    pos = 0
    while pos < len(text):
        lo, hi = sentence_bounds(text, pos)
        hi = max(hi, pos + 1)
        words = []
        for m in _WORD_SPAN.finditer(text, lo, hi):
            stem = stems(m.group(0))
            if stem:
                words.append((m.start(), m.end(), stem[0]))
        out.append((lo, hi, words))
        pos = hi + 1
    return out


@dataclass(frozen=True)
class Similar:
    question: str
    where: tuple[tuple[str, str], ...]  # (scenario, split) of every place it is asked
    score: float  # share of the question's BM25 weight the sentence carries
    sentence: str


class Questions:
    """BM25 over the suite's questions; which of them a text asks again in other words."""

    def __init__(self, asked: Mapping[str, Sequence[tuple[str, str]]]) -> None:
        import bm25s

        self.texts: list[str] = []
        self.where: list[tuple[tuple[str, str], ...]] = []
        tokens: list[list[str]] = []
        for question, places in sorted(asked.items()):
            words = stems(normalize(question))
            if len(set(words)) >= MIN_QUESTION_STEMS:
                self.texts.append(question)
                self.where.append(tuple(sorted(set(places))))
                tokens.append(words)
        self._bm25 = bm25s.BM25()
        self._bm25.index(tokens, show_progress=False)
        self._vocab = set(self._bm25.vocab_dict)
        self._self = [float(self._bm25.get_scores(sorted(set(t)))[i]) for i, t in enumerate(tokens)]

    def similar(self, text: str, threshold: float) -> list[Similar]:
        """Every question some sentence (or two in a row) of the text matches at `threshold`
        or more, best first; one entry per question."""
        best: dict[int, Similar] = {}
        for segment in _segments(normalize(text)):
            words = sorted(set(stems(segment)) & self._vocab)
            if not words:
                continue
            scores = self._bm25.get_scores(words)
            for i, own in enumerate(self._self):
                share = float(scores[i]) / own if own > 0 else 0.0
                if share >= threshold and (i not in best or share > best[i].score):
                    best[i] = Similar(self.texts[i], self.where[i], round(share, 4), segment)
        return sorted(best.values(), key=lambda s: (-s.score, s.question))

    def best(self, text: str) -> float:
        """The highest similarity of any sentence of the text to any question."""
        found = self.similar(text, 0.0)
        return found[0].score if found else 0.0


def _segments(text: str) -> list[str]:
    """Sentences and bullet lines, and each two in a row (a question and its answer may sit in
    neighbouring sentences)."""
    parts = [p.strip(" -*•\t") for p in re.split(r"(?<=[.!?;])\s+|\n+", text)]
    parts = [p for p in parts if p]
    return parts + [f"{a} {b}" for a, b in itertools.pairwise(parts)]
