"""The memory benchmark's params and run as its steps get them (agenteval.benchmarks.base):
the params file loaded with the memory section typed, the suite run with that section."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import benchmark, context, settings_of
from agenteval.benchmarks.memory import run
from agenteval.benchmarks.memory.records import MemoryResults


def params_of(path: Path, sets: Sequence[str] = ()) -> dict[str, Any]:
    return runner.load(benchmark("memory"), path, list(sets))


def run_suite(
    params: dict[str, Any], root: Path, suite: str, ids: Sequence[str] = ()
) -> MemoryResults:
    """The suite `suite` of `params` (only `ids`, when given) through its memory."""
    chosen = params | {"memory": params["memory"] | {"suite": suite, "ids": list(ids)}}
    settings = settings_of(benchmark("memory"), chosen)
    return run.run_suite(settings, context(chosen, root, None).run, root)
