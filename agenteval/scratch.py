"""Temporary copies, and how a process ends so that none is left behind and nothing hangs.

Every temporary folder the project makes comes from here (`temporary_folder` for a block,
`make_folder` for one that outlives a call) and is known until it is removed. `remove_all`
removes what is left at exit; `end_on_signals` makes SIGTERM and SIGHUP end the process
through SystemExit, as SIGINT ends it through KeyboardInterrupt, so `finally` blocks unwind,
the folders go, and a run's files committed so far stay resumable. The entry points (the
console script, every stage) call it once; SIGKILL alone can leave a folder. A reader that
closes standard output early (`agenteval ... | head -1`) ends the process the same way:
`output_closed` says so in one line on stderr, status 2, no traceback.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

LIVE: set[Path] = set()
_LOCK = threading.Lock()


# Held off while a folder is made and recorded: a Ctrl-C or SIGTERM landing between the two
# would leave a folder nobody knows to remove (a copy's first folder appears just then).
_ENDING = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


def make_folder(prefix: str, dir: Path | str | None = None) -> Path:
    """A new temporary folder, removed by `discard` or at the latest when the process ends."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _ENDING)
    try:
        folder = Path(tempfile.mkdtemp(prefix=prefix, dir=dir))
        with _LOCK:
            LIVE.add(folder)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    return folder


def discard(folder: Path) -> None:
    """Remove a folder `make_folder` made (read-only contents included) and forget it."""
    shutil.rmtree(folder, onerror=_writable_then_retry)  # onexc from Python 3.12
    with _LOCK:
        LIVE.discard(folder)


@contextmanager
def temporary_folder(prefix: str, dir: Path | str | None = None) -> Iterator[str]:
    """tempfile.TemporaryDirectory's drop-in (its path as text), known to `remove_all`."""
    folder = make_folder(prefix, dir)
    try:
        yield str(folder)
    finally:
        discard(folder)


def remove_all() -> None:
    """Remove every folder still known (an exit path that skipped its own cleanup)."""
    with _LOCK:
        left = list(LIVE)
    for folder in left:
        discard(folder)


atexit.register(remove_all)


def end_on_signals() -> None:
    """SIGTERM and SIGHUP raise SystemExit(128 + signal) in the main thread (no-op
    elsewhere): the process unwinds like on Ctrl-C instead of vanishing mid-copy."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


PIPE_CLOSED_STATUS = 2


def stdout_closed() -> bool:
    """Standard output is a pipe whose reader has gone (poll reports an error on it)."""
    try:
        poller = select.poll()
        poller.register(sys.__stdout__.fileno() if sys.__stdout__ else 1, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def output_closed() -> NoReturn:
    """End after a write to a closed standard output: later writes (and the interpreter's
    last flush) go nowhere, one line on stderr says why; the files written so far stay."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    print("stopped: standard output was closed (a closed pipe); files written so far are kept, "
          "run again to resume", file=sys.stderr)  # fmt: skip
    sys.exit(PIPE_CLOSED_STATUS)


def _writable_then_retry(function: object, path: str, _error: object) -> None:
    """rmtree's handler: a read-only file or folder (a snapshot) is made writable and
    removed; a path already gone is fine."""
    try:
        parent = os.path.dirname(path)
        os.chmod(parent, os.stat(parent).st_mode | stat.S_IWUSR | stat.S_IXUSR)
        if os.path.isdir(path) and not os.path.islink(path):
            os.chmod(path, stat.S_IRWXU)
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        return
