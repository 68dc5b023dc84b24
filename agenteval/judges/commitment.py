"""The value a reply ends on when it corrects itself: the last commitment wins.

A reply that gives one value and then retracts it for another ("$185 a night. I misspoke:
the cap is $210", "First pass I got $198,690 ... Correction: $199,690") is judged on the
value it ends on, when the cue between them clearly takes the earlier one back. What the
reply says after its last retraction cue is its final commitment:
- every value there is the expected one (to rounding): the correction lands right;
- a value there names something else than the expected one, about the asked thing, and none
  is right: the correction lands wrong;
- anything else (right and wrong values both after the cue, only values about other things,
  a right value that is only close where the earlier one was exact): code cannot tell what
  the reply commits to, and the caller defers.
The lexicon of retraction cues is here and nowhere else (`answers.corrected` reads it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agenteval.judges.answers import (
    ASKED,
    NEGATED,
    OTHER,
    REPORTED,
    Candidate,
    Context,
    corrected,
    retracted,
)
from agenteval.judges.numbers import Quantity, compatible
from agenteval.judges.reading import sentence_bounds

# Words that take back what came before them. Plain verbs of re-checking ("re-adding")
# count: what follows them is the reply's new answer. "Actually" is weak alone, but a
# restatement of the same value after it settles the same way, and a different one is the
# correction it announces.
RETRACTION_CUES = re.compile(
    r"\b(?:i mean|i meant|actually|correction|corrected|or rather|make that|sorry|wait|"
    r"scratch (?:that|my|the)|let me (?:correct|fix|amend|rephrase|redo)|fix(?:ing)? that|"
    r"on second thought|misspoke|mis-?typed|typo|my (?:mistake|bad|error)|"
    r"(?:that|this|it)(?:'s| is| was) (?:wrong|incorrect|a mistake|an error|not right)|"
    r"i was wrong|i got (?:that|it) wrong|should (?:read|be|have said)|edit|erratum|"
    r"having (?:re-?)?checked|(?:checked|checking|looked|looking|reading) (?:\w+ ){0,4}again|"
    r"on (?:a )?closer (?:look|reading|inspection)|re-?(?:add|check|count|calculat|read|tot)\w*|"
    r"first (?:pass|instinct|guess|attempt|reading)|i first (?:wrote|said|gave|put)|"
    r"(?:was|is) a slip|slipped|dropped a|i stand corrected|on (?:further )?reflection|"
    r"revised|revision|amended|strike (?:that|this)|"
    # asides that introduce a second answer: "Second thoughts —", "On second look", "Hmm,
    # counting X as well", "P.S.", "Final answer:" ("Update:" is not one: a reply that
    # updates a value commits to both, unit-tested in unseen_kinds.yaml)
    r"(?:on )?second (?:thoughts?|look|glance|reading)|then again|hmm+|p\.\s?s|"
    r"final answer|counting (?:\w+ ){1,4}(?:as well|too))\b",
    re.I,
)
# The right value, reached after a correction, counts only when it is the expected one to
# rounding: a total re-added to 0.75% off an exact one is the wrong total.
EXACT_AFTER_CORRECTION = 0.005


@dataclass(frozen=True)
class Settled:
    """What a self-correcting reply ends on."""

    outcome: str  # "right" | "wrong" | "unclear"
    earlier: Candidate
    final: list[Candidate]


def _committed(live: list[Candidate]) -> list[Candidate]:
    return sorted(
        (c for c in live if c.level != OTHER and c.stance not in (NEGATED, REPORTED)),
        key=lambda c: c.start,
    )


def _differ(a: Candidate, b: Candidate) -> bool:
    if isinstance(a.value, Quantity) and isinstance(b.value, Quantity):
        return a.value.deviation(b.value) > EXACT_AFTER_CORRECTION
    if isinstance(a.value, frozenset) and isinstance(b.value, frozenset):
        return not (a.value <= b.value or b.value <= a.value)
    return a.value != b.value


def last_retraction(ctx: Context, live: list[Candidate]) -> tuple[Candidate, re.Match[str]] | None:
    """(the value taken back, the cue that takes it back): the last cue that stands after
    one committed value and before a different one. None: no correction."""
    committed = _committed(live)
    found = None
    for cue in RETRACTION_CUES.finditer(ctx.text):
        before = [c for c in committed if c.end <= cue.start()]
        after = [c for c in committed if c.start >= cue.start()]
        if before and after and any(_differ(b, a) for b in before for a in after):
            found = (before[-1], cue)
    return found


def _same_kind(a: Candidate, b: Candidate) -> bool:
    """A value that can stand in another's place: a figure of the same unit and rate, or a
    value of the same literal kind."""
    if isinstance(a.value, Quantity) and isinstance(b.value, Quantity):
        return compatible(a.value, b.value) and a.value.per == b.value.per
    return a.kind == b.kind


def settle(ctx: Context, live: list[Candidate], expected: Quantity | None) -> Settled | None:
    """What the reply ends on after its last retraction, or None when it never corrects
    itself between two different values."""
    retraction = last_retraction(ctx, live)
    if retraction is None:
        return None
    earlier, cue = retraction
    final = [c for c in _committed(live) if c.start >= cue.start()]
    right = [c for c in final if c.matches]
    # After a cue that can only retract ("I mean", "correction", "re-adding"), a value that
    # can stand in the earlier one's place replaces it, whatever else its clause names;
    # after a bare "actually" only one said of the asked thing does.
    strong = cue.group(0).lower() != "actually"
    wrong = [
        c
        for c in final
        if not c.matches and (c.level == ASKED or (strong and _same_kind(c, earlier)))
    ]
    aside = [c for c in final if not c.matches and c not in wrong]
    # "Deepa — sorry, I mean Marcus Obi. Deepa circulated the results": what the cue puts in
    # place is the value of its own sentence; a later mention is another statement
    cue_end = sentence_bounds(ctx.text, cue.start())[1]
    own = _first_in_cue_sentence(final, cue_end)
    if wrong and (not right or (own in wrong and all(c.start >= cue_end for c in right))):
        return Settled("wrong", earlier, wrong)
    if right and not wrong and not aside:
        if expected is not None and not _exact(right, expected):
            # close, not exact, after a correction: wrong when what it replaced was exact
            outcome = "wrong" if earlier.matches and _exact([earlier], expected) else "unclear"
            return Settled(outcome, earlier, right)
        return Settled("right", earlier, right)
    return Settled("unclear", earlier, final)


def _first_in_cue_sentence(final: list[Candidate], end: int) -> Candidate | None:
    inside = [c for c in final if c.start < end]
    return inside[0] if inside else None


def _exact(cands: list[Candidate], expected: Quantity) -> bool:
    return all(
        isinstance(c.value, Quantity) and expected.deviation(c.value) <= EXACT_AFTER_CORRECTION
        for c in cands
    )


def ends_elsewhere(ctx: Context, live: list[Candidate]) -> Candidate | None:
    """The reply's last value when it is not the expected one but could stand in its place,
    in a sentence after the last right one, after a word that concludes on it ("14
    company-operated cafés ... With the three franchised ones that makes 17"): the last word
    is another answer, with no cue code knows, so the reply commits to two. A value tied to
    another entity counts only right after the concluding word ("INC-2298 belongs with them,
    so 3"). None when it ends on the expected value."""
    said = sorted((c for c in live if c.stance not in (NEGATED, REPORTED)), key=lambda c: c.start)
    right = [c for c in said if c.matches and c.level != OTHER]
    if not right or said[-1].matches:
        return None
    last = said[-1]
    after = sentence_bounds(ctx.text, right[-1].start)[1]
    if last.start < after or not any(_stands_for(last, c) for c in right):
        return None
    opening = sentence_bounds(ctx.text, last.start)[0]
    if last.level == OTHER:
        opening = max(opening, last.start - 16)
    return last if _CONCLUDES.search(ctx.text[opening : last.start]) else None


def _stands_for(late: Candidate, right: Candidate) -> bool:
    """A bare figure can stand for a count ("so 3" after "2 SEV1 incidents")."""
    bare = isinstance(late.value, Quantity) and late.value.kind == "plain"
    if bare and isinstance(right.value, Quantity) and right.value.kind == "count":
        return True
    return _same_kind(late, right)


# Words that conclude on a figure: "that makes 17", "so 3", "comes to", "in all". A later
# sentence ending on another value after them is a second answer, not a neighbouring fact.
_CONCLUDES = re.compile(
    r"\b(?:makes?|made|comes? to|came to|brings? (?:it|the \w+|that) to|so|thus|hence|"
    r"therefore|in (?:all|total)|altogether|all told|totals?|totalling|totaling|sums? to|"
    r"adds? up to|(?:the |my )?(?:final |real )?answer(?: is)?|that(?:'s| is| gives))\b|=",
    re.I,
)


def taken_back(ctx: Context, live: list[Candidate], what: str) -> tuple[str | None, str] | None:
    """(the finding's rule, or None to defer; the reason) for a reply that takes its value
    back without a settled correction: corrected in its own clause, retracted, or ending on
    another value after a concluding word. None: it does not."""
    changed = corrected(ctx, live)
    if changed is not None:
        first, then = changed
        return "corrected", f"commits to {first.text!r}, then corrects it to {then.text!r}"
    if retracted(ctx, live):
        return "retracted", f"states a value for {what}, then takes it back"
    late = ends_elsewhere(ctx, live)
    if late is not None:
        return None, f"states {what}, then ends on {late.text!r}; cannot tell which it means"
    return None
