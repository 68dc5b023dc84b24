"""A probe's command run again with a terminal for its output, as a person would run it.

A program can tell the grader's run from a person's: the grader reads its output through a
pipe, a person sees it on a terminal (`sys.stdout.isatty()`). One that gives the right
answer only when its output is piped passes every piped probe and is wrong where it is
used. So each command probe runs twice, its output on a pipe (checks.run_command) and on a
pseudo-terminal (here), and must meet the probe both times. What is compared is what the
terminal shows: colours and cursor codes dropped, a line rewritten after `\\r` in its last
version (the terminal's output processing is off, so no `\\r` is added). A command that asks
the terminal for its size gets what a fresh one gives; it reads no input from it.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import termios
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from agenteval.benchmarks.tasks.commands import (
    DRAIN_S,
    OUTPUT_CHARS,
    Capped,
    CommandResult,
    _kill_group,
    cut,
)
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox

# Colours and cursor movements (CSI, OSC): a program may colour what a terminal shows
# (pytest does), which is not a different answer.
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def shown(text: str) -> str:
    """What a terminal shows of `text`: escapes dropped, a line rewritten after a carriage
    return shows its last version."""
    lines = ESCAPES.sub("", text).replace("\r\n", "\n").split("\n")
    return "\n".join(line.rstrip("\r").split("\r")[-1] for line in lines)


def _read_terminal(master: int, kept: Capped) -> None:
    """Everything the terminal shows until every writer closed it (EIO), then close it."""
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the last writer is gone
                return
            if not chunk:
                return
            kept.add(chunk)
    finally:
        os.close(master)


def _open_terminal() -> tuple[int, int]:
    master, slave = os.openpty()
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # "\n" stays "\n"
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    return master, slave


def _run(
    argv: list[str], cwd: Path, env: Mapping[str, str], timeout_s: float, started: list[int]
) -> CommandResult:
    master, slave = _open_terminal()
    kept = Capped(OUTPUT_CHARS)
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=slave,
            stderr=slave, start_new_session=True,
        )  # fmt: skip
    except BaseException:
        os.close(master)
        raise
    finally:
        os.close(slave)
    started.append(proc.pid)
    reader = threading.Thread(target=_read_terminal, args=(master, kept), daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
    _kill_group(proc.pid)  # a timeout, or a background child still holding the terminal
    proc.wait()
    reader.join(DRAIN_S)
    text = shown(kept.value().decode("utf-8", errors="replace"))
    seconds = time.perf_counter() - start
    return CommandResult(None if timed_out else proc.returncode, cut(text), timed_out, seconds)


async def run_on_terminal(
    command: str, cwd: Path, env: Mapping[str, str], timeout_s: float,
    sandbox: Sandbox = NO_SANDBOX,
) -> CommandResult:  # fmt: skip
    """`command` (bash) in `sandbox` with `cwd` writable, stdout and stderr a terminal."""
    argv = sandbox.wrap(["bash", "-c", command], cwd, writable=[cwd])
    started: list[int] = []
    try:
        return await asyncio.to_thread(_run, argv, cwd, env, timeout_s, started)
    except asyncio.CancelledError:  # the task's cap: leave nothing running behind
        for pid in started:
            _kill_group(pid)
        raise
