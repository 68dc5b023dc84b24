"""What the reference memory agrees to keep: its write rules, as pure functions.

The model proposes memories; these rules decide. They are simple and word-based on purpose
(the reference is meant to be a reasonable design whose limits the benchmark can find):

- secrets: nothing credential-like is kept; chat logs keep it redacted, and a redacted value
  is remembered only as a hash so later mentions are redacted too;
- whose words: a fact, preference or reminder must come from the user (source `user`), and
  words must be in what the user *stated* this turn: questions, conditionals ("if I went
  keto...") and quoted text are not statements. Every distinctive word (a number, a name)
  must be there, and at least half of all its content words;
- lessons need a mistake: a failed tool call this turn, and the lesson's words in that
  failure or the calls after it, never in a document the agent merely read;
- forgotten stays forgotten: a memory drawn from material at or before a forget that
  mentions its topic is refused.

Grounding checks words, not meaning: a lookup whose subject the user named ("what's the
weather in Phoenix?" next to "I'm in Phoenix this weekend") grounds a wrong fact as well
as a right one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from agenteval.llm.scrub import REDACTED, Scrubber
from agenteval.memory.base import TurnContext
from agenteval.memory.vectors import words
from agenteval.schema.memory_items import Candidate

MIN_SHARED_WORDS = 0.5  # share of a fact's content words the user's statements must hold
CREDENTIAL = re.compile(
    r"(?i)\b(password|passcode|passphrase|pin(?: code)?|login|credentials?|api[ _-]?key|"
    r"access code|token)\b([^.\n?!]{0,24}?)\b(is|was|are|:|=)\s+[\"'`]?([^\s\"'`,;]{4,})"
)
QUOTED = re.compile(r"[\"“][^\"”]*[\"”]")
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
CONDITIONAL = re.compile(
    r"(?i)^\s*(if|what if|suppose|supposing|imagine|hypothetically|say|would|could|should)\b"
)
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’_-]*")
FORGET_FILLER = frozenset(
    "forget everything anything stuff thing things info information regard regarding "
    "remember memory memories delete erase remove".split()
)


def _hash(value: str) -> str:
    return hashlib.sha256(value.strip(".,;:!?").encode()).hexdigest()


@dataclass(frozen=True)
class Redacted:
    text: str
    hashes: tuple[str, ...]  # sha256 of each value newly redacted


class Secrets:
    """Credential-like values: found by shape or phrase, redacted, remembered by hash only."""

    def __init__(self, hashes: Iterable[str] = ()) -> None:
        self.hashes = set(hashes)
        self.scrubber = Scrubber()

    def found(self, text: str) -> bool:
        return bool(CREDENTIAL.search(text)) or self._known(text) or self._shaped(text)

    def _shaped(self, text: str) -> bool:
        return REDACTED in self.scrubber.scrub_text(text) and REDACTED not in text

    def _known(self, text: str) -> bool:
        return any(_hash(t) in self.hashes for t in text.split())

    def redact(self, text: str) -> Redacted:
        new: list[str] = []

        def replace(match: re.Match[str]) -> str:
            new.append(_hash(match.group(4)))
            return match.group(0)[: match.start(4) - match.start(0)] + REDACTED

        clean = CREDENTIAL.sub(replace, text)
        self.hashes.update(new)
        clean = " ".join(REDACTED if _hash(t) in self.hashes else t for t in clean.split(" "))
        return Redacted(self.scrubber.scrub_text(clean), tuple(new))


def statements(text: str) -> str:
    """The user's statements: questions, conditionals and quoted text left out."""
    kept = []
    for sentence in SENTENCE.split(QUOTED.sub(" ", text)):
        sentence = sentence.strip()
        if sentence and not sentence.endswith("?") and not CONDITIONAL.match(sentence):
            kept.append(sentence)
    return " ".join(kept)


def distinctive(text: str) -> set[str]:
    """Numbers and names: tokens with a digit, or capitalised but not first in a sentence."""
    found: set[str] = set()
    for sentence in SENTENCE.split(text):
        for index, token in enumerate(TOKEN.findall(sentence)):
            token = re.sub(r"['’]s$", "", token)
            if any(ch.isdigit() for ch in token) or (index > 0 and token[:1].isupper()):
                found.update(words(token))
    return found


def names_missing(text: str, have: set[str]) -> list[str]:
    """The numbers and names of `text` (its subject, the first word, aside) not in `have`."""
    mine = words(text)
    return sorted(distinctive(text) - have - set(mine[:1]))


def grounded(text: str, evidence: str) -> str | None:
    """Why `text` is not supported by `evidence` word for word, or None when it is. The
    first word is the subject the model wrote about ("Sam", "Maya's"): the user never says
    their own name, so it is left out wherever it appears."""
    have = set(words(evidence))
    mine = words(text)
    subject = mine[0] if mine else ""
    mine = [w for w in mine if w != subject]
    missing = names_missing(text, have)
    if missing:
        return f"{', '.join(missing)} not in the user's statements"
    if mine and sum(w in have for w in mine) / len(mine) < MIN_SHARED_WORDS:
        return "most of its words are not in the user's statements"
    return None


def _lesson_evidence(context: TurnContext) -> str | None:
    tools = list(context.tools)
    failed = [i for i, t in enumerate(tools) if not t.ok]
    if not failed:
        return None
    after = tools[failed[0] :]
    parts = [t.result for t in after if not t.ok]
    parts += [f"{t.name} {' '.join(str(v) for v in t.arguments.values())}" for t in after]
    parts += [t.result for t in after if t.ok and t.name not in ("read_file", "open_document")]
    return " ".join([*parts, statements(context.user)])


def refusal(
    candidate: Candidate, context: TurnContext | None, secrets: Secrets, known: str = ""
) -> str | None:
    """Why the reference memory will not keep `candidate`, or None when it will. `known` is
    the text of the item an update replaces: only what is new must be in the user's words."""
    text = candidate.text or ""
    if secrets.found(text):
        return "looks like a credential"
    if candidate.kind == "reminder" and candidate.op == "remember" and candidate.due is None:
        return "a reminder without a due time"
    if context is None or candidate.source == "agent":
        return None  # an explicit call: the agent's decision
    if candidate.kind == "lesson":
        evidence = _lesson_evidence(context)
        if evidence is None:
            return "a lesson needs a failed tool call this turn"
        why = grounded(text, evidence)
        return None if why is None else f"lesson not drawn from the mistake: {why}"
    if candidate.source != "user":
        return f"from a {candidate.source}, not the user's own words"
    if candidate.op not in ("remember", "update") or not text:
        return None
    why = grounded(text, f"{statements(context.user)} {known}")
    return None if why is None else f"not grounded: {why}"


@dataclass(frozen=True)
class Tombstone:
    words: frozenset[str]
    at: datetime


def topic_words(about: str) -> frozenset[str]:
    return frozenset(w for w in words(about) if w not in FORGET_FILLER)


def forgotten(text: str, observed: datetime, tombstones: Sequence[Tombstone]) -> Tombstone | None:
    """The tombstone `text` (seen at `observed`) falls under, if any."""
    mine = set(words(text))
    for stone in tombstones:
        if observed <= stone.at and mine & stone.words:
            return stone
    return None


def mentions(text: str, topic: frozenset[str]) -> bool:
    return bool(set(words(text)) & topic)
