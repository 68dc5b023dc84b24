"""Cases from Claude Code transcripts: each request a person typed, with what the reference
assistant finally said for it and the tools it used.

A transcript is walked in file order. A request opens an exchange; the assistant's lines and
the tool results after it belong to that exchange until the next line that ends it (another
request, or machinery that ends it: see `rules.read_user_text`). Hook feedback keeps it
open, because the assistant carries on with the same request; the reference answer is then
the final text before the feedback followed by the final text after it. A follow-up (rules
`is_follow_up`) carries the exchanges before it as context. Every line ends up either used
by a case or dropped with a reason, and the dataset summary counts both.
"""

from __future__ import annotations

import os
import stat
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agenteval import heap
from agenteval.benchmarks.sessions import rules
from agenteval.benchmarks.sessions.rules import Drop
from agenteval.benchmarks.sessions.transcript import (
    MAX_LINE_BYTES,
    Line,
    TranscriptFile,
    read_transcript,
)
from agenteval.fileio import sha256_text
from agenteval.schema.sessions import (
    DatasetSummary,
    DroppedLines,
    Exchange,
    Reference,
    SessionCase,
    Source,
    ToolUse,
)

MACHINERY_TYPES = {"summary": Drop.METADATA, "file-history-snapshot": Drop.METADATA,
                   "queue-operation": Drop.METADATA, "system": Drop.SYSTEM}  # fmt: skip
TARGET_KEYS = ("file_path", "notebook_path", "path", "command", "pattern", "url", "query",
               "description", "prompt")  # fmt: skip
CASE_ID_CHARS = 12
# Fewer files than this per worker are read in this process: starting workers costs more.
PARALLEL_MIN_FILES = 32
BATCHES_PER_WORKER = 4


class ExtractError(ValueError):
    """A selection that cannot be read (no transcripts folder, unknown project)."""


@dataclass
class Options:
    project: str | None = None
    since: datetime | None = None
    limit: int | None = None
    max_line_bytes: int = MAX_LINE_BYTES


@dataclass
class _Exchange:
    """The request being answered, and everything the assistant did for it so far."""

    number: int
    line: Line
    request: str
    context: list[Exchange]
    follow_up: bool
    lines: list[tuple[int, str]] = field(default_factory=list)  # (line, role)
    finished: list[str] = field(default_factory=list)  # final texts before hook feedback
    texts: list[str] = field(default_factory=list)  # text of the latest assistant message
    message_id: str | None = None
    tools: list[ToolUse] = field(default_factory=list)
    interrupted: bool = False
    oversize: bool = False  # one of its lines was over sessions.max_line_bytes

    def say(self, line: Line) -> None:
        assert line.message is not None
        texts = line.message.texts()
        for name, arguments in line.message.tool_uses():
            self.tools.append(ToolUse(name=name, target=tool_target(arguments)))
        if not texts:
            return
        if line.message.id is None or line.message.id != self.message_id:
            self.texts = []  # a new message: what it says replaces the earlier narration
        self.message_id = line.message.id
        self.texts += texts

    def end_segment(self) -> None:
        if self.texts:
            self.finished.append("\n\n".join(self.texts))
        self.texts, self.message_id = [], None

    def answer(self) -> str:
        self.end_segment()
        return "\n\n".join(self.finished).strip()


@dataclass
class Found:
    """A case and the lines it is made of (for the drop counts if it is later left out)."""

    case: SessionCase
    lines: list[tuple[int, str]]
    file: str
    uuid: str | None = None  # the request's message uuid: the same message in two files


@dataclass
class Extraction:
    cases: list[Found] = field(default_factory=list)
    dropped: dict[str, dict[str, list[int]]] = field(default_factory=dict)
    used: Counter[str] = field(default_factory=Counter)
    files: int = 0
    lines: int = 0
    truncated_files: int = 0
    warnings: list[str] = field(default_factory=list)
    unknown: Counter[str] = field(default_factory=Counter)
    unknown_where: dict[str, str] = field(default_factory=dict)

    def drop(self, file: str, number: int, reason: Drop | str) -> None:
        self.dropped.setdefault(file, {}).setdefault(str(reason), []).append(number)

    def summary(self) -> DatasetSummary:
        counts: Counter[str] = Counter()
        for reasons in self.dropped.values():
            for reason, numbers in reasons.items():
                counts[reason] += len(numbers)
        warnings = list(self.warnings)
        for name, n in sorted(self.unknown.items()):
            warnings.append(
                f"{self.unknown_where[name]}: unknown {name} on {n} line(s): a newer transcript "
                "format? read as far as it is known"
            )
        return DatasetSummary(
            files=self.files,
            lines=self.lines,
            cases=len(self.cases),
            used=dict(sorted(self.used.items())),
            dropped=dict(sorted(counts.items())),
            truncated_files=self.truncated_files,
            warnings=warnings,
        )

    def dropped_lines(self) -> list[DroppedLines]:
        return [
            DroppedLines(file=f, reasons={r: sorted(n) for r, n in sorted(reasons.items())})
            for f, reasons in sorted(self.dropped.items())
        ]


def tool_target(arguments: dict[str, Any]) -> str | None:
    for key in TARGET_KEYS:
        value = arguments.get(key)
        if isinstance(value, str) and value.strip():
            text = " ".join(value.split())
            return text[: rules.TOOL_TARGET_CHARS]
    return None


def _not_a_reply(line: Line) -> Drop | None:
    """Why an assistant line is no model's reply (an API error, a synthetic stand-in)."""
    assert line.message is not None
    if line.is_api_error_message:
        return Drop.API_ERROR
    if line.message.model == rules.SYNTHETIC_MODEL:
        return Drop.SYNTHETIC
    texts = line.message.texts()
    if texts and all(t.strip() in rules.SYNTHETIC_TEXTS for t in texts):
        return Drop.SYNTHETIC
    return None


def case_id(session_id: str, uuid: str) -> str:
    return "cc-" + sha256_text(f"{session_id}:{uuid}")[:CASE_ID_CHARS]


def user_text(line: Line) -> tuple[str, bool, bool]:
    """(typed text, holds an image, only tool results) of a user line."""
    assert line.message is not None
    kinds = line.message.kinds()
    text = line.message.text()
    image = "image" in kinds
    return text, image, "tool_result" in kinds and not text.strip() and not image


class _Walk:
    """One transcript file walked line by line into cases and drops."""

    def __init__(self, found: TranscriptFile, rel: str, project: str, out: Extraction) -> None:
        self.found, self.rel, self.project, self.out = found, rel, project, out
        self.open: _Exchange | None = None
        # The chain a follow-up continues: the latest request's context plus its exchange,
        # or None when that request was dropped or a /clear came after it.
        self.chain: list[Exchange] | None = None

    def run(self) -> None:
        if self.found.truncated is not None:
            self.out.drop(self.rel, self.found.truncated, Drop.TRUNCATED)
        for number, why in self.found.malformed:
            self.out.drop(self.rel, number, Drop.MALFORMED)
            self.out.warnings.append(f"{self.rel}:{number}: {why}; line skipped")
        oversize = sorted(self.found.oversize, reverse=True)
        for number, line in self.found.lines:
            while oversize and oversize[-1] < number:
                self.oversize(oversize.pop())
            self.line(number, line)
        for number in reversed(oversize):
            self.oversize(number)
        self.close()

    def oversize(self, number: int) -> None:
        """A line over the cap: dropped, and the exchange it belongs to with it."""
        self.out.drop(self.rel, number, Drop.OVERSIZE_LINE)
        if self.open is not None:
            self.open.oversize = True

    def line(self, number: int, line: Line) -> None:
        if line.type in MACHINERY_TYPES:
            self.out.drop(self.rel, number, MACHINERY_TYPES[line.type])
        elif line.type not in ("user", "assistant") or line.message is None:
            self.out.drop(self.rel, number, Drop.UNKNOWN_TYPE)
            key = f"line type {line.type!r}"
            self.out.unknown[key] += 1
            self.out.unknown_where.setdefault(key, f"{self.rel}:{number}")
        elif line.is_sidechain:
            self.out.drop(self.rel, number, Drop.SIDECHAIN)
        elif line.type == "assistant" and (reason := _not_a_reply(line)) is not None:
            self.out.drop(self.rel, number, reason)  # never a reference answer
        elif line.type == "assistant":
            self.attach(number, "answer", line)
        else:
            self.user(number, line)

    def attach(self, number: int, role: str, line: Line | None = None) -> None:
        if self.open is None:
            self.out.drop(self.rel, number, Drop.ORPHAN)
            return
        self.open.lines.append((number, role))
        if line is not None:
            self.open.say(line)

    def user(self, number: int, line: Line) -> None:
        text, image, results_only = user_text(line)
        text = rules.IDE_TAGS.sub("", text)
        if results_only:
            self.attach(number, "tool_result")
            return
        if line.is_compact_summary:
            self.out.drop(self.rel, number, Drop.COMPACT_SUMMARY)
            self.close()
            return
        verdict = rules.read_user_text(text)
        if verdict.drop is None and image:
            verdict = rules.Verdict(Drop.IMAGE, closes=True)
        elif verdict.drop is None and line.is_meta:
            verdict = rules.Verdict(Drop.IS_META, closes=False)
        if verdict.drop is Drop.HOOK_FEEDBACK and self.open is not None:
            self.open.end_segment()
        if verdict.drop is Drop.INTERRUPTED and self.open is not None:
            self.open.interrupted = True
        if verdict.drop is not None:
            self.out.drop(self.rel, number, verdict.drop)
            if verdict.closes:
                self.close()
            if rules.clears_context(text):
                self.chain = None
            return
        self.close()
        follow_up = rules.is_follow_up(text)
        context = (self.chain or [])[-rules.FOLLOWUP_MAX_CONTEXT :] if follow_up else []
        self.open = _Exchange(number, line, text.strip(), context, follow_up)

    def close(self) -> None:
        done, self.open = self.open, None
        if done is None:
            return
        answer = done.answer()
        reason = None
        if done.oversize:
            reason = Drop.OVERSIZE_LINE
        elif done.interrupted:
            reason = Drop.INTERRUPTED
        elif done.follow_up and self.chain is None:
            reason = Drop.FOLLOWUP_WITHOUT_CONTEXT
        elif not answer:
            reason = Drop.NO_REFERENCE
        if reason is not None:
            for number in [done.number, *(n for n, _ in done.lines)]:
                self.out.drop(self.rel, number, reason)
            self.chain = None
            return
        case = self.case(done, answer)
        self.chain = [*case.context, Exchange(request=case.request, answer=answer)]
        lines = [(done.number, "request"), *done.lines]
        self.out.cases.append(Found(case, lines, self.rel, done.line.uuid))

    def case(self, done: _Exchange, answer: str) -> SessionCase:
        line = done.line
        tools = len(done.tools)
        why = f"a request typed by the user, answered in text after {tools} tool call(s)"
        if done.context:
            why += f"; a follow-up carrying {len(done.context)} earlier exchange(s)"
        session = line.session_id or self.found.path.stem
        return SessionCase(
            id=case_id(session, line.uuid or f"{self.rel}:{done.number}"),
            session_id=session,
            project=self.project,
            cwd=line.cwd,
            timestamp=line.timestamp,
            request=done.request,
            context=list(done.context),
            reference=Reference(answer=answer, tools=done.tools),
            kept_because=why,
            source=Source(file=self.rel, line=done.number),
        )


def transcript_files(root: Path, project: str | None) -> list[Path]:
    """The session files to read: <root>/<project>/*.jsonl (or root itself as one project);
    every name, regular file or not (`regular_files` sorts them)."""
    if not root.is_dir():
        raise ExtractError(f"no transcripts folder at {root}")
    if any(root.glob("*.jsonl")):
        folders = [root]
    else:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    if project is not None:
        wanted = project_folder_name(project)
        folders = [f for f in folders if f.name in (project, wanted)]
        if not folders:
            known = ", ".join(sorted(p.name for p in root.iterdir() if p.is_dir())[:12])
            raise ExtractError(f"--project {project}: no such project under {root} ({known})")
    return [p for folder in folders for p in sorted(folder.glob("*.jsonl"))]


def regular_files(paths: list[Path]) -> tuple[list[Path], Counter[str]]:
    """The regular files among `paths` (a symlink to one counts), and what the others are:
    a directory, a broken symlink or a FIFO named *.jsonl is skipped, never opened."""
    kept: list[Path] = []
    skipped: Counter[str] = Counter()
    for path in paths:
        try:
            mode = path.stat().st_mode
        except OSError:
            skipped["broken symlink" if path.is_symlink() else "unreadable"] += 1
            continue
        if stat.S_ISREG(mode):
            kept.append(path)
        else:
            skipped["directory" if stat.S_ISDIR(mode) else "not a regular file"] += 1
    return kept, skipped


def project_folder_name(project: str) -> str:
    """Claude Code's folder name for a repository path: every / and . becomes -."""
    return project.replace("/", "-").replace(".", "-") if "/" in project else project


def read_file(path: Path, root: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Extraction:
    """One transcript file's cases, drops and counts (a worker's unit of work), the
    collector paused (`heap.paused`: what a file allocates holds no cycle)."""
    with heap.paused():
        return _read_file(path, root, max_line_bytes)


def _read_file(path: Path, root: Path, max_line_bytes: int) -> Extraction:
    out = Extraction()
    found = read_transcript(path, max_line_bytes)
    rel = path.relative_to(root).as_posix()
    out.files, out.lines = 1, found.total
    out.truncated_files = int(found.truncated is not None)
    for name, n in found.unknown.items():
        out.unknown[name] += n
        out.unknown_where.setdefault(name, f"{rel}:{found.first_seen[name]}")
    _Walk(found, rel, path.parent.name, out).run()
    return out


def merge(into: Extraction, part: Extraction) -> None:
    into.cases += part.cases
    for file, reasons in part.dropped.items():
        for reason, numbers in reasons.items():
            into.dropped.setdefault(file, {}).setdefault(reason, []).extend(numbers)
    into.files += part.files
    into.lines += part.lines
    into.truncated_files += part.truncated_files
    into.warnings += part.warnings
    into.unknown.update(part.unknown)
    for name, where in part.unknown_where.items():
        into.unknown_where.setdefault(name, where)


def _read_batch(paths: list[Path], root: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Extraction:
    out = Extraction()
    for path in paths:
        merge(out, read_file(path, root, max_line_bytes))
    return out


def read_all(paths: list[Path], root: Path, max_line_bytes: int = MAX_LINE_BYTES) -> Extraction:
    """Every file, in file order; many files are read by one process per core (each file
    is independent, and parsing is CPU-bound), the results merged in the same order."""
    workers = min(os.cpu_count() or 1, len(paths) // PARALLEL_MIN_FILES)
    if workers < 2:
        return _read_batch(paths, root, max_line_bytes)
    from concurrent.futures import ProcessPoolExecutor

    size = -(-len(paths) // (workers * BATCHES_PER_WORKER))
    batches = [paths[i : i + size] for i in range(0, len(paths), size)]
    out = Extraction()
    with ProcessPoolExecutor(workers) as pool:
        caps = [max_line_bytes] * len(batches)
        for part in pool.map(_read_batch, batches, [root] * len(batches), caps):
            merge(out, part)
    return out


def extract(root: Path, options: Options) -> Extraction:
    # Paused here too: the cases coming back from the workers, unpickled and merged, are
    # the same cycle-free objects.
    with heap.paused():
        return _extract(root, options)


def _extract(root: Path, options: Options) -> Extraction:
    named = transcript_files(root, options.project)
    paths, skipped = regular_files(named)
    out = read_all(paths, root, options.max_line_bytes)
    if skipped:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(skipped.items()))
        out.warnings.append(f"{root}: skipped {sum(skipped.values())} *.jsonl name(s): {kinds}")
    if not named:
        out.warnings.append(
            f"{root}: no transcripts (*.jsonl) found here or in its project folders; "
            "Claude Code keeps them under ~/.claude/projects (set sessions.transcripts)"
        )
    _dedupe(out)
    for item in out.cases:
        for _, role in item.lines:
            out.used[role] += 1
    select(out, options)
    return out


def _dedupe(out: Extraction) -> None:
    """One case per request message: a session copied or resumed into another file repeats
    its lines with the same uuids."""
    seen: set[str] = set()
    kept = []
    for item in out.cases:
        if item.uuid is not None and item.uuid in seen:
            for number, _role in item.lines:
                out.drop(item.file, number, Drop.DUPLICATE)
            continue
        if item.uuid is not None:
            seen.add(item.uuid)
        kept.append(item)
    out.cases = kept


def _instant(stamp: str | None) -> datetime | None:
    if not stamp:
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _leave_out(out: Extraction, item: Found, reason: Drop) -> None:
    for number, role in item.lines:
        out.used[role] -= 1
        out.drop(item.file, number, reason)


def select(out: Extraction, options: Options) -> None:
    """--since, then --limit (the most recent cases); the rest dropped with the reason."""
    kept = []
    for item in out.cases:
        when = _instant(item.case.timestamp)
        if options.since is not None and (when is None or when < options.since):
            _leave_out(out, item, Drop.BEFORE_SINCE)
        else:
            kept.append(item)
    kept.sort(key=lambda f: (f.case.timestamp or "", f.file, f.case.source.line), reverse=True)
    if options.limit is not None:
        for item in kept[options.limit :]:
            _leave_out(out, item, Drop.OVER_LIMIT)
        kept = kept[: options.limit]
    out.cases = sorted(kept, key=lambda f: (f.case.timestamp or "", f.file, f.case.source.line))
    out.used = +out.used  # drop zero counts
