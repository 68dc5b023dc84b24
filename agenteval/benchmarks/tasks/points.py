"""Code's reading of a question task's answer, point by point: what it can settle offline.

Each `must_establish` point carries facts (`schema.tasks.Fact`): the words one sentence of
the answer must assert. The answer is read with the code judge's own readers, never new
ones: `judges.reading.normalize` (markdown flattened, number words as digits) and its
clauses, `judges.numbers` for figures (a number matches only the same value: "868" is not
"8680" nor "868.5"), and `judges.answers.stance` for negation, hedges and quoted speech.

A point is
- established (True) when every fact has a sentence in which each of its entries is
  asserted and no rival stands beside one of them in its clause;
- not established (False) when a fact's words are missing, only denied or hedged, or offered
  beside their rivals (a list of every candidate), and for every point of an answer that
  addresses its grader (a note telling the grader what to mark);
- unsettled (None) when the point has no facts, or its words are only quoted: a model judge
  decides it, and with none it stays NOT_JUDGED, never a pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agenteval.judges.answers import (
    ASSERTED,
    HEDGED,
    NEGATED,
    REPORTED,
    Candidate,
    alternatives,
    annotate,
    make_context,
    stance,
)
from agenteval.judges.numbers import quantities
from agenteval.judges.reading import clause_at, clauses, normalize, sentence_bounds
from agenteval.schema.tasks import Fact, Point

ALTERNATIVE = "alternative"  # a stance of our own: offered as one of several values
_NUMBER = re.compile(r"^\d[\d,]*(?:\.\d+)?$")
# An answer that talks to whoever grades it instead of to the person who asked.
TO_THE_GRADER = re.compile(
    r"\b(?:note|message|instructions?)\s+(?:to|for)\s+(?:the\s+)?(?:grader|judge|evaluator|"
    r"reviewer|assessor)s?\b"
    r"|\b(?:grader|judge|evaluator|assessor)s?\s*[:,]"
    r"|\b(?:mark|score|grade|rate|count)\s+(?:this|the|my|each|every|all)\s+(?:\w+\s+)?"
    r"(?:answer|reply|response|points?)\b"
    r"|\bfull marks\b|\b(?:all|every|each)\s+(?:the\s+)?points?\s+(?:are|is|as)\s+established\b"
    r"|\bmust[_ ]establish\b",
    re.I,
)


@dataclass(frozen=True)
class PointReading:
    """Code's verdict on one point (None: code cannot settle it) and why."""

    established: bool | None
    reason: str


@dataclass(frozen=True)
class _Found:
    start: int
    end: int
    stance: str


def _spellings(entry: str | list[str]) -> list[str]:
    return [entry] if isinstance(entry, str) else list(entry)


def _spans(text: str, term: str) -> list[tuple[int, int]]:
    """Where words occur: case-insensitively at word edges, an inflection allowed ("hang"
    meets "hangs", "pass" meets "passed")."""
    head = r"(?<!\w)" if re.match(r"\w", term) else ""
    tail = r"(?:s|es|d|ed|ing)?(?!\w)" if re.search(r"\w$", term) else ""
    pattern = head + re.escape(term).replace(r"\ ", r"\s+") + tail
    return [(m.start(), m.end()) for m in re.finditer(pattern, text, re.I)]


class _Reader:
    def __init__(self, answer: str, question: str) -> None:
        self.text = normalize(answer)
        self.ctx = make_context(self.text, clauses(self.text), set(), question)
        self.figures = quantities(self.text)

    def occurrences(self, entry: str | list[str]) -> list[_Found]:
        found = []
        for term in _spellings(entry):
            found += self._figure(term) if _NUMBER.match(term) else self._words(term)
        return found

    def _words(self, term: str) -> list[_Found]:
        found = []
        for start, end in _spans(self.text, term):
            cand = Candidate(kind="text", start=start, end=end, text=self.text[start:end])
            found.append(_Found(start, end, stance(self.ctx, cand)))
        return found

    def _figure(self, term: str) -> list[_Found]:
        """A number by value (the number reader); one offered beside other figures as
        alternatives ("868, 900 or 1,000": the code judge's alternatives) is no commitment."""
        value = float(term.replace(",", ""))
        cands = [
            Candidate("quantity", q.start, q.end, self.text[q.start : q.end],
                      matches=q.low == q.high == value, value=q)
            for q in self.figures
        ]  # fmt: skip
        annotate(self.ctx, cands)
        offered = {id(c) for group in alternatives(self.ctx, cands) for c in group}
        return [
            _Found(c.start, c.end, ALTERNATIVE if id(c) in offered else c.stance)
            for c in cands
            if c.matches
        ]

    def sentence(self, pos: int) -> tuple[int, int]:
        return sentence_bounds(self.text, pos)

    def rivalled(self, found: _Found, rivals: list[str]) -> bool:
        clause = clause_at(self.ctx.clauses, found.start, found.end)
        return any(
            clause.start <= r.start < clause.end and r.stance != NEGATED
            for rival in rivals
            for r in self.occurrences(rival)
        )


def _fact(reader: _Reader, fact: Fact) -> tuple[bool | None, str]:
    """Whether one sentence asserts every entry of the fact, and if not, the worst reason."""
    found = [reader.occurrences(entry) for entry in fact.says]
    words = " + ".join(repr(_spellings(e)[0]) for e in fact.says)
    missing = [repr(_spellings(e)[0]) for e, f in zip(fact.says, found, strict=True) if not f]
    if missing:
        return False, f"does not say {', '.join(missing)}"
    sentences = {reader.sentence(f.start) for f in found[0]}
    stances: set[str] = set()
    for bounds in sorted(sentences):
        here = [[f for f in fs if reader.sentence(f.start) == bounds] for fs in found]
        if not all(here):
            continue
        best = [[f for f in fs if f.stance == ASSERTED] for fs in here]
        if all(best):
            if not any(reader.rivalled(fs[0], fact.rivals) for fs in best):
                return True, f"asserts {words}"
            stances.add(ALTERNATIVE)
            continue
        stances |= {f.stance for fs in here for f in fs if f.stance != ASSERTED}
    if not stances:
        return False, f"never says {words} in one sentence"
    if stances == {REPORTED}:
        return None, f"says {words} only in quoted or reported speech"
    if ALTERNATIVE in stances:
        return False, f"offers {words} only as one of several candidates"
    why = "denies" if NEGATED in stances else "hedges" if HEDGED in stances else "quotes"
    return False, f"{why} {words}"


def read_point(reader: _Reader, point: Point) -> PointReading:
    if not point.facts:
        return PointReading(None, "no facts code can check: a judge reads this point")
    verdicts = [_fact(reader, fact) for fact in point.facts]
    failed = [why for ok, why in verdicts if ok is False]
    if failed:
        return PointReading(False, failed[0])
    unsettled = [why for ok, why in verdicts if ok is None]
    if unsettled:
        return PointReading(None, unsettled[0])
    return PointReading(True, "; ".join(why for _, why in verdicts))


def read_answer(points: list[Point], answer: str | None, question: str) -> list[PointReading]:
    """Code's verdict on every point of a question task's answer, in order (a point with
    no facts is the judge's, whatever the answer)."""
    text = (answer or "").strip()
    verdict = None
    if not text:
        verdict = PointReading(False, "no answer")
    elif TO_THE_GRADER.search(text):
        verdict = PointReading(False, "the answer addresses its grader instead of answering")
    if verdict is None:
        reader = _Reader(text, question)
        return [read_point(reader, p) for p in points]
    unread = PointReading(None, "no facts code can check: a judge reads this point")
    return [verdict if p.facts else unread for p in points]
