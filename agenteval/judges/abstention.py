"""Turns whose answer is not in the documents: an abstention, and nothing guessed.

An abstention with no asserted or hedged candidate of the kind asked earns 10; an
abstention plus any guess earns 0, and so does an answer without an abstention. Figures
about other things ("it lists 14 cafés", "seat fees are $40") are context, not guesses;
anything hedged ("probably around 200") is a guess. Where other statements might answer
a question code cannot read as a value, the turn is deferred.
"""

from __future__ import annotations

import re

from agenteval.judges import audit, literals
from agenteval.judges.answers import ASKED, HEDGED, NEGATED, REPORTED, Candidate, Context, annotate
from agenteval.judges.commitment import RETRACTION_CUES
from agenteval.judges.correctness import Question, Result, backing_text, context_for, finding
from agenteval.judges.numbers import Quantity, quantities
from agenteval.judges.reading import abstains, english, stem

OFFER = re.compile(r"\b(?:i can|i could|if you|would you|let me know|can confirm|ask)\b", re.I)
VERBS = frozenset(
    """reimburse reimbursed cover covers covered pay pays paid offer offers give gives have
    cost costs charge charges spend guarantee guarantees receive get take last need use
    allow allows require requires approve approved match matches expect expects lose lost
    does says mention mentions state states""".split()
)


ASKED_KIND = (
    (re.compile(r"\bhow many\b", re.I), "count"),
    (re.compile(r"\b(?:when|what date|which date|what year|which year)\b", re.I), "date"),
    (re.compile(r"\b(?:who|whom|which (?:country|person|company))\b", re.I), "name"),
    (re.compile(r"\b(?:how much|how long|how far|how heavy|percentage|percent|share|margin|"
                r"rate|amount|deductible|cost|price|fee|budget|revenue|sla|uptime|salary|"
                r"limit)\b", re.I), "quantity"),
)  # fmt: skip


def asked_kind(question: str) -> str:
    for pattern, kind in ASKED_KIND:
        if pattern.search(question):
            return kind
    return "text"


_COUNT_ADJECTIVES = frozenset("new unused paid full total company-operated sev1".split())


def _asked_noun(question: str) -> str | None:
    m = re.search(r"\bhow many\s+([a-z0-9-]+)(?:\s+([a-z-]+))?", question.lower())
    if not m:
        return None
    word = m.group(1) if m.group(1) not in _COUNT_ADJECTIVES else (m.group(2) or m.group(1))
    return stem(word)


def _guesses(ctx: Context, q: Question, kind: str) -> list[Candidate]:
    text = ctx.text
    ctx.keys = {k for k in ctx.keys if k not in {stem(v) for v in VERBS}}
    counted: set[int] = set()  # counts of another noun: a guess only when hedged and new
    if kind in ("count", "quantity"):
        noun = _asked_noun(q.text)
        cands = []
        for x in quantities(text, literals.spans(text)):
            cands.append(Candidate("quantity", x.start, x.end, text[x.start : x.end], value=x))
            if noun and x.noun and all(stem(w) != noun for w in x.noun.split()):
                counted.add(x.start)
    elif kind == "date":
        cands = [Candidate("date", d.start, d.end, d.text) for d in literals.dates(text)]
    else:
        cands = []
    annotate(ctx, cands)
    live = [c for c in cands if c.stance not in (NEGATED, REPORTED)]
    return [
        c
        for c in live
        if (c.stance == HEDGED or c.level == ASKED)
        and (c.start not in counted or (c.stance == HEDGED and not _documented(ctx, c)))
    ]


def _undocumented_figure(ctx: Context) -> bool:
    text = ctx.text
    figures = quantities(text, literals.spans(text))
    cands = [Candidate("quantity", x.start, x.end, text[x.start : x.end], value=x) for x in figures]
    return (not ctx.lines and bool(cands)) or not all(_documented(ctx, c) for c in cands)


def _documented(ctx: Context, c: Candidate) -> bool:
    """The figure is one the documents (else the evidence) hold: "with about 14 cafés" is
    context; "probably around 300 people", a figure nothing holds, is a guess at the asked
    count in other words. Without documents, every such figure counts as documented."""
    if not ctx.lines or not isinstance(c.value, Quantity):
        return True
    found = c.value
    return any(
        found.deviation(x) == 0
        for line in ctx.lines
        for x in quantities(line, literals.spans(line))
    )


def grade_unknown(q: Question, reply: str) -> Result:
    """Correctness of a turn whose answer is not in the documents."""
    ctx = context_for(reply, q)
    kind = asked_kind(q.text)
    guesses = _guesses(ctx, q, kind)
    refused = abstains(ctx.text)
    if guesses:
        shown = guesses[0].text
        if refused:
            return finding("abstain_guess", f"abstained, then guessed {shown!r}")
        why = f"answered {shown!r} although the answer is not in the documents"
        return finding("abstain_guess", why)
    if not refused and lexicon_abstains(ctx.text):
        # read by the lexicon alone, the reply's other words are not read: a figure no
        # document holds beside it ("keine Zahl, aber rund 180") may be a guess
        if _undocumented_figure(ctx) or _more_than_abstains(ctx.text):
            return Result(None, "abstains, and says more code does not read; cannot tell")
        refused = True
    if not refused:
        if NEGATION.search(ctx.text):
            # a denial code cannot read as an abstention or as an answer: not settled
            return Result(None, "denies something; cannot tell whether it abstains")
        why = "answered although the answer is not in the documents"
        return finding("answered_unknown", why)
    answered = _taken_back(ctx.text)
    if answered is not None:
        return finding("abstain_guess", f"abstained, then took it back for {answered!r}")
    extra = _other_statements(ctx)
    if kind in ("text", "name") and _guessed(ctx.text):
        return finding("abstain_guess", "abstained, then guessed")
    if extra and kind in ("text", "name"):
        return Result(None, "abstained, but other statements may answer; cannot tell")
    unbacked = audit.unbacked(reply, backing_text(q), english(reply))
    if unbacked is not None:
        return Result(None, f"abstained, but {unbacked}; cannot tell it is not a guess")
    return finding("abstained", "correctly said the answer is not in the documents")


# Words after which an abstention no longer stands: the reply answers after all ("Update:
# they do -- the steering group approved $48,000"), besides the retraction cues.
_TAKEN_BACK = re.compile(
    r"\b(?:update[ds]?\s*[:—-]|(?:they|it|the \w+) (?:do|does|did)\s*[—:,;.!-]|turns out|"
    r"in fact)",
    re.I,
)


def _taken_back(text: str) -> str | None:
    """The figure an abstention is taken back for: one after a retraction cue."""
    cues = [*RETRACTION_CUES.finditer(text), *_TAKEN_BACK.finditer(text)]
    for cue in sorted(cues, key=lambda m: m.start()):
        after = text[cue.end() :]
        found = quantities(after, literals.spans(after))
        if found and not abstains(after):
            return after[found[0].start : found[0].end].strip()
    return None


# Words that offer an answer from outside the documents ("most e-bikes come in black").
GUESS_CUES = re.compile(
    r"\b(?:probably|likely|guess|usually|typically|generally|commonly|may be|might be|"
    r"most\s+[\w-]+\s+(?:come|are|have|use|run|offer)|tend\s+to|i'?d\s+(?:assume|expect))\b",
    re.I,
)


def _guessed(text: str) -> bool:
    """A sentence (or a clause after a semicolon) that neither abstains nor offers help
    and gives an answer in a guessing word, whatever it talks about."""
    parts = re.split(r"(?<=[.!?;])\s+", text)
    return any(GUESS_CUES.search(p) and not abstains(p) and not OFFER.search(p) for p in parts if p)


def _other_statements(ctx: Context) -> list[str]:
    """Sentences that neither abstain nor offer help but touch the asked subject."""
    found = []
    for sentence in re.split(r"(?<=[.!?;])\s+", ctx.text):
        if not sentence.strip() or abstains(sentence) or OFFER.search(sentence):
            continue
        words = {stem(w) for w in re.findall(r"[a-z]+", sentence.lower()) if len(w) > 3}
        if words & ctx.keys:
            found.append(sentence)
    return found


# -- the abstention lexicon: a negation beside a word of saying, in any of these languages --
# "keine Angabe", "ne mentionne aucun", "no indica", "zegt niets", "never appears", "zero
# information": what counts is the structure (the documents deny saying it), not a phrase.
NEGATION = re.compile(
    r"\b(?:no|not|never|none|nothing|zero|nowhere|neither|nor|without|kein\w*|nicht|nie|"
    r"niemals|nichts|nirgends|nirgendwo|aucun\w*|rien|jamais|ne|n'|pas|nulle\w*|ningun\w*|"
    r"ningún|nada|nunca|non|nessun\w*|niente|nulla|mai|geen|niet|niets|nergens|nooit|não|"
    r"nenhum\w*)\b|n't\b|\bn'",
    re.I,
)
SAYING = re.compile(
    r"\b(?:say|says|said|stat\w*|mention\w*|specif\w*|giv\w*|list\w*|provid\w*|includ\w*|"
    r"cover\w*|report\w*|contain\w*|disclos\w*|show\w*|record\w*|appear\w*|track\w*|"
    r"detail\w*|info\w*|figures?|numbers?|data|quot\w*|publish\w*|document\w*|note\w*|"
    r"address\w*|discuss\w*|angabe\w*|nenn\w*|erwähn\w*|enthält|enthalten|steht|findet|"
    r"auskunft|zahl\w*|sagt|mentionn\w*|indiqu\w*|précis\w*|contient|donn\w*|chiffre\w*|"
    r"dit|parl\w*|indic\w*|mencion\w*|dice|contien\w*|dato\w*|cifra\w*|especific\w*|"
    r"menzion\w*|riport\w*|zegt|vermeld\w*|noem\w*|staat|bevat|gegevens|meld\w*)\b",
    re.I,
)
# A negation and a word of saying this close (in words) in one sentence make an abstention.
NEAR_WORDS = 6


def lexicon_abstains(text: str) -> bool:
    """A sentence in which a negation stands within a few words of a word of saying."""
    for sentence in re.split(r"(?<=[.!?;])\s+", text):
        words = re.findall(r"[^\W\d_]+(?:'\w+)?|n't", sentence)
        negated = [i for i, w in enumerate(words) if NEGATION.fullmatch(w) or w.endswith("n't")]
        saying = [i for i, w in enumerate(words) if SAYING.fullmatch(w)]
        if any(abs(i - j) <= NEAR_WORDS for i in negated for j in saying):
            return True
    return False


# Words that turn from an abstention to something else, and words of guessing, in the
# lexicon's languages: after them the reply may answer anyway ("keine Farben, vermutlich
# aber Schwarz").
_TURN = re.compile(
    r"\b(?:but|however|though|aber|jedoch|doch|mais|cependant|pero|sin embargo|maar|ma|però|"
    r"mas|porém)\b",
    re.I,
)
_GUESSING = re.compile(
    r"\b(?:vermutlich|wahrscheinlich|wohl|vielleicht|probablement|sans doute|peut-être|"
    r"probablemente|quizás|quizá|seguramente|waarschijnlijk|misschien|vermoedelijk|"
    r"probabilmente|forse|provavelmente|talvez)\b",
    re.I,
)


def _more_than_abstains(text: str) -> bool:
    """A guessing word, or a turn after which the reply stops abstaining."""
    if _GUESSING.search(text) or GUESS_CUES.search(text):
        return True
    after = _TURN.split(text)[1:]
    return any(part.strip(" .,;") and not lexicon_abstains(part) for part in after)
