"""Claude Code transcripts as written under ~/.claude/projects/<project>/<session>.jsonl.

One JSON object a line. `type` says what the line is (user, assistant, summary, system,
file-history-snapshot, queue-operation, ... an open set); conversation lines carry `uuid`,
`parentUuid`, `sessionId`, `cwd`, `timestamp`, `isSidechain`, `isMeta` and a `message` whose
`content` is a string or a list of blocks (text, thinking, tool_use, tool_result, image).
Tool results come back on the user channel. A subagent's lines are marked `isSidechain`, in
the session's file (older versions) or in an `agent-<id>.jsonl` file of their own.

A field this reader does not know never fails a line: a newer Claude Code adds fields and
block types, and that must cost a warning, not the user's data. The line and message models
declare only what extraction reads (other fields are named in the warning, read from the
parsed line, and not copied into the model: copying them cost a third of the validation);
content blocks stay as written, every field kept. A line that is not JSON is skipped and
named; a cut last line (a session still being written) is skipped and counted as truncation.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
)

# Top-level fields Claude Code writes today (2.0 - 2.3). Anything else is reported once per
# name, so a format change is visible without failing the read.
KNOWN_LINE_FIELDS = frozenset(
    {
        "type", "uuid", "parentUuid", "logicalParentUuid", "sessionId", "cwd", "timestamp",
        "isSidechain", "isMeta", "isCompactSummary", "isVisibleInTranscriptOnly",
        "isApiErrorMessage", "userType", "version", "gitBranch", "slug", "message",
        "requestId", "toolUseResult", "summary", "leafUuid", "subtype", "content", "level",
        "toolUseID", "compactMetadata", "messageId", "snapshot", "isSnapshotUpdate",
        "operation", "agentId", "thinkingMetadata", "todos", "imagePasteIds", "entrypoint",
        "permissionMode", "error", "durationMs",
    }
)  # fmt: skip
# Line types read here; a line of another type is reported by its type alone.
KNOWN_TYPES = frozenset(
    {"user", "assistant", "summary", "system", "file-history-snapshot", "queue-operation"}
)
# A line longer than this is not parsed (sessions.max_line_bytes): one pasted 50 MB blob
# would otherwise become a case of its own size and hold gigabytes while it is read.
MAX_LINE_BYTES = 1_000_000
KNOWN_BLOCKS = ("text", "thinking", "redacted_thinking", "tool_use", "tool_result", "image")
KNOWN_BLOCK_SET = frozenset(KNOWN_BLOCKS)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class TextBlock(_Open):
    type: Literal["text"]
    text: str = ""


class ThinkingBlock(_Open):
    type: Literal["thinking", "redacted_thinking"]
    thinking: str = ""


class ToolUseBlock(_Open):
    type: Literal["tool_use"]
    id: str = ""
    name: str = ""
    input: dict[str, Any] = {}


class ToolResultBlock(_Open):
    type: Literal["tool_result"]
    tool_use_id: str = ""
    content: Any = None
    is_error: bool | None = None


class ImageBlock(_Open):
    type: Literal["image"]


class OtherBlock(_Open):
    """A block type this reader does not know (a newer format): kept, never used."""

    type: str = "unknown"


def _block_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in KNOWN_BLOCKS else "other"


Block = Annotated[
    Annotated[TextBlock, Tag("text")]
    | Annotated[ThinkingBlock, Tag("thinking")]
    | Annotated[ThinkingBlock, Tag("redacted_thinking")]
    | Annotated[ToolUseBlock, Tag("tool_use")]
    | Annotated[ToolResultBlock, Tag("tool_result")]
    | Annotated[ImageBlock, Tag("image")]
    | Annotated[OtherBlock, Tag("other")],
    Discriminator(_block_kind),
]


_BLOCKS: TypeAdapter[list[Block]] = TypeAdapter(list[Block])


@dataclass(slots=True)
class _Parts:
    """A message's content as extraction reads it: its block objects, their kinds, and the
    non-empty texts of its text blocks (a string content is one text block)."""

    blocks: tuple[dict[str, Any], ...]
    kinds: frozenset[str]
    texts: tuple[str, ...]

    @staticmethod
    def of(content: Any) -> _Parts:
        if isinstance(content, str):
            texts = (content,) if content else ()
            return _Parts(({"type": "text", "text": content},), TEXT_ONLY, texts)
        if not isinstance(content, list):
            return _Parts((), frozenset(), ())
        blocks = tuple(b for b in content if isinstance(b, dict))
        found = [b.get("text") for b in blocks if b.get("type") == "text"]
        kinds = frozenset([str(b.get("type")) for b in blocks])
        return _Parts(blocks, kinds, tuple([t for t in found if isinstance(t, str) and t]))


TEXT_ONLY = frozenset({"text"})


class Message(BaseModel):
    """A message; its content blocks stay as written (every field of every block kept) and
    are typed on request (`blocks`). Extraction reads them through the accessors below
    instead: typing each block of every line would cost most of the reading time. Fields
    other than these are not kept (see the module's docstring)."""

    model_config = ConfigDict(populate_by_name=True)

    role: str | None = None
    id: str | None = None
    model: str | None = None
    # A string or a list of block objects, as written (see `raw_blocks`).
    content: Any = None
    stop_reason: str | None = None

    def raw_blocks(self) -> list[dict[str, Any]]:
        return list(self._parts().blocks)

    def _parts(self) -> _Parts:
        """The content read once, kept on the instance: extraction asks a line for its
        kinds and texts several times (filters, then the exchange it belongs to). Kept in
        `__dict__` by hand (functools.cached_property takes a lock on Python 3.11, and a
        private attribute costs more than reading the content again), with the content it
        was read from: a content assigned or copied in later is read afresh."""
        kept = self.__dict__.get("_content_parts")
        if kept is None or kept[0] is not self.content:
            kept = self.__dict__["_content_parts"] = (self.content, _Parts.of(self.content))
        parts: _Parts = kept[1]
        return parts

    def blocks(self) -> list[Any]:
        return _BLOCKS.validate_python(self.raw_blocks())

    def kinds(self) -> frozenset[str]:
        return self._parts().kinds

    def texts(self) -> list[str]:
        return list(self._parts().texts)

    def text(self) -> str:
        """The text a person would read: text blocks only, joined by blank lines."""
        return "\n\n".join(self.texts())

    def tool_uses(self) -> list[tuple[str, dict[str, Any]]]:
        found = (b for b in self._parts().blocks if b.get("type") == "tool_use")
        return [(str(b.get("name") or ""), dict(b.get("input") or {})) for b in found]


class Line(BaseModel):
    type: str
    uuid: str | None = None
    parent_uuid: str | None = None
    session_id: str | None = None
    cwd: str | None = None
    timestamp: str | None = None
    is_sidechain: bool = False
    is_meta: bool = False
    is_compact_summary: bool = False
    # As written (any value; true-ish marks a line Claude Code wrote for a failed API call).
    is_api_error_message: Any = None
    message: Message | None = None

    @field_validator("timestamp", mode="before")
    @classmethod
    def _numeric_time(cls, value: Any) -> Any:
        """Epoch seconds or milliseconds, as some exports write them: an ISO time in UTC."""
        if isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1000 if value > 10**11 else value
            return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
        return value

    model_config = ConfigDict(
        populate_by_name=True,
        alias_generator=lambda name: {
            "parent_uuid": "parentUuid",
            "session_id": "sessionId",
            "is_sidechain": "isSidechain",
            "is_meta": "isMeta",
            "is_compact_summary": "isCompactSummary",
            "is_api_error_message": "isApiErrorMessage",
        }.get(name, name),
    )


# Names a line's fields are read by (the model reads a field by its name or its alias).
READ_LINE_FIELDS = KNOWN_LINE_FIELDS.union(Line.model_fields)


@dataclass
class TranscriptFile:
    """One transcript read leniently: its lines by number and what could not be read."""

    path: Path
    lines: list[tuple[int, Line]] = field(default_factory=list)
    total: int = 0
    truncated: int | None = None  # number of the cut last line, if any
    malformed: list[tuple[int, str]] = field(default_factory=list)  # (line, why)
    # What this reader does not know ("field 'x'", "block type 'y'"): count, first line.
    unknown: Counter[str] = field(default_factory=Counter)
    first_seen: dict[str, int] = field(default_factory=dict)
    oversize: list[int] = field(default_factory=list)  # lines over the cap, never parsed


def _note_unknown(found: TranscriptFile, number: int, parsed: dict[str, Any], line: Line) -> None:
    names = []
    if line.type in KNOWN_TYPES and not parsed.keys() <= READ_LINE_FIELDS:
        names = [f"field {n!r}" for n in parsed.keys() - READ_LINE_FIELDS]
    if line.message is not None and not line.message.kinds() <= KNOWN_BLOCK_SET:
        names += [f"block type {k!r}" for k in line.message.kinds() - KNOWN_BLOCK_SET]
    for name in sorted(names):
        found.unknown[name] += 1
        found.first_seen.setdefault(name, number)


def read_transcript(path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> TranscriptFile:
    """Every line of a transcript file that parses; the others are named, never fatal. A
    line over `max_line_bytes` is not parsed (its number is kept); bytes that are not UTF-8
    are replaced, a byte-order mark is skipped."""
    found = TranscriptFile(path)
    raw = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    rows = raw.split(b"\n")
    complete = raw.endswith(b"\n")
    if complete:
        rows.pop()  # the empty string after the final newline
    found.total = len(rows)
    for number, row in enumerate(rows, 1):
        if not row.strip():
            continue
        if len(row) > max_line_bytes:
            found.oversize.append(number)
            continue
        try:
            # orjson reads the escaped text of tool results several times faster than
            # pydantic's own JSON parser; the model then validates the parsed object.
            parsed = _loads(row)
            line = Line.model_validate(parsed)
        except (orjson.JSONDecodeError, ValidationError) as exc:
            if number == len(rows) and not complete:
                found.truncated = number  # still being written: not an error of the file
            else:
                found.malformed.append((number, _why(exc)))
            continue
        found.lines.append((number, line))
        _note_unknown(found, number, parsed, line)
    return found


def _loads(row: bytes) -> Any:
    try:
        return orjson.loads(row)
    except orjson.JSONDecodeError:
        text = row.decode("utf-8", errors="replace")  # a bad byte costs a character, not the line
        if text == row.decode("utf-8", errors="ignore"):
            raise
        return orjson.loads(text)


def _why(exc: ValueError) -> str:
    if not isinstance(exc, ValidationError):
        return "not a JSON object"
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    if first["type"].startswith("json"):
        return "not a JSON object"
    return f"{where}: {first['msg']}" if where else str(first["msg"])
