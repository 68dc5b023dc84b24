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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agenteval.engine import Dispatch


@dataclass
class ExecutionReport:
    """What the executor saw: how many processes ran units and which units ran again."""

    executor: str
    workers: int = 1
    retried: dict[str, int] = field(default_factory=dict)  # unit label -> attempts (> 1)

    def line(self) -> str:
        if self.executor == "local":
            return "local: every unit ran in this process"
        again = f"; {len(self.retried)} unit(s) ran again after losing their worker"
        return f"{self.executor}: units ran in {self.workers} worker process(es)" + (
            again if self.retried else ""
        )


class Executor(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def slots(self) -> int:
        """Units in flight at once."""

    @property
    def dispatch(self) -> Dispatch | None:
        """How a unit runs elsewhere; None: the engine runs it itself."""

    def report(self) -> ExecutionReport: ...


@dataclass
class LocalExecutor:
    slots: int
    name: str = "local"
    dispatch: Dispatch | None = None

    def report(self) -> ExecutionReport:
        return ExecutionReport("local")


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
