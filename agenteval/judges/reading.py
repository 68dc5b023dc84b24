"""Reading a reply the way a careful grader does: clauses, entities, and stance cues.

Pure text functions used by the answer extraction (`judges.answers`): number words become
digits (text2num), periods are written one way ("second quarter" -> "Q2", "fiscal 2026" ->
"FY2026"), and a reply is cut into clauses so that a figure can be tied to the entity it is
about. Word lists here are cues, not grammar: where they are not enough, callers defer.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from agenteval.judges import layout, written

# -- normalisation ------------------------------------------------------------------------
# Words text2num would turn into digits although they are not numbers here: magnitudes
# (kept for the quantity reader) and "second" (a unit far more often than an ordinal).
_PROTECTED = re.compile(r"\b(seconds?)\b", re.I)
# text2num writes "8.6 million" as "8.6 1000000"; the quantity reader wants the word back.
_SPELLED_MAGNITUDE = re.compile(r"(\d)\s(1000|1000000|1000000000)\b")
_MAGNITUDE_WORD = {"1000": "thousand", "1000000": "million", "1000000000": "billion"}
_ONE_UNIT = re.compile(r"\b(one|a single)\s+(hour|minute|second|day|week|month|year)\b", re.I)
_ORDINAL_PERIOD = re.compile(r"\b(1st|2nd|3rd|4th)[\s-]+quarter\b", re.I)
_QUARTER_WORD = re.compile(r"\b(first|second|third|fourth)[\s-]+quarter\b", re.I)
_HALF = re.compile(r"\b(1st|2nd|first|second)[\s-]+half\b", re.I)
_FISCAL = re.compile(r"\bfiscal(?:\s+year)?\s+(\d{4})\b", re.I)
_FY = re.compile(r"\bFY\s?(\d{2,4})\b", re.I)
# Footnote marks ("[^1]", "[^note]:", "¹", "†") point at a note; they are no figure.
_FOOTNOTE_MARK = re.compile(r"\[\^[^\]\s]{1,12}\]:?|[¹²³⁴⁵⁶⁷⁸⁹†‡]")
_DASHES = str.maketrans({"\u2212": "-", "\u2011": "-", **dict.fromkeys(written.SPACES, " ")})


@functools.cache
def _alpha2digit() -> object:
    from text_to_num import alpha2digit  # lazy: only judging needs it

    return alpha2digit


_IDIOMS = (
    (re.compile(r"\b(?:an|one) (hour|day|week|month|year) and a half\b", re.I), r"1.5 \1s"),
    (re.compile(r"\bhalf an? (hour|day)\b", re.I), r"0.5 \1"),
    (re.compile(r"\ba dozen\b", re.I), "12"),
    (re.compile(r"\bhalf an? (thousand|million|billion)\b", re.I), r"0.5 \1"),
    (re.compile(r"\ba quarter of an? (thousand|million|billion)\b", re.I), r"0.25 \1"),
    (re.compile(r"\btwice\b", re.I), "2 times"),
)


# -- years said aloud, durations and clock times written as codes ------------------------
_UNITS_WORDS = "one two three four five six seven eight nine".split()
_TEENS = "ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split()
_TENS_WORDS = "twenty thirty forty fifty sixty seventy eighty ninety".split()
_TWO_DIGITS = {
    **{w: 10 + i for i, w in enumerate(_TEENS)},
    **{tens: 20 + 10 * t for t, tens in enumerate(_TENS_WORDS)},
    **{
        f"{tens}-{unit}": 21 + 10 * t + u
        for t, tens in enumerate(_TENS_WORDS)
        for u, unit in enumerate(_UNITS_WORDS)
    },
}
# "twenty twenty-six", "nineteen ninety-nine": a century and its year, as a year is said
# (text2num reads them as two numbers, "20 26"). Only nineteen and twenty open one.
_TENS_ALT, _UNITS_ALT, _TEENS_ALT = ("|".join(w) for w in (_TENS_WORDS, _UNITS_WORDS, _TEENS))
_SPOKEN_YEAR = re.compile(
    rf"\b(nineteen|twenty)[\s-]+((?:{_TENS_ALT})(?:[\s-](?:{_UNITS_ALT}))?|{_TEENS_ALT})\b", re.I
)
# An ISO 8601 duration ("PT1H52M", "P90D", "P2W"): written out in unit words for the
# quantity reader. At least one part; months before the T, minutes after it.
_ISO_DURATION = re.compile(
    r"\bP(?=\d|T\d)(?:(?P<Y>\d+)Y)?(?:(?P<Mo>\d+)M)?(?:(?P<W>\d+)W)?(?:(?P<D>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<H>\d+)H)?(?:(?P<Mi>\d+)M)?(?:(?P<S>\d+(?:\.\d+)?)S)?)?\b"
)
_ISO_UNITS = (("Y", "years"), ("Mo", "months"), ("W", "weeks"), ("D", "days"), ("H", "hours"),
              ("Mi", "minutes"), ("S", "seconds"))  # fmt: skip
# "10h00" (French and others' clock) and "3 in the afternoon" as the clock reader reads them.
_H_CLOCK = re.compile(r"\b([01]\d|2[0-3])h([0-5]\d)\b")
_DAY_PART = re.compile(
    r"\b(1[0-2]|[1-9])(?:\s+o['’]clock)?\s+in\s+the\s+(morning|afternoon|evening)\b", re.I
)
# "1:52 (h:mm)", "1:52 hours": hours and minutes written as a clock.
_HM_DURATION = re.compile(r"\b(\d{1,2}):([0-5]\d)(?:\s*\(h:mm\)|\s*(?:hours|hrs|h)\b)", re.I)
# A value marked as taken back in a parenthesis ("$250 per night (withdrawn)"): like a
# struck value (`judges.layout`), it is not said. A figure and up to three words before it.
_MARKED_WITHDRAWN = re.compile(
    r"[$€£]?\d[\d,.]*(?:\s?[A-Za-z%]+){0,3}\s*\((?:withdrawn|struck|struck out|retracted|"
    r"superseded|void|scrapped)\)",
    re.I,
)
# "9 am until 3 pm", "10:00 till 15:00": a span of clock times, written as "to" is.
_CLOCK = r"\d{1,2}(?::[0-5]\d)?\s?(?:[ap]\.?m\.?)?"
_UNTIL = re.compile(rf"\b({_CLOCK})\s+(?:until|till|til|through|thru)\s+(?={_CLOCK}\b)", re.I)
_AN_UNIT_AND = re.compile(r"\ban (hour|minute|day|week|month|year)(\s*,?\s+and\s+\d)", re.I)


def _spoken_year(m: re.Match[str]) -> str:
    century = 19 if m.group(1).lower() == "nineteen" else 20
    return str(century * 100 + _TWO_DIGITS[re.sub(r"\s+", "-", m.group(2).lower())])


def _iso_duration(m: re.Match[str]) -> str:
    parts = [f"{m[k]} {unit}" for k, unit in _ISO_UNITS if m[k]]
    return " ".join(parts) if parts else m.group(0)


def spoken_and_coded(text: str) -> str:
    """Years said aloud, ISO durations, "10h00" and "3 in the afternoon" in the forms the
    readers read ("2026", "1 hours 52 minutes", "10:00", "3 pm")."""
    text = _SPOKEN_YEAR.sub(_spoken_year, _ISO_DURATION.sub(_iso_duration, text))
    text = _HM_DURATION.sub(r"\1 hours \2 minutes", _MARKED_WITHDRAWN.sub(" ", text))
    return _H_CLOCK.sub(r"\1:\2", text)


def day_parts(text: str) -> str:
    """After number words are digits: "an hour and 52 minutes" -> "1 hour and 52 minutes",
    "3 in the afternoon" -> "3 pm", "9 am until 3 pm" -> "9 am to 3 pm"."""
    text = _AN_UNIT_AND.sub(r"1 \1\2", text)
    text = _DAY_PART.sub(
        lambda m: f"{m.group(1)} {'am' if m.group(2).lower() == 'morning' else 'pm'}", text
    )
    return _UNTIL.sub(r"\1 to ", text)


def _digits(text: str) -> str:
    """Number words to digits ("seventeen" -> "17", "third" -> "3rd"); "one" alone is kept
    (it is as often a pronoun as a number) unless a unit follows it."""
    for pattern, replacement in _IDIOMS:
        text = pattern.sub(replacement, text)
    text = _ONE_UNIT.sub(lambda m: f"1 {m.group(2)}", text)
    protected = _PROTECTED.sub(lambda m: f"KEEPWORD{m.group(1).upper()}", text)
    convert = _alpha2digit()
    try:
        converted = convert(protected, "en", threshold=1.5)  # type: ignore[operator]
    except (ValueError, IndexError, KeyError):  # the library gave up on odd input
        converted = protected
    converted = _SPELLED_MAGNITUDE.sub(
        lambda m: f"{m.group(1)} {_MAGNITUDE_WORD[m.group(2)]}", converted
    )
    return re.sub(r"KEEPWORD([A-Z]+)", lambda m: m.group(1).lower(), converted)


@functools.lru_cache(maxsize=4096)
def normalize(text: str) -> str:
    """The reply as the extraction reads it: markdown as plain lines (`judges.layout`),
    figures written in other locales' ways in one way (`judges.written`), digits for number
    words, one spelling of periods. Offsets refer to this text, never to the original.
    Remembered: every turn's grading reads its question's documents through here again, and
    a climb or a repeated judging reads the same replies again."""
    # a superscript exponent ("10⁴") is read before superscripts are taken for footnote marks
    text = _FOOTNOTE_MARK.sub(" ", written.scientific(layout.flatten(text)))
    text = _digits(spoken_and_coded(written.rewrite(text).translate(_DASHES)))
    text = day_parts(text)
    text = _ORDINAL_PERIOD.sub(lambda m: f"Q{m.group(1)[0]}", text)
    text = _QUARTER_WORD.sub(lambda m: _quarter_word(m.group(1)), text)
    text = _HALF.sub(lambda m: "H1" if m.group(1).lower() in ("1st", "first") else "H2", text)
    text = _FISCAL.sub(lambda m: f"FY{m.group(1)}", text)
    return _FY.sub(lambda m: f"FY{_year(m.group(1))}", text)


def _quarter_word(word: str) -> str:
    return "Q" + str(("first", "second", "third", "fourth").index(word.lower()) + 1)


def _year(digits: str) -> str:
    return digits if len(digits) == 4 else f"20{digits[-2:]}"


# -- clauses --------------------------------------------------------------------------------
# Boundaries between the statements of a reply. A comma splits only when a capitalised word
# follows ("Sparrow $1,849, Heron $2,690"): elsewhere it joins a figure to its own clause.
_BOUNDARY = re.compile(
    r"(?<=[.!?;])\s+|\n+|\s[—–]\s|\s-\s|\s*[()]\s*|:\s+(?![$€£\d-])|"
    r",?\s+(?:while|whereas|but|and|although|though)\s+|,\s+(?=[A-Z])"
)


@dataclass(frozen=True)
class Clause:
    start: int
    end: int
    text: str


def clauses(text: str) -> list[Clause]:
    found, last = [], 0
    for m in _BOUNDARY.finditer(text):
        if m.start() > last:
            found.append(Clause(last, m.start(), text[last : m.start()]))
        last = m.end()
    if last < len(text):
        found.append(Clause(last, len(text), text[last:]))
    return [c for c in found if c.text.strip()]


def clause_at(parts: list[Clause], start: int, end: int) -> Clause:
    """The clause holding a span (a span across boundaries, such as a range, gets the union)."""
    touching = [c for c in parts if c.start < end and start < c.end]
    if not touching:
        return Clause(start, end, "")
    lo, hi = touching[0].start, touching[-1].end
    return Clause(lo, hi, "")


def sentence_bounds(text: str, pos: int) -> tuple[int, int]:
    starts = [0] + [m.end() for m in re.finditer(r"(?<=[.!?;])\s+|\n+", text)]
    start = max(s for s in starts if s <= pos)
    later = [m.start() for m in re.finditer(r"[.!?;](?=\s|$)|\n", text) if m.start() >= pos]
    return start, (min(later) if later else len(text))


# -- entities and keywords ----------------------------------------------------------------
COMMON_CAPITALISED = frozenset(
    """the this that these those it its he she they we you i there here in on at for from
    with by of to after before under according per section note yes no not also and but so
    then both all each every some any only just since when while if as about around roughly
    approximately up over nothing nowhere great happy sorry done depending looking scanning checking
    prices heads-up item items what which who how why where let sure okay ok well first last
    next one two three four five six seven eight nine ten their our my his her appendix
    your yours ours theirs
    monday tuesday wednesday thursday friday saturday sunday january february march april may
    june july august september october november december between within outside plus
    version step chapter article clause table page line row rows entry annex schedule exhibit
    """.split()
)
_CAPITALISED = re.compile(r"\b[A-Z][a-z\u00c0-\u024f]{2,}(?:[-'][A-Z][a-z\u00c0-\u024f]+)*\b")
_IDENTIFIER = re.compile(r"\b(?:[A-Z]{1,6}-\d+[A-Z]?|Q[1-4]|H[12]|FY\d{4}|\d+(?:st|nd|rd|th))\b")
_YEAR = re.compile(r"(?<![\d.,$])\b(?:19|20)\d{2}\b(?![\d,]|\.\d)")
_WORD = re.compile(r"[a-z\u00c0-\u024f][a-z\u00c0-\u024f'-]*")
GENERIC = frozenset(
    """what which when where who whom whose how many much long does do did is are was were be
    been being the a an of in on at for to from by with and or per each any all this that
    there their its it they them have has had get gets got give given say says said tell
    document documents report file files policy handbook log minutes sheet page data text
    according also only about some more most very just than then into over under up down
    can could will would should may might must shall our your you we i me my us company
    studio team time times year years day days week weeks quarter after before within
    back""".split()
)


def stem(word: str) -> str:
    """A crude stem that makes "retried" meet "retries" and "weighs" meet "weigh"."""
    return word.lower()[:5]


def keywords(text: str) -> set[str]:
    """Stems of the content words of a question (what the asked entity is called)."""
    return {stem(w) for w in _WORD.findall(text.lower()) if w not in GENERIC and len(w) > 2}


_SENTENCE_START = re.compile(r"(?:^|[.!?:;(\u2014\u2013\n]\s*|\s-\s)$")


def proper_words(*texts: str) -> set[str]:
    """Capitalised words seen inside a sentence: names, not words capitalised by position."""
    found = set()
    for text in texts:
        for m in _CAPITALISED.finditer(text):
            if not _SENTENCE_START.search(text[max(0, m.start() - 3) : m.start()]):
                found.add(m.group(0).lower())
    return found


def entity_marks(
    text: str, start: int = 0, proper: set[str] | None = None, known: bool = False
) -> list[tuple[int, str]]:
    """(offset, lowercased mark) of named things in `text`: capitalised names, identifiers
    (Q3, FY2026, INC-2303, 3rd) and years. A word capitalised only because it opens a
    sentence ("Revenue was ...") is a name only if it is seen capitalised elsewhere; with
    `known` (a reply in a language that capitalises nouns or is not read) every capitalised
    word is so."""
    marks = []
    for pattern in (_CAPITALISED, _IDENTIFIER, _YEAR):
        for m in pattern.finditer(text):
            word = m.group(0).lower()
            if word in COMMON_CAPITALISED:
                continue
            opening = pattern is _CAPITALISED and (
                known or _SENTENCE_START.search(text[max(0, m.start() - 3) : m.start()])
            )
            if opening and proper is not None and word not in proper:
                continue
            marks.append((start + m.start(), word))
    return sorted(marks)


# Function words of the languages a reply may come in: English's, and those of languages whose
# capitals code does not read as names (German capitalises every noun).
_ENGLISH_WORDS = frozenset("the and of to was were for with that this are on at by".split())
_FOREIGN_WORDS = frozenset(
    """der das und im ist lag bei mit für von des den dem zu auf sich nicht ein eine wurden
    le la les du et est une pour dans au aux sur el los las del y por con es
    het een van voor zijn niet il gli della che è per non""".split()
)


def foreign(text: str) -> bool:
    """The reply is written in another language than English (by its function words)."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    theirs = sum(w in _FOREIGN_WORDS for w in words)
    return theirs >= 2 and theirs > sum(w in _ENGLISH_WORDS for w in words)


def english(text: str) -> bool:
    """The reply reads as English throughout: its other languages' function words, if any,
    are few beside English ones (a German noun is capitalised without being a name)."""
    words = re.findall(r"[^\W\d_]+", text.lower())
    theirs = sum(w in _FOREIGN_WORDS for w in words)
    return theirs == 0 or sum(w in _ENGLISH_WORDS for w in words) > 2 * theirs


def asked_marks(*texts: str) -> set[str]:
    """The entities the question itself names (its own capitalised words, periods, ids)."""
    found: set[str] = set()
    for text in texts:
        normal = normalize(text)
        found |= {w for _, w in entity_marks(normal)}
        found |= {w for w in _WORD.findall(normal.lower())}
    return found


# -- abstention -----------------------------------------------------------------------------
# Ways of saying "the documents do not give this": verbs of saying or containing, negated;
# "no figure", "silent on", "nowhere", "not found", an empty file. Negated verbs of other
# kinds ("revenue did not fall") are not abstentions.
ABSTAIN = re.compile(
    r"\b(?:does|do|did|is|are|was|were|has|have|can|could)(?:\s+not|n't)\s+(?:seem\s+to\s+)?"
    r"(?:say|state|mention|specify|give|list|provide|include|cover|address|report|contain|"
    r"disclose|show|record|appear|exist|know|find|locate|see|tell|break|define|name|discuss|"
    r"detail|quote|reveal|publish|(?:get|go|goes)\s+into|talk\s+about|touch\s+on|deal\s+with)\b"
    r"|\b(?:cannot|can't|couldn't|could\s+not|unable\s+to|not\s+able\s+to)\s+(?:find|locate|"
    r"see|tell|say|determine|confirm|give|provide|open|access|read|index)\b"
    r"|\b(?:isn't|is\s+not|aren't|are\s+not|wasn't|was\s+not|weren't|were\s+not)\s+"
    r"(?:given|stated|mentioned|specified|listed|provided|included|covered|reported|"
    r"available|disclosed|addressed|recorded|shown|documented|in\b|part\s+of|found|"
    r"something)\b"
    r"|\bno\s+(?:[\w-]+\s+){0,2}(?:mention|information|info|figure|number|data|record|details?|"
    r"amount|value|count|breakdown|reference|indication|headcount|trace)\b"
    r"|\bno\s+(?:[\w-]+\s+){0,2}(?:is\s+|are\s+)?(?:listed|given|stated|mentioned|recorded|"
    r"reported|provided)\b"
    r"|\bnothing\s+(?:about|on|regarding)\b|\bsilent\s+(?:on|about)\b|\bmakes\s+no\s+mention\b"
    r"|\bnot\s+(?:covered|stated|given|mentioned|specified|listed|addressed|documented)\s+"
    r"(?:anywhere|in\b|by\b)|\bnot\s+something\s+(?:the|this|that)\b"
    r"|\bnever\s+(?:mentions?|gives?|states?|says|lists?|covers?|talks\s+about)\b"
    r"|\bno\s+word\s+(?:on|about|of)\b|\bleaves?\s+(?:that|this|it)\s+out\b|\bmum\s+on\b"
    r"|\bnot\s+in\s+the\b|\bnowhere\b|\bnot\s+found\b|\bno\s+such\b|\bis\s+empty\b"
    r"|\bhas\s+no\s+(?:text|content)\b|\bnothing\s+to\s+report\b"
    r"|\bi\s+(?:don't|do\s+not)\s+(?:know|have)\b"
    r"|\bno\s+way\s+to\s+(?:tell|know|work\s+out|calculate|determine|say)\b"
    r"|\b(?:can't|cannot|can\s+not)\s+be\s+(?:worked\s+out|calculated|determined|found|"
    r"answered)\b"
    r"|\bunanswerable\b|\bdr[ae]w\s+a\s+blank\b|\b(?:outside|beyond)\s+what\s+(?:the|this)\b",
    re.I,
)


def abstains(text: str) -> bool:
    return bool(ABSTAIN.search(text))
