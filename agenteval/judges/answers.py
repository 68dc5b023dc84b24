"""What a reply commits to: candidate answers of the kind asked, each with its stance.

A candidate is a value in the reply of the kind the ground truth asks for (a quantity, a
date, a time, a year, an identifier, a version, a name) with
- its stance: asserted, hedged ("probably around 40"), negated ("not 23%"), or reported
  (quoting an instruction the agent refused to follow);
- its level: about the asked entity, `other` when the clause ties it to another entity
  ("Lyon: 12 stores", "down from 43% a year earlier", "the Osprey weighs 27.4 kg"), or
  `weak` when the clause only talks about other things without naming them;
- its group: candidates offered as alternatives ("$12M, $14M or $16M", "either A or B").
The decisions built on these live in `judges.correctness`.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from agenteval.judges.numbers import Quantity
from agenteval.judges.reading import (
    COMMON_CAPITALISED,
    Clause,
    clause_at,
    entity_marks,
    foreign,
    keywords,
    proper_words,
    sentence_bounds,
    stem,
)

ASSERTED, HEDGED, NEGATED, REPORTED = "asserted", "hedged", "negated", "reported"
ASKED, WEAK, OTHER = "asked", "weak", "other"

NEGATORS = re.compile(
    r"\b(?:not|never|no longer|rather than|instead of|as opposed to|other than|unlike)\b"
    r"|n't\b",
    re.I,
)
HEDGES = re.compile(
    r"\b(?:probably|likely|maybe|perhaps|possibly|presumably|around|about|roughly|"
    r"approximately|approx|something like|in the region of|i think|i believe|i'd guess|"
    r"i guess|my guess|my estimate|estimate[sd]?|could be|might be|may be|would be|"
    r"typically|usually|generally|normally|i'd say|guess|assume|suspect)\b|~",
    re.I,
)
REPORTED_CUES = re.compile(
    r"\b(?:ignored|ignore|disregard(?:ed)?|instruction|instructions|note telling|"
    r"told (?:me|assistants)|telling assistants|asks? assistants|tells? assistants)\b",
    re.I,
)
# Words that tie the figure after them to something other than the asked entity.
BEFORE_OTHER = re.compile(
    r"\b(?:down from|up from|compared with|compared to|versus|vs\.?|against|previously|"
    r"prior(?:[ -]year| quarter| period)|other|for comparison|by comparison|unlike|"
    r"after that|old|of the|out of|"
    r"given the|like|such as|besides|beyond|next to|default|closest|plus|minus|i\.e\.|"
    r"which is|that is)\b|\+",
    re.I,
)
# ...and words right after a figure that do the same.
AFTER_OTHER = re.compile(
    r"^\W*(?:\w+\W+){0,3}?(?:a year earlier|a year ago|last year|the year before|"
    r"previously|everywhere else|elsewhere|in other|before that|in total|nearby)\b",
    re.I,
)
# "38 (possibly 44)": a hedge in brackets joins two values as much as a comma does
_LIST_GAP = re.compile(r"^[\s,(]*(?:(?:or|and|/)\s*)?(?:maybe|possibly|perhaps|even)?[\s,]*$", re.I)
_WORDS = re.compile(r"[A-Za-z\u00c0-\u024f][\w'-]*")
_NOUN_MARKERS = frozenset({"default", "closest"})
_LETTERS = re.compile(r"[A-Za-z\u00c0-\u024f]+")
NEAR_BEFORE, NEAR_AFTER = 50, 30  # characters within which a name labels a figure
WINDOW_BEFORE, WINDOW_AFTER = 6, 4  # words around a figure that say what it is about


@dataclass
class Candidate:
    kind: str
    start: int
    end: int
    text: str
    matches: bool = False
    grade: float = 0.0  # the correctness it earns if it is the committed answer
    stance: str = ASSERTED
    level: str = ASKED
    group: int | None = None
    note: str = ""
    value: object = None  # what it says, comparable with another of its kind (`same_value`)


@dataclass
class Context:
    """What the asked entity is called: the question(s) and the expected answer."""

    text: str  # the normalised reply
    clauses: list[Clause]
    asked: set[str]  # lowercased words and marks the question and answer use
    keys: set[str] = field(default_factory=set)  # stems of the question's content words
    question: str = ""
    proper: set[str] = field(default_factory=set)  # words seen capitalised mid-sentence
    lines: list[str] = field(default_factory=list)  # the evidence, line by line (lowercased)
    named: frozenset[str] = frozenset()  # words the documents (else evidence) capitalise
    known: bool = False  # only words known capitalised elsewhere are names (another language)


def _tokens_before(text: str, start: int, floor: int) -> list[str]:
    return _WORDS.findall(text[floor:start])


def stance(ctx: Context, c: Candidate) -> str:
    clause = clause_at(ctx.clauses, c.start, c.end)
    text = ctx.text
    before = text[clause.start : c.start]
    if REPORTED_CUES.search(text[clause.start : clause.end]):
        return REPORTED
    near = " ".join(_tokens_before(text, c.start, clause.start)[-4:])
    if NEGATORS.search(near) or re.search(r"n't\s+(?:\w+\s+)?$", before):
        return NEGATED
    if c.kind in ("name", "text") and re.match(
        r"^\s*(?:is|was|are|were)(?:\s+not|n't)\b", text[c.end : clause.end], re.I
    ):
        return NEGATED
    sentence = text[sentence_bounds(text, c.start)[0] : c.start]
    if HEDGES.search(" ".join(_tokens_before(text, c.start, clause.start)[-5:])) or re.search(
        r"\b(?:i'd guess|my guess|my estimate|probably|likely)\b", sentence, re.I
    ):
        return HEDGED
    return ASSERTED


# "the $48,000 request was deferred", "PostgreSQL 16 was rejected": what the clause says
# was called off is not plainly the reply's answer (unless the question asks what was called
# off); it may still be the asked figure of a thing that was (the request's amount).
_CALLED_OFF = re.compile(
    r"^\W*(?:[\w-]+\s+){0,3}?(?:was|were|is|are|has been|have been|had been|got|gets)\s+"
    r"(?:(?!not\b|never\b|no\b)[\w-]+\s+){0,3}?(?P<verb>deferred|dropped|"
    r"rejected|withdrawn|cancell?ed|declined|denied|scrapped|waived|removed|postponed|"
    r"abandoned|shelved|ruled out|turned down|struck|retracted|superseded|reversed)\b",
    re.I,
)


def called_off(ctx: Context, c: Candidate) -> bool:
    # to the sentence's end: "Deepa was asked | but declined" runs on past its clause
    m = _CALLED_OFF.match(ctx.text[c.end : sentence_bounds(ctx.text, c.start)[1]])
    if m is None:
        return False
    return not any(stem(w) in ctx.keys for w in m["verb"].lower().split())


def level(ctx: Context, c: Candidate, others: list[Candidate]) -> str:
    """Whether the candidate is about the asked entity, another one, or something else."""
    clause = clause_at(ctx.clauses, c.start, c.end)
    text = ctx.text
    before_words = _tokens_before(text, c.start, clause.start)[-5:]
    for marker in BEFORE_OTHER.finditer(" ".join(before_words)):
        word = marker.group(0).lower()
        if word in _NOUN_MARKERS and word in ctx.asked:  # "default" asked about is the answer
            continue
        return OTHER
    if AFTER_OTHER.search(text[c.end : clause.end]):
        return OTHER
    spans = [(o.start, o.end) for o in others if o is not c]
    marks = [
        (pos, mark)
        for pos, mark in entity_marks(
            text[clause.start : clause.end], clause.start, ctx.proper, ctx.known
        )
        if not c.start <= pos < c.end and not any(s <= pos < e for s, e in spans)
    ]
    # A figure belongs to the name nearest it ("the Heron weighs 23.6 kg"); an identifier or
    # a name is an entity itself, so the names around it are its context, not its owner.
    nearest = _nearest(marks, c) if c.kind not in ("id", "name", "version") else None
    if nearest is not None:
        return ASKED if nearest in ctx.asked else OTHER
    window = _window(text, c, clause)
    content = [w for w in window if len(w) > 3]
    hits = [w for w in content if stem(w) in ctx.keys]
    novel = [w for w in content if stem(w) not in ctx.keys and w.lower() not in ctx.asked]
    novel = [w for w in novel if w.lower() not in _PLAIN_WORDS]
    if novel and not hits:
        return WEAK
    return ASKED


_PLAIN_WORDS = frozenset(
    """that this with from into were have been also only just then than they them there
    here what when which while where about after before under over each every both some
    other same such much many more most less least very really quite around roughly
    approximately exactly total totals whole full flat every says said shows show stated
    states gives given reports reported according listed lists line item value figure
    amount number note needs need must will would could should does done make made came""".split()
)


HITS_BEFORE, HITS_AFTER = 160, 60  # characters around a value that say what it answers


def hits(ctx: Context, c: Candidate, others: list[Candidate]) -> tuple[int, int]:
    """How many of the question's words surround the value, in its clause and then in the
    text around it: the value that names more of what was asked is the answer, the others
    are about something else ("a frame warranty of 5 years and 2 years on the battery")."""

    def count(text: str) -> int:
        words = {stem(w) for w in _LETTERS.findall(text.lower()) if len(w) > 3}
        return len(words & ctx.keys)

    clause = clause_at(ctx.clauses, c.start, c.end)
    # The clause runs on into the clauses after it up to the next value of the same kind
    # or the sentence's end ("2 years on the battery | and motor").
    later = [o.start for o in others if o.start >= clause.end]
    end = min([sentence_bounds(ctx.text, c.start)[1], *later])
    own = ctx.text[clause.start : max(clause.end, end)]
    before = ctx.text[max(0, c.start - HITS_BEFORE) : c.start]
    after = ctx.text[c.end : c.end + HITS_AFTER]
    return count(own), count(f"{before} {after}")


def _window(text: str, c: Candidate, clause: Clause) -> list[str]:
    before = _LETTERS.findall(text[clause.start : c.start])[-WINDOW_BEFORE:]
    after = _LETTERS.findall(text[c.end : clause.end])[:WINDOW_AFTER]
    return before + after


def _nearest(marks: list[tuple[int, str]], c: Candidate) -> str | None:
    best, best_distance = None, None
    for pos, mark in marks:
        far_before = pos < c.start and c.start - pos > NEAR_BEFORE
        far_after = pos >= c.end and pos - c.end > NEAR_AFTER
        if far_before or far_after:
            continue
        distance = (c.start - pos) if pos < c.start else 1.5 * (pos - c.end)
        if best_distance is None or distance < best_distance:
            best, best_distance = mark, distance
    return best


def group_alternatives(ctx: Context, cands: list[Candidate]) -> None:
    """Mark candidates joined as alternatives or bare lists within one sentence."""
    ordered = sorted(cands, key=lambda c: c.start)
    next_group = 0
    for a, b in itertools.pairwise(ordered):
        gap = ctx.text[a.end : b.start]
        same_sentence = sentence_bounds(ctx.text, a.start) == sentence_bounds(ctx.text, b.start)
        if not same_sentence or not _LIST_GAP.match(gap) or a.end > b.start:
            continue
        if a.group is None:
            a.group, next_group = next_group, next_group + 1
        b.group = a.group


def alternatives(ctx: Context, cands: list[Candidate]) -> list[list[Candidate]]:
    """Groups that hold the expected value beside a different one: no commitment. Values
    joined by "or" or "/" always are; a bare list ("$6,300, $9,800 and $19,200") is when
    it has three or more values; names joined by commas are appositions, not lists."""
    groups: dict[int, list[Candidate]] = {}
    for c in cands:
        if c.group is not None and c.stance not in (NEGATED, REPORTED):
            groups.setdefault(c.group, []).append(c)
    found = []
    for g in groups.values():
        if not (any(c.matches for c in g) and any(not c.matches for c in g)):
            continue
        gaps = [ctx.text[a.end : b.start] for a, b in itertools.pairwise(g)]
        either = re.search(r"\beither\s*$", ctx.text[max(0, g[0].start - 12) : g[0].start])
        # "58%, possibly 31%": a value offered as a maybe beside another is an alternative
        disjunctive = either or any(
            re.search(r"\bor\b|/|\b(?:maybe|possibly|perhaps)\b", gap) for gap in gaps
        )
        if disjunctive or (len(g) >= 3 and g[0].kind != "name"):
            found.append(g)
    return found


def annotate(ctx: Context, cands: list[Candidate]) -> list[Candidate]:
    for c in cands:
        c.stance = stance(ctx, c)
        c.level = level(ctx, c, cands)
    group_alternatives(ctx, cands)
    chosen_options(ctx, cands)
    return cands


# Words that present a list as the options to choose from, not as the reply's answers.
_OPTIONS_CUE = re.compile(
    r"\b(?:choices?|options?|candidates?|possibilities|usual|typical|common|standard)\b"
    r"|\([a-e]\)|^\s*[a-e]\)",
    re.I,
)


def chosen_options(ctx: Context, cands: list[Candidate]) -> None:
    """A list presented as the options ("of the usual choices (1, 3 or 5)") and then one
    value asserted on its own ("the client uses 3 retries"): the listed values are reported,
    not offered; the reply commits to the one it chose. Without a cue that the list is the
    options, or with a later value that differs, the list stays alternatives."""
    groups: dict[int, list[Candidate]] = {}
    for c in cands:
        if c.group is not None:
            groups.setdefault(c.group, []).append(c)
    for group in groups.values():
        first, last = group[0], group[-1]
        asks = ctx.text[last.end : sentence_bounds(ctx.text, last.end)[1] + 1].endswith("?")
        if not asks and not _OPTIONS_CUE.search(ctx.text[max(0, first.start - 40) : first.start]):
            continue  # neither asked as a question ("Is it 14, 30 or 45 days?") nor options
        later = [c for c in cands if c.group is None and c.start >= last.end]
        later = [c for c in later if c.stance == ASSERTED and c.level != OTHER]
        picked = [c for c in later if any(same_value(c, g) for g in group)]
        if picked and len({str(c.value) for c in picked}) == 1 and len(picked) == len(later):
            for c in group:
                c.stance = REPORTED
    _lettered_choice(ctx, cands)


_LETTERED = re.compile(r"(?:^|[\s(])\(?([a-e])\)\s*$", re.I)
_LETTER_PICK = re.compile(
    r"\b(?:answer|option|choice|pick|it'?s|correct(?: one)?|so)(?:\s+is)?\W{0,3}"
    r"\(?([a-e])\)?(?![\w(])"
    r"|^\W*\(([a-e])\)\W*$",
    re.I | re.M,
)


def _lettered_choice(ctx: Context, cands: list[Candidate]) -> None:
    """Options labelled by letters ("(a) 1 year (b) 2 years (c) 3 years") and then a letter
    picked after them ("Answer: (b)"): the picked option is the reply's answer, the others
    are reported. No pick, or a letter no option has: nothing changes."""
    labelled = {}
    for c in cands:
        m = _LETTERED.search(ctx.text[max(0, c.start - 6) : c.start])
        if m:
            labelled[m.group(1).lower()] = c
    if len(labelled) < 2:
        return
    last = max(c.end for c in labelled.values())
    picks = [m.group(1) or m.group(2) for m in _LETTER_PICK.finditer(ctx.text, last)]
    if len({p.lower() for p in picks}) != 1 or picks[0].lower() not in labelled:
        return
    for letter, c in labelled.items():
        c.stance = ASSERTED if letter == picks[0].lower() else REPORTED
        c.group = None


def make_context(
    reply: str, clauses_: list[Clause], asked: set[str], question: str, evidence: str = ""
) -> Context:
    other_language = foreign(reply)
    # a reply in another language: its own capitals say nothing of names
    said = (question, evidence) if other_language else (reply, question, evidence)
    proper = proper_words(*said) | asked
    return Context(reply, clauses_, asked, keywords(question), question, proper,
                   known=other_language)  # fmt: skip


# -- corrections and retractions ---------------------------------------------------------
CORRECTION = re.compile(
    r"\b(?:actually|correction|i mean|or rather|sorry|wait|on second thought|let me correct|"
    r"scratch that|make that|re-?(?:add|check|count|calculat|read|tot)\w*)\b",
    re.I,
)
# The reply takes back what it said, and says nothing in its place.
RETRACTION = re.compile(
    r"\b(?:on second thought|scratch that|i take (?:that|it) back|(?:disregard|ignore|forget) "
    r"(?:that|this|the above|what i said|my (?:answer|last))|i'?m not (?:sure|certain) after all"
    r"|i (?:was|may be|might be) wrong)\b",
    re.I,
)
SAME_VALUE_DEVIATION = 0.005  # two readings of one value differ by rounding, not more


def same_value(a: Candidate, b: Candidate) -> bool:
    if isinstance(a.value, Quantity) and isinstance(b.value, Quantity):
        return a.value.deviation(b.value) <= SAME_VALUE_DEVIATION
    if isinstance(a.value, frozenset) and isinstance(b.value, frozenset):
        return a.value <= b.value or b.value <= a.value  # "Deepa" after "Deepa Venkataraman"
    return a.value == b.value


def corrected(ctx: Context, live: list[Candidate]) -> tuple[Candidate, Candidate] | None:
    """A value the reply commits to, then "actually" / "I mean" / "correction" / "re-adding"
    another one: both are committed, and they differ (the first that does, with the later).
    A guess that misses ("my first guess would be around $5,000") followed by a stated
    value is two values offered too."""
    ordered = sorted(live, key=lambda c: c.start)
    for i, later in enumerate(ordered):
        if later.level == OTHER:
            continue
        start, _ = sentence_bounds(ctx.text, later.start)
        for earlier in ordered[:i]:
            if earlier.level == OTHER or same_value(earlier, later):
                continue
            between = ctx.text[max(earlier.end, start) : later.start]
            guessed = earlier.stance == HEDGED and not earlier.matches
            if CORRECTION.search(between) or (guessed and later.stance == ASSERTED):
                return earlier, later
    return None


# Cues that put a new value in the place of the one before: unlike a re-check ("I re-added
# the rows and ..."), what follows them is the reply's answer.
REPLACEMENT = re.compile(
    r"\b(?:i mean|actually|correction|or rather|make that|sorry|wait|scratch that|"
    r"let me correct(?: that)?|on second thought)\b",
    re.I,
)
_NAMED_VALUE = re.compile(r"\b[A-Z][\w.+#-]*(?:\s+\d+(?:\.\d+)*)?")


def replaced(ctx: Context, said: list[tuple[int, int]]) -> str | None:
    """The value a correction puts in place of the expected one when it is of another kind
    than the candidates of the asked part ("PostgreSQL 16 — I mean MySQL 8": a product, not a
    version of PostgreSQL): a replacement cue after the stated value whose own sentence names
    something the question and answer do not, and never restates the value. None otherwise."""
    for cue in REPLACEMENT.finditer(ctx.text):
        if not any(end <= cue.start() for _, end in said):
            continue
        _, stop = sentence_bounds(ctx.text, cue.end())
        bare = _DENIAL.match(ctx.text, cue.end(), stop)
        if bare and not ctx.text[bare.end() : stop].strip(" .!,;:\u2014\u2013-"):
            _, stop = sentence_bounds(
                ctx.text, min(stop + 1, len(ctx.text))
            )  # "Wait, no." + answer
        if any(cue.end() <= start < stop for start, _ in said):
            continue  # "... actually, it is indeed 38": the value restated
        for m in _NAMED_VALUE.finditer(ctx.text, cue.end(), stop):
            words = [w.lower() for w in re.findall(r"[A-Za-z]+", m.group(0))]
            if words and not any(w in COMMON_CAPITALISED or w in ctx.asked for w in words):
                return m.group(0)
        denial = _DENIAL.match(ctx.text, cue.end(), stop)
        if denial and _new_words(ctx, ctx.text[denial.end() : stop]):
            return ctx.text[denial.end() : stop].strip()
    return None


# "Actually no, it was ...": the cue denies what came before, whatever follows it.
# A bare "no" ("Actually no, ..."), never the start of "no doubt".
_DENIAL = re.compile(
    r"[\s,:;—–-]*(?:(?:no|nope)(?=\s*[,.;:!—–-]|\s*$)|that's wrong|that is wrong|wrong)\b"
    r"[\s,:;—–-]*",
    re.I,
)


def _new_words(ctx: Context, text: str) -> bool:
    words = [w for w in re.findall(r"[a-z][a-z-]{3,}", text.lower()) if w not in COMMON_CAPITALISED]
    return any(w not in ctx.asked and stem(w) not in ctx.keys for w in words)


def other_entity(ctx: Context, c: Candidate, question: str) -> bool:
    """The value is said of an entity the reply names in its clause ("The Sparrow costs
    $2,690"), not through a comparison word, and the reply never names the asked one."""
    clause = clause_at(ctx.clauses, c.start, c.end)
    before = " ".join(_tokens_before(ctx.text, c.start, clause.start)[-5:])
    if BEFORE_OTHER.search(before) or AFTER_OTHER.search(ctx.text[c.end : clause.end]):
        return False
    asked = {m for _, m in entity_marks(question)}
    named = {m for _, m in entity_marks(ctx.text, 0, ctx.proper, ctx.known)}
    near = {
        m
        for pos, m in entity_marks(
            ctx.text[clause.start : clause.end], clause.start, ctx.proper, ctx.known
        )
        if not c.start <= pos < c.end  # a name is not its own other entity
    }
    return bool(asked) and not asked & named and bool(near - asked)


def retracted(ctx: Context, live: list[Candidate]) -> bool:
    """The last retraction in the reply comes after every value it stated."""
    found = list(RETRACTION.finditer(ctx.text))
    if not found or not live:
        return False
    return all(c.end <= found[-1].start() for c in live)
