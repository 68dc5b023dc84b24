"""Shell commands inside a task's copy: a time limit that really fires, output kept either way.

Each command runs in its own process group, so a timeout kills the test runner *and* what it
started (a hanging test's subprocesses included); in the sandbox (tasks.sandbox) that kill
ends bwrap, whose pid namespace takes everything inside with it. Output that arrived before
the kill is kept; long output is cut in the middle, keeping its head and its tail (where
pytest's summary is).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox

OUTPUT_CHARS = 16_000
HEAD_SHARE = 0.3
DRAIN_S = 2.0  # after a kill, how long to wait for the pipe to close
# `python -m pytest` as the evaluator runs it (the checks, and the recorder's runs for the
# agent): `-P` keeps the project folder off sys.path until pytest is imported from the
# toolchain, then puts it first as `-m` would, so a `pytest.py` in the tree is never pytest
# and the project imports as it does under `python -m pytest`.
PYTEST_MAIN = (
    "-P",
    "-c",
    "import os, sys, pytest; sys.path.insert(0, os.getcwd()); raise SystemExit(pytest.main())",
)


@dataclass
class CommandResult:
    exit_code: int | None
    output: str
    timed_out: bool
    seconds: float

    def describe(self) -> str:
        if self.timed_out:
            head = f"timed out after {self.seconds:.0f} s: killed (with everything it started)"
        else:
            head = f"exit code {self.exit_code}"
        return f"{head}\n{self.output}" if self.output else head


def cut(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    tail = limit - head
    dropped = len(text) - head - tail
    return f"{text[:head]}\n[... {dropped} characters cut ...]\n{text[-tail:]}"


class Capped:
    """A command's output as it arrives, keeping only its first and last bytes (about 4 bytes
    a character of `limit`): a command that floods its output (`yes`, a test printing in a
    loop) costs no more memory than one that prints `limit` characters; the middle is
    counted, not kept."""

    def __init__(self, limit: int = OUTPUT_CHARS) -> None:
        self.head_max = int(limit * 4 * HEAD_SHARE)
        self.tail_max = limit * 4 - self.head_max
        self.head, self.tail, self.dropped = bytearray(), bytearray(), 0

    def add(self, chunk: bytes) -> None:
        room = max(self.head_max - len(self.head), 0)
        self.head += chunk[:room]
        self.tail += chunk[room:]
        if len(self.tail) > self.tail_max:
            self.dropped += len(self.tail) - self.tail_max
            del self.tail[: len(self.tail) - self.tail_max]

    def read_from(self, pipe: IO[bytes]) -> None:
        """Everything of `pipe` until it ends (in a thread of its own)."""
        while chunk := pipe.read(65536):
            self.add(chunk)

    def value(self) -> bytes:
        marker = f"\n[... {self.dropped} bytes cut ...]\n".encode() if self.dropped else b""
        return bytes(self.head) + marker + bytes(self.tail)


async def read_capped(pipe: asyncio.StreamReader, limit: int) -> bytes:
    kept = Capped(limit)
    while chunk := await pipe.read(65536):
        kept.add(chunk)
    return kept.value()


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _feed(pipe: asyncio.StreamWriter, data: bytes) -> None:
    """`data` to a child's stdin, then end it; a child that stops reading loses the rest."""
    with contextlib.suppress(OSError):  # BrokenPipeError, ConnectionResetError
        pipe.write(data)
        await pipe.drain()
        pipe.close()


async def run_command(
    command: str | list[str],
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    limit: int = OUTPUT_CHARS,
    sandbox: Sandbox = NO_SANDBOX,
    writable: Sequence[Path] = (),
    pass_fds: Sequence[int] = (),
    stdin: bytes = b"",
) -> CommandResult:
    """Run `command` (a bash command line, or argv) with stdout and stderr merged, in
    `sandbox` with `cwd` (and `writable`) its only writable folders; `pass_fds` stay open
    in it (a pipe the evaluator reads); `stdin` is its input (none by default)."""
    argv = ["bash", "-c", command] if isinstance(command, str) else list(command)
    argv = sandbox.wrap(argv, cwd, writable=[cwd, *writable])
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
    assert proc.stdout is not None
    feeder = None
    if stdin:
        assert proc.stdin is not None
        feeder = asyncio.ensure_future(_feed(proc.stdin, stdin))
    reader = asyncio.ensure_future(read_capped(proc.stdout, limit))
    timed_out = False
    try:
        await asyncio.wait_for(proc.wait(), timeout_s)
    except TimeoutError:
        timed_out = True
        _kill_group(proc.pid)
        await proc.wait()
    except asyncio.CancelledError:  # the task's cap: leave nothing running behind
        _kill_group(proc.pid)
        reader.cancel()
        if feeder is not None:
            feeder.cancel()
        raise
    _kill_group(proc.pid)  # a background child still holding the pipe
    if feeder is not None:
        feeder.cancel()  # a child that never read its input
    try:
        raw = await asyncio.wait_for(reader, DRAIN_S)
    except TimeoutError:
        raw = b""
    text = raw.decode("utf-8", errors="replace")
    seconds = time.perf_counter() - start
    return CommandResult(
        None if timed_out else proc.returncode, cut(text, limit), timed_out, seconds
    )
