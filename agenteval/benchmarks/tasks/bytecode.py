"""The toolchain's bytecode for the checks, compiled once a run by the evaluator.

Every check is a fresh interpreter that imports pytest (a coding task needs several: its
suite, the agent's tests apart, each mutant, the equivalent implementation), and the checks
write no bytecode, so where the toolchain was installed without it (uv's default, or
PYTHONDONTWRITEBYTECODE at install) each of them compiles pytest from source again: about
0.3 s CPU of a pytest run's 0.5 s here. The evaluator therefore runs pytest once itself, on
a test file of its own in a folder of its own (no code of any agent), with bytecode going to
a cache folder of its own (PYTHONPYCACHEPREFIX); the checks then run with that prefix, bound
read-only into their sandbox, and bytecode writing still off.

Nothing of the copy is trusted: with a prefix, Python reads bytecode only from the prefix,
never from a `__pycache__` beside a source file, and a bytecode file is used only while its
source's size and time match (the project's files have none there). Only where the checks
run in the sandbox: with `tasks.sandbox: none` the agent's commands could write the folder.
A warm-up that fails leaves the checks as they were (compiling as before): it costs time,
never a verdict.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Mapping
from pathlib import Path

from agenteval import scratch
from agenteval.benchmarks.tasks import stream

WARM_TIMEOUT_S = 60.0
PREFIX = "PYTHONPYCACHEPREFIX"
# What a project's tests commonly touch (fixtures, raises, parametrize, a failing assertion's
# report), so their modules are compiled too.
WARM_TEST = """import pytest


@pytest.mark.parametrize("n", [1, 2])
def test_fixtures(n, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("AGENTEVAL_WARM", str(n))
    (tmp_path / "f").write_text("x")
    print(n)
    assert capsys.readouterr().out == f"{n}\\n"
    with pytest.raises(ValueError, match="x"):
        raise ValueError("x")


def test_failure_report():
    assert {"a": [1, 2]} == {"a": [1, 3]}
"""

_LOCK = threading.Lock()
_PREFIXES: dict[str, Path | None] = {}  # the interpreter found on PATH -> its prefix


def _warm(python: str, env: Mapping[str, str]) -> Path | None:
    prefix = scratch.make_folder("agenteval-pyc-")
    read_end, write_end = os.pipe()
    os.close(read_end)  # the stream is not read: its writes fail quietly
    try:
        with scratch.temporary_folder("agenteval-warm-") as tmp:
            (Path(tmp) / "test_warm.py").write_text(WARM_TEST, encoding="utf-8")
            warm_env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
            argv = [python, *stream.launcher(write_end), "-q", "-p", "no:cacheprovider"]
            # --basetemp: tmp_path's folders go in this folder, not $TMPDIR/pytest-of-USER
            argv += [f"--junitxml={Path(tmp) / 'junit.xml'}", f"--basetemp={Path(tmp) / 'base'}"]
            subprocess.run(
                argv,
                cwd=tmp,
                env={**warm_env, PREFIX: str(prefix)},
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=WARM_TIMEOUT_S,
                pass_fds=(write_end,),
                check=False,
            )
    except (OSError, subprocess.SubprocessError):
        scratch.discard(prefix)
        return None
    finally:
        os.close(write_end)
    return prefix


def toolchain_prefix(env: Mapping[str, str]) -> Path | None:
    """The bytecode folder for the `python` on `env`'s PATH, made on first use (None: no
    such interpreter, or the warm-up could not run)."""
    python = shutil.which("python", path=env.get("PATH"))  # a venv's link: not resolved
    if python is None:
        return None
    with _LOCK:  # tasks grade concurrently: one warm-up per interpreter
        made = _PREFIXES.get(python)
        # scratch.remove_all() in a long-lived process (a test run, a library caller) removes
        # the folder but not this entry: bwrap cannot mount a folder that is gone, so warm again
        if python not in _PREFIXES or (made is not None and not made.is_dir()):
            _PREFIXES[python] = _warm(python, env)
        return _PREFIXES[python]
