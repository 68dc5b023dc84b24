"""Checks on the simulated user: did it ask what the scenario needs, keep the expected answer
to itself, keep going until the scenario's last step, and stay the person it plays?

Pure functions over one message and the scenario turn it was written for. The LLM simulator
runs them on every message it writes (a failed check is the turn's `simulator_fault`, and
scoring makes the scenario SIMULATOR_ERROR: unmeasured, never the agent's failure), and
`agenteval simulator controls` measures them on labelled messages
(eval/simulator_controls/), tuned on dev, reported on held.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

CHECKS = ("asks_needed", "no_answer_leak", "no_early_stop", "in_persona")
WORD = re.compile(r"[a-z0-9]+(?:\.[0-9]+)?")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
# A simulated user's "the conversation is over" (the simulator strips it; the checks see it).
STOP_MARKERS = re.compile(
    r"\[(?:end|stop|done|finished)[^\]]*\]|<\|?\s*(?:end|stop)[^>]*>|\bend[_ ]of[_ ]conversation\b"
    r"|\bconversation (?:is |has )?(?:over|ended|complete|finished|concluded)\b"
    r"|\b(?:i have|i've got|there are) no (?:more|further) questions\b|^(?:goodbye|bye)\b",
    re.IGNORECASE,
)
# The assistant's voice in the user's mouth: the simulated user swapped roles.
ASSISTANT_VOICE = re.compile(
    r"\bhow (?:can|may) i (?:help|assist) you\b|\bas an ai\b|\bi(?:'m| am) an? (?:ai|assistant"
    r"|language model)\b|\bis there anything else i can (?:help|do)\b|^\s*(?:assistant|agent)\s*:"
    r"|\bhere (?:is|are) the (?:answer|figures?|results?) you asked for\b|\bi hope this helps\b",
    re.IGNORECASE,
)
STOPWORDS = frozenset(
    "a an the of for in on at to and or by with from about is are was were be what which who "
    "how many much does do did ask get find give tell me my our your their it its this that "
    "same then again also please user person agent assistant question follow up".split()
)
STEM = 5  # words compared by their first letters: "revenues" and "revenue" meet
MIN_NUMBER_CHARS = 2  # a lone digit is too common to call a leak


@dataclass(frozen=True)
class Finding:
    check: str
    detail: str

    def __str__(self) -> str:
        return f"{self.check}: {self.detail}"


def _stems(text: str) -> set[str]:
    return {w[:STEM] for w in WORD.findall(text.lower()) if w not in STOPWORDS and len(w) > 2}


def _numbers(text: str) -> set[str]:
    return {n.replace(",", "") for n in NUMBER.findall(text) if len(n) >= MIN_NUMBER_CHARS}


def answer_leak(text: str, objective: str, expected: Sequence[str]) -> str | None:
    """The expected answer, or a number of it the objective does not already say, in the
    user's message: the agent would be graded on an answer the user handed it."""
    said = " ".join(text.lower().split())
    for answer in expected:
        whole = " ".join(answer.lower().split())
        if len(whole) >= 3 and whole in said:
            return f"says the expected answer {answer!r}"
        own = _numbers(answer) - _numbers(objective)
        leaked = sorted(own & _numbers(text))
        if leaked:
            return f"says {', '.join(leaked)} of the expected answer {answer!r}"
    return None


def off_objective(text: str, objective: str) -> str | None:
    """Not one content word of the objective in the message: it asks something else."""
    wanted = _stems(objective)
    if not wanted or wanted & _stems(text):
        return None
    return "shares no content word with the objective"


def check_message(
    text: str, objective: str, expected: Sequence[str] = (), last: bool = True
) -> list[Finding]:
    """Every check this message fails, in CHECKS order ([]: a good simulated message)."""
    found = []
    if not text.strip():
        found.append(Finding("asks_needed", "empty message"))
    elif (why := off_objective(text, objective)) is not None:
        found.append(Finding("asks_needed", why))
    if (why := answer_leak(text, objective, expected)) is not None:
        found.append(Finding("no_answer_leak", why))
    stop = STOP_MARKERS.search(text)
    if stop and not last:
        found.append(Finding("no_early_stop", f"ends the conversation ({stop.group(0)!r}) "
                                              "before the scenario's last step"))  # fmt: skip
    voice = ASSISTANT_VOICE.search(text)
    if voice:
        found.append(Finding("in_persona", f"speaks as the assistant ({voice.group(0)!r})"))
    return found
