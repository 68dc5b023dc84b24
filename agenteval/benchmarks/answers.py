"""Code's reading of a final answer against a short ground truth: what it can settle, and
when it must leave the answer to a judge.

Used by the QA pre-check (before the A/B/C judge) and by the retrieval benchmark's answer
accuracy. The rules, in order:

- empty, looping or refusing replies are C;
- the answer equal to the truth or an alias, after normalisation (case, accents, articles,
  thousands separators, number words), is A;
- a numeric truth matches within 1%, with unit scales (k, million, bn) and percent <->
  fraction; a reply whose only compatible figures all differ is B;
- a textual truth found verbatim (normalised) in the reply is A;
- any negation or hedge next to the evidence, a list of candidates, or units code cannot
  convert, and the answer is deferred (no letter): code is not sure;
- a short truth that appears nowhere in the reply is B by the rule "short answers must
  appear" - not firm: a model judge, when one is configured, may still accept a paraphrase.

Figures are read by the code judge's number reader (`judges.numbers` over
`judges.reading.normalize`): one home for amounts, units and labels.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from agenteval.judges import literals
from agenteval.judges.numbers import Quantity, quantities
from agenteval.judges.reading import normalize

TOLERANCE = 0.01  # relative: "within 1%"
LONG_TRUTH_WORDS = 6  # truths this long are phrases a reply may reword: never B by absence
ARTICLES = frozenset({"a", "an", "the"})
NEGATION = re.compile(r"\b(?:not|no|never|none|neither|nor|cannot|without)\b|n't\b", re.IGNORECASE)
HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|might|unsure|unclear|uncertain|either|"
    r"not sure|i think|i believe|i guess|could be|may be)\b",
    re.IGNORECASE,
)
REFUSAL = re.compile(
    r"could ?n[o']t find|can ?n[o']t find|cannot find|not in the documents|no information|"
    r"do ?n[o']t know|do not know|unable to (?:find|answer|help)|can ?n[o']t answer|"
    r"cannot answer|not (?:mentioned|stated|specified|provided)|no documents",
    re.IGNORECASE,
)
MONTHS = re.compile(
    r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\b", re.IGNORECASE
)
FINAL = re.compile(r"^[\s*#>_-]*final answer[\s*_]*[:：]\s*(.+?)\s*$", re.IGNORECASE | re.M)
SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")
SCALE_AFTER_DIGIT = re.compile(r"(\d)(\s*)(thousand|million|billion)\b", re.IGNORECASE)
SHIELD = re.compile(r"QQ([A-Za-z]+?)QQ")
LEADING_NUMBER = re.compile(r"^\s*[$€£]?\s?\d")


@dataclass(frozen=True)
class Check:
    """Code's reading: a letter (or None = deferred), the rule, and whether it is final."""

    letter: str | None
    rule: str
    firm: bool = True

    @property
    def deferred(self) -> bool:
        return self.letter is None


@dataclass(frozen=True)
class Number:
    low: float
    high: float
    kind: str  # percent | money | plain
    unit: str | None
    scaled: bool  # written with k / million / bn
    sentence: int = 0

    @property
    def is_range(self) -> bool:
        return self.low != self.high

    def deviation(self, truth: Number) -> float:
        """Relative distance of this figure from `truth`; a range matches a range end to end."""
        if truth.is_range:
            if not self.is_range:
                return math.inf
            return max(
                _relative(truth.low, truth.low, self.low),
                _relative(truth.high, truth.high, self.high),
            )
        best = math.inf
        for low, high in _forms(truth, self):
            for value in {self.low, self.high}:
                best = min(best, _relative(low, high, value))
        return best


def _forms(truth: Number, found: Number) -> list[tuple[float, float]]:
    """The truth as the found figure may legitimately express it: percent <-> fraction."""
    forms = [(truth.low, truth.high)]
    if truth.kind == "percent" and found.kind == "plain" and found.high <= 1:
        forms.append((truth.low / 100, truth.high / 100))
    if truth.kind == "plain" and found.kind == "percent" and truth.high <= 1:
        forms.append((truth.low * 100, truth.high * 100))
    return forms


def _relative(low: float, high: float, value: float) -> float:
    if low <= value <= high:
        return 0.0
    nearest = low if abs(value - low) < abs(value - high) else high
    if nearest == 0:
        return math.inf
    return abs(value - nearest) / abs(nearest)


# -- normalisation ----------------------------------------------------------------------
@lru_cache(maxsize=4096)
def digits(text: str) -> str:
    """Number words as digits ("thirty days" -> "30 days"), via text2num."""
    from text_to_num import alpha2digit  # lazy: a compiled extension the CLI start avoids

    # "8.6 million" is already a figure: shield its scale word, which text2num would turn
    # into a second number (8.6 1000000).
    shielded = SCALE_AFTER_DIGIT.sub(r"\1\2QQ\3QQ", text)
    # threshold=1: "two" and up become digits, while "one" stays a word ("no one knows").
    return SHIELD.sub(r"\1", str(alpha2digit(shielded, "en", threshold=1)))


def normalise(text: str) -> str:
    """Lowercase words and numbers without articles, accents or thousands separators."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = digits(text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    tokens = re.findall(r"[a-z0-9]+(?:\.[0-9]+)?|[$€£%]", text)
    return " ".join(t for t in tokens if t not in ARTICLES)


def contains(haystack: str, needle: str) -> bool:
    """Whole-token containment of normalised texts."""
    return bool(needle) and f" {needle} " in f" {haystack} "


def final_answer(reply: str) -> str:
    """The text after the last `FINAL ANSWER:` line, else the whole reply."""
    found = FINAL.findall(reply)
    return (found[-1] if found else reply).strip()


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE.split(text) if s.strip()] or [text]


# -- numbers ----------------------------------------------------------------------------
# The number grammar is the code judge's (judges.numbers over judges.reading's normalised
# text): one reader of amounts, units (pint, within a dimension) and labels for the project.
def _number(q: Quantity, sentence: int) -> Number:
    kind = "percent" if q.kind == "percent" else "money" if q.kind.startswith("money") else "plain"
    unit = q.kind if q.physical else None  # physical amounts are in base units: comparable
    return Number(q.low, q.high, kind, unit, q.mult != 1.0, sentence)


def read_numbers(text: str) -> list[Number]:
    """Every figure in `text` with its kind and unit; number words read as digits first."""
    return [
        _number(q, index)
        for index, sentence in enumerate(sentences(normalize(text)))
        for q in quantities(sentence)
    ]


def numeric_truth(truth: str) -> Number | None:
    """The truth as one figure, when it is one: "$8.6 million", "17%", "3 years", a range.

    Identifiers ("Section 8", "INC-2303") and dates stay text: their digits are names, and
    1% of 2303 would accept the wrong incident.
    """
    text = normalize(truth)
    if not LEADING_NUMBER.match(text) or MONTHS.search(text) or literals.spans(text):
        return None
    found = quantities(text)
    if len(found) != 1:
        return None
    rest = text[: found[0].start] + " " + text[found[0].end :]
    if len(re.findall(r"[A-Za-z]+", rest)) > 3:
        return None
    return _number(found[0], 0)


def _compatible(truth: Number, found: Number) -> bool:
    kinds = truth.kind == found.kind or "plain" in (truth.kind, found.kind)
    if not kinds:
        return False
    if truth.kind == "money" and found.kind == "plain" and found.unit:
        return False  # "23.6 kg" is not a price
    return truth.unit is None or found.unit is None or truth.unit == found.unit


def _year_like(number: Number) -> bool:
    value = number.low
    return (
        number.kind == "plain"
        and number.low == number.high
        and value.is_integer()
        and 1900 <= value <= 2100
        and not number.unit
    )


# -- the check --------------------------------------------------------------------------
def precheck(answer: str, truth: str, aliases: Sequence[str] = (), question: str = "") -> Check:
    """Code's reading of `answer` against `truth`; see the module docstring for the rules."""
    text = answer.strip()
    if not text:
        return Check("C", "empty")
    if repetitive(text):
        return Check("C", "repetitive")
    forms = [normalise(f) for f in (truth, *aliases) if normalise(f)]
    norm = normalise(text)
    if norm in forms:
        return Check("A", "exact" if norm == forms[0] else "alias")
    if REFUSAL.search(text) and not any(contains(norm, f) for f in forms):
        return Check("C", "refusal")
    figure = numeric_truth(truth)
    if figure is not None:
        return _numeric(text, figure, question)
    return _phrase(text, forms, len(truth.split()) >= LONG_TRUTH_WORDS)


def _phrase(text: str, forms: list[str], long_truth: bool = False) -> Check:
    hits = [s for s in sentences(text) if any(contains(normalise(s), f) for f in forms)]
    own = frozenset(word for f in forms for word in f.split())
    if hits:
        if any(_guarded(s, own) for s in hits):
            return Check(None, "deferred: negated or hedged")
        if any(_listed(normalise(s), forms) for s in hits):
            return Check(None, "deferred: lists candidates")
        return Check("A", "contains")
    if long_truth:
        return Check(None, "deferred: long answer not found verbatim")
    if _guarded(text):
        return Check(None, "deferred: negated or hedged")
    return Check("B", "absent", firm=False)


def _numeric(text: str, truth: Number, question: str) -> Check:
    echoed = {(n.low, n.high) for n in read_numbers(question)}
    figures = [
        n
        for n in read_numbers(text)
        if not (_year_like(n) and not _year_like(truth))
        and ((n.low, n.high) not in echoed or n.deviation(truth) <= TOLERANCE)
    ]
    compatible = [n for n in figures if _compatible(truth, n)]
    matches = [n for n in compatible if n.deviation(truth) <= TOLERANCE]
    others = [n for n in compatible if n.deviation(truth) > TOLERANCE]
    parts = sentences(normalize(text))
    touched = {n.sentence for n in matches + others}
    if any(_guarded(parts[i]) for i in touched if i < len(parts)):
        return Check(None, "deferred: negated or hedged")
    if matches and others:
        return Check(None, "deferred: lists candidates")
    if matches:
        return Check("A", "numeric")
    if truth.is_range and any(truth.low <= n.low <= truth.high for n in others):
        return Check(None, "deferred: one figure inside the expected range")
    if others:
        return Check("B", "numeric mismatch")
    if figures:
        return Check(None, "deferred: units differ")
    if _guarded(text):
        return Check(None, "deferred: negated or hedged")
    return Check("B", "absent", firm=False)


def _guarded(sentence: str, truth_words: frozenset[str] = frozenset()) -> bool:
    """A negation or hedge in the sentence, other than words of the truth itself ("No
    trademark or patent rights are waived" may be said without being negated)."""
    for pattern in (NEGATION, HEDGE):
        for match in pattern.finditer(sentence):
            if match.group(0).lower() not in truth_words:
                return True
    return False


def _listed(sentence: str, forms: list[str]) -> bool:
    padded = f" {sentence} "
    return any(f" {f} or " in padded or f" or {f} " in padded for f in forms)


def repetitive(text: str, n: int = 5, times: int = 3, share: float = 0.4) -> bool:
    """A reply stuck in a loop: one run of `n` words occurs `times` times or more and its
    copies make up `share` of the reply (legal prose repeats phrases, loops repeat text)."""
    words = normalise(text).split()
    if len(words) < n * times:
        return False
    grams = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
    count = max(grams.values())
    return count >= times and count * n >= share * len(words)
