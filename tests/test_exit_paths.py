"""How a process ends: a signal in the middle of a temporary copy leaves no copy behind, and a
reader that closes standard output early (`agenteval ... | head -1`) ends the command with
one line and status 2, no traceback and no hang. Real processes, real signals, real pipes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agenteval import scratch

ROOT = Path(__file__).resolve().parents[1]

# A mini entry point, as the console script and every stage are: end_on_signals, then the
# tasks benchmark's copy of a project and its snapshot (agenteval.scratch folders).
CHILD = """
import sys, time
from pathlib import Path
from agenteval import scratch
scratch.end_on_signals()
from agenteval.benchmarks.tasks.workspace import prepare
workspace = prepare(Path(sys.argv[1]), None)
print("copied", flush=True)
time.sleep(120)
"""


def source_tree(folder: Path, files: int = 1500) -> Path:
    for i in range(files):
        path = folder / f"pkg{i % 30}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"VALUE = {i}\n" * 20)
    return folder


def default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_mid_copy_leaves_no_temporary_copy(tmp_path: Path, signum: int) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    source = source_tree(tmp_path / "project")
    env = dict(os.environ, TMPDIR=str(temp))
    # SIGINT as a terminal's Ctrl-C delivers it: a suite launched in the background by a shell
    # without job control inherits SIGINT ignored, and Python then keeps ignoring it.
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(source)], cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=default_sigint)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(temp.glob("agenteval-task-*")):  # the copy has begun
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the copy never started"
            time.sleep(0.01)
        child.send_signal(signum)
        _, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert list(temp.iterdir()) == [], list(temp.iterdir())  # neither copy nor snapshot
    if signum == signal.SIGTERM:  # unwound like Ctrl-C, not killed where it stood
        assert child.returncode == 128 + signum and b"Traceback" not in err, err.decode()


def test_folders_are_known_until_removed(tmp_path: Path) -> None:
    with scratch.temporary_folder("agenteval-t-", tmp_path) as made:
        folder = Path(made)
        (folder / "ro").mkdir()
        (folder / "ro/file").write_text("x")
        (folder / "ro/file").chmod(0o400)
        (folder / "ro").chmod(0o500)  # read-only, like a task's snapshot
        assert folder in scratch.LIVE
    assert not folder.exists() and folder not in scratch.LIVE
    kept = scratch.make_folder("agenteval-t-", tmp_path)
    scratch.remove_all()  # what runs at exit
    assert not kept.exists() and not scratch.LIVE


def closed_stdout(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run `argv` with standard output a pipe whose reader left before the first byte."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(argv, cwd=ROOT, stdout=write, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write)


@pytest.mark.parametrize(
    "argv",
    [
        [sys.executable, "-m", "agenteval", "audit"],
        [sys.executable, "-c", "from stages.common import run_stage; "
         "run_stage(lambda: print('score: ' + 'x' * 100000) or 0)"],
    ],
    ids=["command", "stage"],
)  # fmt: skip
def test_a_closed_pipe_ends_in_one_line(argv: list[str]) -> None:
    done = closed_stdout(argv)
    said = done.stderr.decode()
    assert done.returncode == 2, said
    assert "standard output was closed" in said and "Traceback" not in said, said
    assert "Exception ignored" not in said, said
