"""A full disk ends a run with a clear message within bounded time, never a hang.

The unit test injects the fault at the disk edge (the writer's commit raises ENOSPC) and
runs asyncio.run in a thread joined with a deadline, so the test fails rather than hangs;
the end-to-end test runs `agenteval run` on a real 500 KB tmpfs where this machine lets root
mount one.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agenteval.fileio import GroupCommitWriter, group_commit

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 60


class FullDisk(GroupCommitWriter):
    """The real writer on a disk that is full: every commit fails as the kernel says."""

    def _commit(self, texts: list[tuple[Path, str]]) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")


async def _evaluation(folder: Path) -> None:
    """What the engine does: units write through one writer; one unit, like a unit that
    records a cancel as its outcome, goes on to write after it was cancelled."""
    async with group_commit(folder / ".journal") as real:
        writer = FullDisk(real.journal)

        async def unit(n: int) -> None:
            await writer.write(folder / f"{n}.json", {"n": n})

        async def stubborn() -> None:
            with contextlib.suppress(asyncio.CancelledError):  # swallowed: it writes next
                await asyncio.sleep(30)
            await writer.write(folder / "late.json", {"late": True})

        await asyncio.gather(unit(0), unit(1), stubborn())


def test_a_full_disk_ends_the_run_with_its_error_not_a_hang(tmp_path: Path) -> None:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            asyncio.run(_evaluation(tmp_path))
        except BaseException as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(DEADLINE_S)
    assert not thread.is_alive(), "asyncio.run hung while cancelling after a full disk"
    error = outcome.get("error")
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC, repr(error)


def _tmpfs(folder: Path) -> bool:
    if os.geteuid() != 0:
        return False
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=500k", "tmpfs", str(folder)], capture_output=True
    )
    return done.returncode == 0


def test_agenteval_run_on_a_full_tmpfs_exits_2_and_says_why(tmp_path: Path) -> None:
    full = tmp_path / "full"
    if not _tmpfs(full):
        pytest.skip("no tmpfs can be mounted here (needs root)")
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "agenteval",
                "run",
                "--out",
                str(full / "run"),
                "--set",
                "tracking.enabled=false",
                "--no-progress",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        subprocess.run(["umount", "-l", str(full)], check=False)
    assert done.returncode == 2, done.stderr[-3000:]
    assert "No space left on device" in done.stderr
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
