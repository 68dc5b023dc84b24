"""The toolchain's bytecode the evaluator compiles once for the checks (tasks.bytecode): it
holds pytest's modules, the checks read it but cannot write it, and a run with it is the
same run (the copy's own `__pycache__` is never what is loaded)."""

from __future__ import annotations

import asyncio
import py_compile
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks import bytecode
from agenteval.benchmarks.tasks.boundary import agent_env
from agenteval.benchmarks.tasks.checks import CHECK_ENV
from agenteval.benchmarks.tasks.commands import run_command
from agenteval.benchmarks.tasks.sandbox import build

ROOT = Path(__file__).resolve().parents[1]
TAG = f"cpython-{sys.version_info.major}{sys.version_info.minor}"


def test_the_prefix_holds_the_toolchain_and_the_checks_cannot_write_it(tmp_path: Path) -> None:
    if shutil.which("bwrap") is None:
        pytest.skip("bwrap is not installed: apt-get install bubblewrap")
    env = {**agent_env(), **CHECK_ENV, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    prefix = bytecode.toolchain_prefix(env)
    assert prefix is not None and bytecode.toolchain_prefix(env) == prefix  # once a run
    assert any(prefix.rglob(f"_pytest/main.{TAG}.pyc"))
    assert not any((tmp_path / "tmp").iterdir())  # the warm-up left nothing in TMPDIR
    # bytecode planted beside the source, never checked against it (unchecked hash): without
    # the prefix Python would load it; with the prefix it is never read
    (tmp_path / "fake.py").write_text("VALUE = 'planted'\n")
    mode = py_compile.PycInvalidationMode.UNCHECKED_HASH
    cfile = tmp_path / "__pycache__" / f"mod.{TAG}.pyc"
    py_compile.compile(str(tmp_path / "fake.py"), cfile=str(cfile), invalidation_mode=mode)
    (tmp_path / "mod.py").write_text("VALUE = 'source'\n")
    sandbox = build("bwrap", root=ROOT)
    sandbox = replace(sandbox.check(), exposed=(*sandbox.exposed, prefix))
    script = (
        "import mod, pathlib, sys; print(mod.VALUE, sys.pycache_prefix == sys.argv[1]); "
        "pathlib.Path(sys.argv[1], 'x').write_text('x')"
    )
    argv = ["python", "-c", script, str(prefix)]
    env[bytecode.PREFIX] = str(prefix)
    result = asyncio.run(run_command(argv, tmp_path, env, 60, sandbox=sandbox))
    assert result.output.startswith("source True"), result.output
    assert "Read-only file system" in result.output and not (prefix / "x").exists()
