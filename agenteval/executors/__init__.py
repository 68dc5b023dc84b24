"""Where the units of an inference run (scenario x iteration x seed).

    with open_executor(params, root, options) as executor:
        Inference(..., **options, concurrency=executor.slots, dispatch=executor.dispatch)

`local` runs them in this process's event loop (the engine's own path, unchanged); `ray`
fans each unit out as a Ray task (`executors.ray_driver`, `executors.ray_worker`), with one
limiter actor per model endpoint (`executors.coordinator`). Either way the engine decides
which units run and writes every result itself, once, through its group-commit store, so
a worker lost mid-unit costs a retry and never a lost or duplicated transcript. Ray is
imported only when `run.executor: ray` asks for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agenteval.executors.base import ExecutionReport, Executor, LocalExecutor

__all__ = ["ExecutionReport", "Executor", "LocalExecutor", "open_executor"]


@contextmanager
def open_executor(
    params: dict[str, Any], root: Path, options: dict[str, Any]
) -> Iterator[Executor]:
    """The executor `run.executor` names, ready for one inference; released on exit.
    `options` are the UnitRunner's (time limit, budgets), the same in every worker."""
    run = params["run"]
    if run.get("executor", "local") != "ray":
        yield LocalExecutor(slots=int(run.get("concurrency", 4)))
        return
    from agenteval.executors.ray_driver import open_ray

    with open_ray(params, root, options) as executor:
        yield executor
