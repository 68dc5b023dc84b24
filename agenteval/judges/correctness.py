"""Correctness by commitment: grade what a reply commits to against the ground truth.

The rules, each in one place (thresholds come from `agenteval.scoring`):
- an asserted candidate that matches, with no asserted conflicting candidate of the same
  kind for the same entity, is graded by the precision table; more than 5% off is a
  conflict (automatic zero);
- the expected value among alternatives, or only named to be denied, earns 0;
- on an answerable turn an abstention phrase is a refusal only when nothing is asserted;
- years, dates, times, versions and identifiers compare exactly; names as entities.
Where these cannot settle a reply the result is None with the reason: the caller defers.
Turns whose answer is not in the documents are graded by `judges.abstention`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from agenteval.findings import CODE_FINDINGS, finding_score
from agenteval.judges import audit, commitment, layout, sources
from agenteval.judges.answers import (
    ASKED,
    CORRECTION,
    NEGATED,
    OTHER,
    REPORTED,
    WEAK,
    Candidate,
    Context,
    alternatives,
    annotate,
    called_off,
    hits,
    make_context,
    other_entity,
    replaced,
)
from agenteval.judges.candidates import (
    AMBIGUOUS_DATE,
    UNCASED,
    UNSETTLED,
    Part,
    literal_candidates,
    literal_spans,
    name_candidates,
    parts_of,
    quantity_candidates,
)
from agenteval.judges.conditions import chosen_other, denied_condition, restated_rate
from agenteval.judges.numbers import Quantity, quantities
from agenteval.judges.reading import (
    GENERIC,
    abstains,
    asked_marks,
    clause_at,
    clauses,
    english,
    normalize,
    proper_words,
    sentence_bounds,
    stem,
)
from agenteval.scoring import AUTO_ZERO_DEVIATION, MINOR_SCORE, SCORE_MAX, SCORE_MIN


@dataclass(frozen=True)
class Result:
    """A grade of one dimension, or a deferral (score None) with the reason."""

    score: float | None  # None: code cannot settle it (the dimension is deferred)
    reason: str
    rule: str | None = None  # the finding graded by: a key of findings.CODE_FINDINGS

    def __post_init__(self) -> None:
        # Every score names its rule, so the hybrid judge binds it (findings.BINDING_FINDINGS)
        # and no grade can be added to the code judge without being classified.
        if self.score is not None and self.rule not in CODE_FINDINGS:
            raise ValueError(f"a code score needs a rule of findings.CODE_FINDINGS: {self}")


def finding(rule: str, reason: str, graded: float | None = None) -> Result:
    """The result of a code finding, scored as findings.CODE_FINDINGS says."""
    return Result(finding_score(rule, graded), reason, rule)


# The finding a committed wrong value of each kind is.
WRONG_RULE = {"quantity": "wrong_value", "name": "wrong_name"}


@dataclass
class Question:
    text: str  # the user's message and the fact's question, joined
    expected: str | None
    unknown: bool  # the answer is not in the documents
    queried: bool  # the agent searched or read a document this turn
    evidence: str = ""  # what the tools returned: passages the agent saw
    subjects: str = ""  # the documents' ids: what the conversation is about by default
    documents: list[str] | None = None  # files the scenario indexed: where sources are checked


# -- deciding --------------------------------------------------------------------------------
def decide(ctx: Context, cands: list[Candidate], what: str, part: Part | None = None) -> Result:
    live = [c for c in cands if c.stance not in (NEGATED, REPORTED)]
    matches = [c for c in live if c.matches and c.level in (ASKED, WEAK)]
    conflicts = [c for c in live if not c.matches and c.level == ASKED and not _of_named(ctx, c)]
    conflicts += [c for c in live if not c.matches and c.note.startswith("a different name")]
    if any(c.note == AMBIGUOUS_DATE for c in live) and not any(c.matches for c in live):
        return Result(None, f"a numeric date that reads as {what} only one way round")
    settled = commitment.settle(ctx, live, _expected_quantity(part))
    if settled is not None:
        return _settled(settled, what)
    taken = commitment.taken_back(ctx, live, what)
    if taken is not None:
        rule, why = taken
        return Result(None, why) if rule is None else finding(rule, why)
    for group in alternatives(ctx, cands):
        shown = " / ".join(c.text for c in group)
        why = f"offers alternatives ({shown}) without committing to {what}"
        return finding("alternatives", why)
    rivals = [c for c in live if c.kind == "name" and not c.matches]
    if matches and rivals and all(c.note == UNCASED for c in matches):
        # "north topped it, coastal came second": with the names typed without capitals,
        # code cannot tell which one the reply commits to
        return Result(None, f"names {what} in another case beside {rivals[0].text!r}")
    unsettled = [c for c in live if c.note in UNSETTLED and c.level != OTHER]
    if unsettled:
        return Result(None, f"states {unsettled[0].text!r}: {unsettled[0].note}; cannot tell")
    if matches and conflicts:
        a, b = matches[0].text, conflicts[0].text
        renamed = any(c.note.startswith("a different name") for c in conflicts)
        conflicting = f"commits to conflicting values {a!r} and {b!r} for {what}"
        if renamed or any(_corrects(ctx, c) for c in conflicts):
            return finding("conflicting", conflicting)
        best = max(matches, key=lambda c: (hits(ctx, c, cands), c.grade))
        if all(hits(ctx, c, cands) < hits(ctx, best, cands) for c in conflicts):
            why = f"states {best.text!r} for {what}; {b!r} is said of something the question "
            return finding(_match_rule(best), why + "does not ask about", best.grade)
        if any(_bare(ctx, c) for c in conflicts):
            return finding("conflicting", conflicting)
        # Both stated about what seems the asked entity: a contradiction, or a figure about
        # something the clause names in words code cannot tie to an entity. Not settled.
        return Result(None, f"states both {a!r} and {b!r}; cannot tell which answers {what}")
    if matches and all(c.kind == "name" and other_entity(ctx, c, ctx.question) for c in matches):
        return finding("other_entity", f"says {what} of another entity, never the asked one")
    if matches and not conflicts and all(another_line(ctx, c, part) for c in matches):
        return Result(None, f"states {what} in words of another line of the documents")
    if matches and all(_other_identifier(ctx, *_clause_span(ctx, c)) for c in matches):
        why = f"ties {matches[0].text!r} to an identifier the question does not ask about"
        return Result(None, f"{why}; cannot tell it answers {what}")
    if matches and all(called_off(ctx, c) for c in matches):
        why = f"states {matches[0].text!r} as called off (deferred, dropped, rejected)"
        return Result(None, f"{why}; cannot tell it is the answer")
    if matches:
        best = max(matches, key=lambda c: c.grade)
        extra = f" ({best.note})" if best.note else ""
        return finding(_match_rule(best), f"states {best.text!r} for {what}{extra}", best.grade)
    if any(c.matches and c.stance == NEGATED for c in cands):
        return finding("negated", f"names {what} only to deny it")
    wrong = conflicts or [c for c in live if not c.matches and c.level == WEAK]
    if wrong:
        # Tied to the asked entity, the value is a wrong answer of its kind; in a clause
        # that names nothing, it is still the only value given, and the expected one is not.
        rule = WRONG_RULE.get(wrong[0].kind, "wrong_identifier") if conflicts else "other_value"
        return finding(rule, f"states {wrong[0].text!r} instead of {what}")
    tied = [c for c in live if c.matches and c.level == OTHER]
    if tied and all(other_entity(ctx, c, ctx.question) for c in tied):
        return finding("other_entity", f"says {what} of another entity, never the asked one")
    if tied:
        return Result(None, f"{what} appears only tied to another entity")
    unsettled = [c for c in live if c.note in UNSETTLED]
    if unsettled:  # tied to another entity, or only made vague: no absence either way
        return Result(None, f"states {unsettled[0].text!r}: {unsettled[0].note}; cannot tell")
    if part is not None and _written_unread(part, ctx.text):
        return Result(None, f"{what} is written in the reply in words code did not read")
    return finding("absent", f"{what} absent")


_NAMED_PAREN = re.compile(r"\b([A-Z][\w.-]*(?: [A-Z0-9][\w.-]*)*) ?\($")


def _of_named(ctx: Context, c: Candidate) -> bool:
    """The value stands in a parenthesis of its own right after a name of the documents the
    question does not ask about ("between the Sparrow ($1,849) and the Osprey"): said of
    that name, no rival answer. (The pass still needs the value backed: `judges.audit`.)"""
    m = _NAMED_PAREN.search(ctx.text[max(0, c.start - 60) : c.start].rstrip(" "))
    if not m or not ctx.text[c.end : c.end + 2].lstrip().startswith(")"):
        return False
    words = m.group(1).lower().split()
    asked = ctx.question.lower()
    return all(w in ctx.named for w in words) and not any(w in asked for w in words)


_IDENTIFIER = re.compile(r"\b([A-Z]{2,6})-\d[\w-]*")


def _clause_span(ctx: Context, c: Candidate) -> tuple[int, int]:
    clause = clause_at(ctx.clauses, c.start, c.end)
    return clause.start, clause.end


def _other_identifier(ctx: Context, start: int, end: int) -> bool:
    """The text names an identifier of the kind the question asks about, never the asked
    one ("the expired certificate was behind INC-2303" asked of INC-2291)."""
    asked = {m.group(0) for m in _IDENTIFIER.finditer(ctx.question)}
    prefixes = {a.split("-")[0] for a in asked}
    named = {m.group(0) for m in _IDENTIFIER.finditer(ctx.text, start, end)}
    named = {n for n in named if n.split("-")[0] in prefixes}
    return bool(named) and not named & asked


def _written_unread(part: Part, text: str) -> bool:
    """The expected value's own words are in the reply although no reader found them: code
    could not read them (a year in 'the third quarter of 2026'), which is no absence."""
    words = re.findall(r"[\w$€£.,%-]+", part.text)
    return bool(words) and all(
        re.search(rf"(?<![\w.]){re.escape(w)}(?![\w])", text, re.I) for w in words
    )


def _expected_quantity(part: Part | None) -> Quantity | None:
    if part is not None and part.kind == "quantity" and isinstance(part.key, Quantity):
        return part.key
    return None


def _settled(settled: commitment.Settled, what: str) -> Result:
    """The grade of a reply that corrects itself: the value it ends on (`judges.commitment`)."""
    first, final = settled.earlier.text, settled.final[0]
    if settled.outcome == "right":
        best = max(settled.final, key=lambda c: c.grade)
        why = f"corrects {first!r} to {best.text!r}, which states {what}"
        return finding(_match_rule(best), why, best.grade)
    if settled.outcome == "wrong":
        return finding("corrected", f"commits to {first!r}, then corrects it to {final.text!r}")
    why = f"corrects {first!r}, then states {final.text!r}; cannot tell what it ends on"
    return Result(None, why)


def another_line(ctx: Context, c: Candidate, part: Part | None) -> bool:
    """The words the reply ties the value to ("for the public Wi-Fi refresh") are those of
    a line of the indexed documents (else of the evidence) that does not hold the value,
    and of no line that does: the figure may be said of another row. Not certain: the
    caller defers."""
    if part is None or part.kind != "quantity" or not ctx.lines:
        return False
    clause = clause_at(ctx.clauses, c.start, c.end)
    own = set(re.findall(r"[a-z][\w-]{3,}", ctx.text[clause.start : clause.end].lower()))
    novel = {w for w in own if w not in GENERIC and stem(w) not in ctx.keys}
    if len(novel) < 2:
        return False
    key = part.key
    assert isinstance(key, Quantity)

    def holds(line: str) -> bool:
        return any(key.deviation(x) == 0 for x in quantities(line, literal_spans(line)))

    home = [line for line in ctx.lines if holds(line)]
    if not home or any(novel & set(re.findall(r"[a-z][\w-]{3,}", h)) for h in home):
        return False
    return any(novel <= set(re.findall(r"[a-z][\w-]{3,}", line)) for line in ctx.lines)


def _match_rule(c: Candidate) -> str:
    return "precision" if c.kind == "quantity" else "stated"


def _corrects(ctx: Context, c: Candidate) -> bool:
    """A later "actually, it's Y" withdraws an earlier value."""
    start, _ = sentence_bounds(ctx.text, c.start)
    return bool(CORRECTION.search(ctx.text[start : c.start]))


def _bare(ctx: Context, c: Candidate) -> bool:
    """The value stands alone in its clause ("It was 9.1M."): no words of its own that
    could make it about something else."""
    clause = clause_at(ctx.clauses, c.start, c.end)
    words = re.findall(r"[a-z]{4,}", ctx.text[clause.start : clause.end].lower())
    own = [w for w in words if w not in GENERIC and stem(w) not in ctx.keys]
    return not own


def _text_part(part: Part, ctx: Context) -> Result:
    words = [w for w in re.findall(r"[a-z]+", str(part.key).lower()) if w not in GENERIC]
    words = [w for w in words if len(w) > 2]
    reply_stems = {stem(w) for w in re.findall(r"[a-z]+", ctx.text.lower())}
    present = [w for w in words if stem(w) in reply_stems]
    if not words:
        return Result(None, "nothing checkable in the expected answer")
    share = len(present) / len(words)
    if share == 1:
        first = re.search(re.escape(stem(words[0])), ctx.text.lower())
        pos = first.start() if first else 0
        start, _ = sentence_bounds(ctx.text, pos)
        near = " ".join(re.findall(r"[\w']+", ctx.text[start:pos].lower())[-4:])
        if re.search(
            r"\b(?:not|never|wasn't|isn't|no longer|rather than|instead of)\b|n't\b", near
        ):
            return finding("negated", f"denies {part.text!r}")
        if _other_identifier(ctx, start, sentence_bounds(ctx.text, pos)[1]):
            return Result(None, f"ties {part.text!r} to an identifier not asked about")
        if re.search(r"\beither\b", ctx.text[start:].lower()):
            return finding("alternatives", f"offers {part.text!r} only as one alternative")
        return finding("stated", f"states {part.text!r}", SCORE_MAX)
    if share < 0.5:
        return finding("absent", f"does not state {part.text!r}")
    return Result(None, f"states part of {part.text!r} ({len(present)}/{len(words)} words)")


def grade_part(part: Part, ctx: Context, evidence: list[Quantity]) -> Result:
    if part.kind == "text":
        return _replaced(part, ctx, _text_part(part, ctx), _text_spans(part, ctx))
    if part.kind == "name":
        cands = name_candidates(part, ctx)
    elif part.kind == "quantity":
        cands = quantity_candidates(part, ctx, evidence)
    else:
        cands = literal_candidates(part, ctx, part.text if part.kind == "version" else None)
    result = decide(ctx, annotate(ctx, cands), repr(part.text), part)
    if part.kind == "quantity":
        return result  # a quantity corrected to another one is `corrected` in `decide`
    return _replaced(part, ctx, result, [(c.start, c.end) for c in cands if c.matches])


def _replaced(part: Part, ctx: Context, result: Result, said: list[tuple[int, int]]) -> Result:
    """A stated name, version or text answer that a correction replaces with a value of
    another kind fails as a corrected answer (`answers.replaced`)."""
    if result.score is None or result.score <= SCORE_MIN:
        return result
    other = replaced(ctx, said)
    if other is None:
        return result
    return finding("corrected", f"states {part.text!r}, then corrects it to {other!r}")


def _text_spans(part: Part, ctx: Context) -> list[tuple[int, int]]:
    words = [w for w in re.findall(r"[a-z]{3,}", str(part.key).lower()) if w not in GENERIC]
    lowered = ctx.text.lower()
    found = [m for w in words if (m := re.search(rf"\b{re.escape(w)}", lowered))]
    return [(m.start(), m.end()) for m in found]


def context_for(reply: str, q: Question) -> Context:
    text = normalize(layout.asked_columns(reply, q.text))
    asked = asked_marks(q.text, q.expected or "", q.subjects.replace("_", " "))
    ctx = make_context(text, clauses(text), asked, q.text, q.evidence)
    docs = sources.load_documents(q.documents) if q.documents else None
    seen = "\n".join(d.text for d in docs) if docs else q.evidence
    ctx.lines = [line.lower() for line in normalize(seen).splitlines() if line.strip()]
    ctx.named = _named(seen)
    if ctx.known:
        ctx.proper |= ctx.named  # in another language, names are the documents' names
    return ctx


@functools.lru_cache(maxsize=64)
def _named(seen: str) -> frozenset[str]:
    """Words the documents write capitalised and never in lower case: names, wherever they
    stand (a CSV row's "North" opens its line)."""
    capitalised = {w.lower() for w in re.findall(r"\b[A-Z][a-z\u00e0-\u024f]{2,}\b", seen)}
    lower = set(re.findall(r"\b[a-z\u00e0-\u024f]{3,}\b", seen))
    return frozenset(proper_words(seen) | (capitalised - lower))


def grade_answer(q: Question, reply: str) -> Result:
    """Correctness of an answerable turn: every part of the expected answer graded."""
    assert q.expected is not None
    ctx = context_for(reply, q)
    seen = normalize(q.evidence)
    evidence = quantities(seen, literal_spans(seen)) if seen else []
    results = [grade_part(p, ctx, evidence) for p in parts_of(q.expected)]
    if not results:
        return Result(None, f"cannot read the expected answer {q.expected!r}")
    refused = abstains(ctx.text)
    committed = [r for r in results if r.score is None or r.score > SCORE_MIN]
    if refused and not committed:
        why = "refused" if q.queried else "lazy refusal: refused without querying"
        rule = "refused" if q.queried else "lazy_refusal"
        return finding(rule, f"{why}; expected {q.expected!r}")
    scored = [r for r in results if r.score is not None]
    if scored and min(r.score for r in scored if r.score is not None) == SCORE_MIN:
        worst = min(scored, key=lambda r: r.score or 0.0)
        return worst
    deferred = [r for r in results if r.score is None]
    if deferred:  # an invented source fails whatever the value's grade would have been
        return invented_source(q, ctx.text) or deferred[0]
    denied = denied_condition(q.text, ctx.text)
    if denied is not None:
        return finding("denied_condition", denied)
    rate = restated_rate(q.text, ctx.text, parts_of(q.expected))
    if rate is not None:
        return finding("restated_rate", rate)
    chosen = chosen_other(q.text, q.expected, ctx.text)
    if chosen is not None:
        return finding("wrong_name", f"states {q.expected!r}, but names {chosen!r} as the choice")
    worst = min(results, key=lambda r: r.score or 0.0)
    graded = Result(worst.score, "; ".join(r.reason for r in results), worst.rule)
    return audited(q, reply, ctx, with_sources(q, ctx.text, graded))


def backing_text(q: Question) -> str:
    """What a reply's values may come from: the indexed documents (else the evidence), the
    question and the expected answer. Empty when neither documents nor evidence are known."""
    docs = sources.load_documents(q.documents) if q.documents else None
    seen = "\n".join(d.text for d in docs) if docs else q.evidence
    return "\n".join((seen, q.text, q.expected or "")) if seen.strip() else ""


def audited(q: Question, reply: str, ctx: Context, graded: Result) -> Result:
    """A pass stands only when the whole reply commits to values the corpus backs
    (`judges.audit`); otherwise code cannot tell an invented fact from a true one: defer."""
    if graded.score is None or graded.score <= SCORE_MIN:
        return graded
    seen = backing_text(q)
    for part in parts_of(q.expected or ""):
        why = audit.spread_rate(q.text, ctx.text, part) or audit.other_period(ctx.text, part, seen)
        why = why or audit.added_period(q.text, q.expected or "", ctx.text, part)
        why = why or audit.other_base(q.text, q.expected or "", ctx.text, part)
        why = why or audit.trailing_period(ctx.text, part)
        if why is not None:
            return Result(None, why)
        other = audit.emphasised_other(reply, q.text, part)
        if other is not None:
            return Result(None, f"emphasises {other!r} as its answer, not {part.text!r}")
    answers = tuple(p.key for p in parts_of(q.expected or "") if isinstance(p.key, Quantity))
    why = audit.unbacked(reply, seen, english(reply), answers)
    return graded if why is None else Result(None, f"{why}; cannot tell it is not invented")


def _credited_refs(q: Question, text: str) -> list[sources.Reference]:
    asked = normalize(q.text).lower()
    expected = (q.expected or "").lower()
    docs = sources.load_documents(q.documents) if q.documents else None
    return [
        r
        for r in sources.references(text)
        if sources.credited(text, r)
        and r.text.lower() not in asked
        and not re.search(rf"\b{re.escape(r.kind)}\b", expected)
        and not sources.quoted(text, r, docs or [])
    ]


def invented_source(q: Question, text: str) -> Result | None:
    """A finding when the reply credits a source no indexed document has."""
    refs = _credited_refs(q, text)
    docs = sources.load_documents(q.documents) if refs and q.documents is not None else None
    for ref in refs if docs else []:
        if sources.look_up(ref, docs or [])[0] == sources.MISSING:
            why = f"credits the answer to {ref.text!r}, which no indexed document has"
            return finding("invented_source", why)
    return None


def with_sources(q: Question, text: str, graded: Result) -> Result:
    """The grade after the sources the reply names are looked up (`judges.sources`): an
    invented one is an invented fact (0); one that does not hold the value caps the grade;
    one code cannot look up defers a grade that would otherwise stand."""
    refs = _credited_refs(q, text)
    if not refs or q.documents is None or graded.score is None:
        return graded
    invented = invented_source(q, text)
    if invented is not None:
        return invented
    docs = sources.load_documents(q.documents)
    looked = [(r, *sources.look_up(r, docs or [])) for r in refs]
    for ref, status, found in looked:
        if status == "found" and found is not None and not holds_value(q.expected or "", found):
            why = f"credits the answer to {ref.text!r}, which does not hold it"
            return finding("misattributed_source", why, min(graded.score, MINOR_SCORE))
    unresolved = [ref.text for ref, status, _ in looked if status == sources.UNRESOLVED]
    if unresolved:
        return Result(None, f"names {unresolved[0]!r} as its source; code cannot look it up")
    return graded


def holds_value(expected: str, text: str) -> bool:
    """Whether `text` (a referenced section, row, table) states the expected value."""
    seen = normalize(text)
    lowered = seen.lower()
    for part in parts_of(expected):
        if part.kind == "quantity":
            assert isinstance(part.key, Quantity)
            key = part.key
            found = quantities(seen, literal_spans(seen))
            if not any(key.deviation(x) <= AUTO_ZERO_DEVIATION for x in found):
                return False
        elif not all(w in lowered for w in re.findall(r"[a-z0-9]{2,}", part.text.lower())):
            return False
    return True
