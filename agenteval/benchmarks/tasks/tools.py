"""The file, search and shell tools of the project's own harness, confined to one copy.

The file tools run in this process behind the path boundary; `run` runs in the run's sandbox
(agenteval.benchmarks.tasks.sandbox), where the copy is the one writable folder and the
answer key is not there at all. Every call, refused or not, lands in the tool record
(`ToolRecord`) the moment it finishes, so a task cut off at its time cap keeps everything it
did up to then. The scripted harness
replays reference solutions through these same tools, and the chat harness offers them to a
model, so both produce the same record.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks.boundary import OutsideWorkspace, confine, relative
from agenteval.benchmarks.tasks.commands import OUTPUT_CHARS, cut, run_command
from agenteval.benchmarks.tasks.graded import IGNORED_DIRS
from agenteval.benchmarks.tasks.recorder import PytestRecorder
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox
from agenteval.llm.types import ToolSpec
from agenteval.schema.task_records import Answer, TaskToolCall

READ_CHARS = 20_000  # one read_file call; the rest by offset
LIST_ENTRIES = 400
SEARCH_MATCHES = 100
SEARCH_FILE_BYTES = 8_000_000


@dataclass
class ToolRecord:
    """What the agent did, in order: tool calls and answers (with their position)."""

    calls: list[TaskToolCall] = field(default_factory=list)
    answers: list[Answer] = field(default_factory=list)

    def add(self, name: str, arguments: Mapping[str, Any], **outcome: Any) -> TaskToolCall:
        call = TaskToolCall(index=len(self.calls), name=name, arguments=dict(arguments), **outcome)
        self.calls.append(call)
        return call

    def answer(self, text: str) -> None:
        if text.strip():
            self.answers.append(Answer(text=text, after_call=len(self.calls)))


def _string(arguments: Mapping[str, Any], name: str, default: str | None = None) -> str:
    value = arguments.get(name, default)
    if not isinstance(value, str):
        raise ValueError(f"argument {name!r} must be a string")
    return value


def _int(arguments: Mapping[str, Any], name: str, default: int) -> int:
    value = arguments.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"argument {name!r} must be a whole number")
    return int(value)


SPECS = [
    ToolSpec(
        name="read_file",
        description=f"Read a text file of the project (up to {READ_CHARS} characters from "
        "`offset`).",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
            "required": ["path"],
        },
    ),
    ToolSpec(
        name="write_file",
        description="Create or overwrite a file of the project with `content`.",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    ToolSpec(
        name="edit_file",
        description="Replace the one occurrence of `old` in a file with `new`.",
        parameters={
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "old": {"type": "string"},
                "new": {"type": "string"},
            },
            "required": ["path", "old", "new"],
        },
    ),
    ToolSpec(
        name="list_files",
        description="List the files under a folder of the project (default: all of it).",
        parameters={"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    ToolSpec(
        name="search",
        description="Find lines matching a regular expression in the project's text files.",
        parameters={
            "type": "object",
            "properties": {
                "pattern": {"type": "string"},
                "path": {"type": "string"},
                "glob": {"type": "string", "description": "e.g. *.py"},
            },
            "required": ["pattern"],
        },
    ),
    ToolSpec(
        name="run",
        description="Run a shell command in the project folder (bash); returns exit code and "
        "output. Commands that run too long are killed.",
        parameters={
            "type": "object",
            "properties": {"command": {"type": "string"}},
            "required": ["command"],
        },
    ),
]


class WorkspaceTools:
    def __init__(
        self,
        root: Path,
        env: Mapping[str, str],
        command_timeout_s: float,
        record: ToolRecord,
        sandbox: Sandbox = NO_SANDBOX,
        recorder: PytestRecorder | None = None,
    ) -> None:
        self.root = root.resolve()
        self.recorder = recorder  # None: no pytest is observed, so nothing is verified
        self.env = dict(env)
        self.command_timeout_s = command_timeout_s
        self.record = record
        self.sandbox = sandbox
        self._handlers = {
            "read_file": self._read,
            "write_file": self._write,
            "edit_file": self._edit,
            "list_files": self._list,
            "search": self._search,
        }

    async def call(self, name: str, arguments: Mapping[str, Any]) -> TaskToolCall:
        start = time.perf_counter()
        try:
            if name == "run":
                return await self._run(arguments, start)
            handler = self._handlers.get(name)
            if handler is None:
                raise ValueError(f"no tool named {name!r}")
            output = handler(arguments)
        except (OutsideWorkspace, ValueError, OSError) as exc:
            message = f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc)
            return self.record.add(
                name, arguments, ok=False, output=message, error=message, latency_ms=_ms(start)
            )
        return self.record.add(name, arguments, output=output, latency_ms=_ms(start))

    async def _run(self, arguments: Mapping[str, Any], start: float) -> TaskToolCall:
        """A shell command, observed: any pytest it starts (`pytest`, `python -m pytest`) is
        run by the evaluator's recorder, which keeps pytest's own report where no command can
        reach it; its text output verifies nothing (rules.verified)."""
        command = _string(arguments, "command")
        mark = self.recorder.mark() if self.recorder is not None else 0
        done = await run_command(
            command, self.root, self.env, self.command_timeout_s, sandbox=self.sandbox
        )
        observed = None
        if self.recorder is not None:  # in a thread: it may wait for a run it stopped
            observed = await asyncio.to_thread(self.recorder.since, mark)
        return self.record.add(
            "run",
            arguments,
            ok=not done.timed_out and done.exit_code == 0,
            output=done.describe(),
            exit_code=done.exit_code,
            timed_out=done.timed_out,
            pytest_report=observed,
            latency_ms=_ms(start),
        )

    def _read(self, arguments: Mapping[str, Any]) -> str:
        path = confine(self.root, _string(arguments, "path"))
        offset = max(0, _int(arguments, "offset", 0))
        text = path.read_text(encoding="utf-8", errors="replace")
        part = text[offset : offset + READ_CHARS]
        if offset + READ_CHARS < len(text) or offset:
            end = offset + len(part)
            return f"[{relative(self.root, path)}: {len(text)} characters; {offset}-{end}]\n{part}"
        return part

    def _write(self, arguments: Mapping[str, Any]) -> str:
        path = confine(self.root, _string(arguments, "path"))
        content = _string(arguments, "content")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return f"wrote {relative(self.root, path)} ({len(content)} characters)"

    def _edit(self, arguments: Mapping[str, Any]) -> str:
        path = confine(self.root, _string(arguments, "path"))
        old, new = _string(arguments, "old"), _string(arguments, "new")
        text = path.read_text(encoding="utf-8")
        count = text.count(old) if old else 0
        if count != 1:
            raise ValueError(f"`old` occurs {count} times in {relative(self.root, path)}; need 1")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")
        return f"edited {relative(self.root, path)}"

    def _files(self, folder: Path, glob: str | None = None) -> list[Path]:
        found = []
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_DIRS)
            for name in sorted(filenames):
                path = Path(dirpath) / name
                if glob and not fnmatch.fnmatch(name, glob):
                    continue
                try:
                    confine(self.root, str(path))  # a link out is not listed, not followed
                except OutsideWorkspace:
                    continue
                found.append(path)
        return found

    def _list(self, arguments: Mapping[str, Any]) -> str:
        folder = confine(self.root, _string(arguments, "path", "."))
        files = self._files(folder)
        shown = [relative(self.root, p) for p in files[:LIST_ENTRIES]]
        more = len(files) - len(shown)
        return "\n".join(shown) + (f"\n[... {more} more files]" if more > 0 else "")

    def _search(self, arguments: Mapping[str, Any]) -> str:
        try:
            pattern = re.compile(_string(arguments, "pattern"))
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        folder = confine(self.root, _string(arguments, "path", "."))
        glob = arguments.get("glob")
        files = [folder] if folder.is_file() else self._files(folder, glob or None)
        hits: list[str] = []
        total = 0
        for path in files:
            if path.stat().st_size > SEARCH_FILE_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            for number, line in enumerate(text.splitlines(), 1):
                if pattern.search(line):
                    total += 1
                    if len(hits) < SEARCH_MATCHES:
                        hits.append(f"{relative(self.root, path)}:{number}: {line[:300]}")
        head = f"{total} matching line(s)" + (
            f", first {SEARCH_MATCHES} shown" if total > SEARCH_MATCHES else ""
        )
        return cut("\n".join([head, *hits]), OUTPUT_CHARS)


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000, 3)
