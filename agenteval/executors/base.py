"""What every executor gives the engine and reports back (see agenteval.executors)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

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
