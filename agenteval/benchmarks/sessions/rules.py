"""What extraction keeps and drops, and why: the one home of every rule and threshold.

Most of a transcript is machinery: tool results, hook output, notifications and command
echoes all arrive on the user channel, and none of them is a request anybody made. A user
line becomes a case only when it is text a person typed and asked something with. Each rule
below is a pure function of the line's text, so the reasons in a dataset are reproducible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Drop(StrEnum):
    """Why a line (or a request) was left out; the dataset counts lines per reason."""

    TRUNCATED = "truncated"  # the cut last line of a session still being written
    MALFORMED = "malformed"  # not a JSON object (named in the warnings)
    METADATA = "metadata"  # summary, file-history-snapshot, queue-operation lines
    SYSTEM = "system"  # system lines: hook runs, compaction markers, API errors
    UNKNOWN_TYPE = "unknown_type"  # a line type this reader does not know
    SIDECHAIN = "sidechain"  # a subagent's transcript
    IS_META = "is_meta"  # lines Claude Code marks as not typed by the user
    HOOK_FEEDBACK = "hook_feedback"
    TASK_NOTIFICATION = "task_notification"
    SLASH_COMMAND = "slash_command"  # a command echo or its local output
    INTERRUPTED = "interrupted"  # the interrupt marker, and the request it cut short
    COMPACT_SUMMARY = "compact_summary"
    IMAGE = "image"  # an image attachment: the replay cannot show it
    EMPTY = "empty"
    PASTED_DUMP = "pasted_dump"
    ACKNOWLEDGEMENT = "acknowledgement"
    ORPHAN = "orphan"  # an answer or tool result to a line that was dropped
    NO_REFERENCE = "no_reference"  # a request the assistant never answered in text
    FOLLOWUP_WITHOUT_CONTEXT = "followup_without_context"
    BEFORE_SINCE = "before_since"
    OVER_LIMIT = "over_limit"
    API_ERROR = "api_error"  # an assistant line Claude Code wrote for a failed API call
    SYNTHETIC = "synthetic"  # an assistant line no model wrote ("No response requested.")
    DUPLICATE = "duplicate"  # a request whose message uuid another file already gave
    OVERSIZE_LINE = "oversize_line"  # a line over sessions.max_line_bytes, and its case


# Claude Code's machine-written user lines, recognised by how they start.
HOOK_PREFIXES = (
    "Stop hook feedback:",
    "SubagentStop hook feedback:",
    "UserPromptSubmit hook",
    "PreToolUse:",
    "PostToolUse:",
)
TASK_NOTIFICATION_PREFIX = "<task-notification>"
COMMAND_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
)
INTERRUPT_MARKERS = ("[Request interrupted by user",)
# What an IDE adds to a typed request (the file open, the selection): not the person's words.
IDE_TAGS = re.compile(r"<(ide_opened_file|ide_selection|ide_diagnostics)>.*?</\1>\s*", re.S)
# Assistant lines no model wrote: Claude Code's stand-ins for a reply that never came.
SYNTHETIC_MODEL = "<synthetic>"
SYNTHETIC_TEXTS = frozenset({"No response requested."})
# A `/clear` starts a conversation afresh: nothing before it is context for what follows.
CLEAR_COMMAND = re.compile(r"<command-name>\s*/(?:clear|reset|new)\s*</command-name>")

# A bare acknowledgement: at most this many words, every one of them from ACK_WORDS.
ACK_MAX_WORDS = 4
ACK_WORDS = frozenset(
    """ok okay k kk yes yep yeah yup sure thanks thank you thx ty great cool nice good perfect
    awesome excellent lgtm fine done got it sounds right correct agreed alright continue go
    ahead proceed please np no problem wow much appreciated looks""".split()
)
# A pasted dump (a log, a trace, a file): many lines, and hardly any of them prose.
DUMP_MIN_LINES = 20
DUMP_MAX_PROSE_SHARE = 0.15
PROSE_MIN_WORDS = 4
# A follow-up refers back to the exchange before it. These cues mark one; a request
# carrying one gets the previous exchanges (up to FOLLOWUP_MAX_CONTEXT) as context.
FOLLOWUP_CUES = re.compile(
    r"^(?:again|same|what about|how about)\b"
    r"|\b(?:the same|the other (?:one|ones)|as well|like you did|as before|that one"
    r"|those ones|do it again)\b|\btoo[.!]?$",
    re.IGNORECASE,
)
# A sequencing word opens a follow-up only when what it asks refers back (a pronoun) or is
# too short to stand alone: "Now add a test for that." is one; "Now run the linter on the
# cart module" names everything it needs.
FOLLOWUP_OPENERS = re.compile(
    r"^(?:and|also|now|then|next|instead|ok(?:ay)?,? now|great,? now)\b", re.IGNORECASE
)
FOLLOWUP_OPENER_MAX_WORDS = 4
# A short request that is mostly a pronoun ("fix that", "why did it fail?") is one too.
FOLLOWUP_PRONOUN = re.compile(r"\b(?:it|that|this|those|these|them|there)\b", re.IGNORECASE)
FOLLOWUP_SHORT_WORDS = 8
FOLLOWUP_MAX_CONTEXT = 3
# How much of a tool's target (a path, a command) a case records.
TOOL_TARGET_CHARS = 160

_WORD = re.compile(r"[A-Za-z']+")
_CODE_SYMBOLS = re.compile(r"[{}\[\]()<>=;|/\\`$#@*]")
# Share of a prose line's characters that are letters or spaces.
PROSE_MIN_LETTER_SHARE = 0.7


@dataclass(frozen=True)
class Verdict:
    """How a user line's text is read: a drop reason, or None for a request."""

    drop: Drop | None
    closes: bool  # whether the open exchange ends here (the next assistant text is not its)


def is_prose(line: str) -> bool:
    """A sentence a person wrote: not indented (code, trace frames), enough words, hardly
    any code symbols, and mostly letters."""
    if line[:2].isspace() or line.startswith("\t"):
        return False
    if len(_WORD.findall(line)) < PROSE_MIN_WORDS or len(_CODE_SYMBOLS.findall(line)) > 1:
        return False
    letters = sum(ch.isalpha() or ch == " " for ch in line)
    return letters >= PROSE_MIN_LETTER_SHARE * len(line)


def is_pasted_dump(text: str) -> bool:
    """Many lines, hardly any prose, and no question or request typed before them ("Why
    does this test fail?" above a traceback is a request with its evidence)."""
    lines = [row for row in text.splitlines() if row.strip()]
    if len(lines) < DUMP_MIN_LINES or is_prose(lines[0]):
        return False
    prose = sum(1 for row in lines if is_prose(row))
    return prose / len(lines) < DUMP_MAX_PROSE_SHARE


def is_acknowledgement(text: str) -> bool:
    words = [w.lower().strip("'") for w in _WORD.findall(text)]
    if not words:  # only emoji or punctuation: "👍", "!!"
        return len(text.strip()) <= ACK_MAX_WORDS * 2
    return len(words) <= ACK_MAX_WORDS and all(w in ACK_WORDS for w in words)


def is_follow_up(text: str) -> bool:
    stripped = text.strip()
    if FOLLOWUP_CUES.search(stripped):
        return True
    words = _WORD.findall(stripped)
    refers_back = bool(FOLLOWUP_PRONOUN.search(stripped))
    if FOLLOWUP_OPENERS.search(stripped):
        return refers_back or len(words) <= FOLLOWUP_OPENER_MAX_WORDS
    return len(words) <= FOLLOWUP_SHORT_WORDS and refers_back


def read_user_text(text: str) -> Verdict:
    """What a user line's text is: machinery (and whether it ends the exchange) or a request.

    Hook feedback keeps the exchange open: the assistant goes on with the same request.
    Everything else that is not a request ends it, so an answer to a notification or an
    acknowledgement is never taken for the answer to the request before it.
    """
    stripped = text.lstrip()
    if stripped.startswith(HOOK_PREFIXES):
        return Verdict(Drop.HOOK_FEEDBACK, closes=False)
    if stripped.startswith(TASK_NOTIFICATION_PREFIX):
        return Verdict(Drop.TASK_NOTIFICATION, closes=True)
    if stripped.startswith(COMMAND_PREFIXES):
        return Verdict(Drop.SLASH_COMMAND, closes=True)
    if stripped.startswith(INTERRUPT_MARKERS):
        return Verdict(Drop.INTERRUPTED, closes=True)
    if not stripped:
        return Verdict(Drop.EMPTY, closes=True)
    if is_pasted_dump(stripped):
        return Verdict(Drop.PASTED_DUMP, closes=True)
    if is_acknowledgement(stripped):
        return Verdict(Drop.ACKNOWLEDGEMENT, closes=True)
    return Verdict(None, closes=True)


def clears_context(text: str) -> bool:
    return bool(CLEAR_COMMAND.search(text))
