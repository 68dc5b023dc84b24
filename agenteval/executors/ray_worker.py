"""The body of one Ray task: run one unit of work in a worker process, write nothing.

A worker process keeps, per run, the agent under test and the simulator it built (so a
chat agent's connections are reused across units) and one event loop in a thread of its
own for them; model requests take their slots from the run's limiter actors. The
transcript goes back to the driver, which checks it and writes it, so a worker killed at
any point leaves nothing behind and Ray simply runs its unit again.
"""

from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.engine import Unit, UnitRunner
from agenteval.llm.limits import GLOBAL_LIMITS
from agenteval.simulators.base import make_simulator
from agenteval.targets.base import make_target

TASK_NAME = "agenteval-unit"  # the worker's process title while it runs a unit: ray::<this>


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to run units of one run (put once in Ray's object store)."""

    token: str  # unique per run: a worker reused by a later run builds afresh
    params: dict[str, Any]
    root: str  # the repository, at the same path on every node
    coordinator: Any  # the run's RunCoordinator actor
    options: dict[str, Any] = field(default_factory=dict)  # UnitRunner keyword arguments


def label(unit: Unit) -> str:
    return f"{unit.item.scenario.id}/{unit.iteration}/{unit.seed}"


class WorkerRunner(UnitRunner):
    """A UnitRunner whose run budget is spent in the coordinator, by all workers at once."""

    def __init__(self, spec: RunSpec) -> None:
        root = Path(spec.root)
        target, simulator = make_target(spec.params, root), make_simulator(spec.params, root)
        super().__init__(target, simulator, root, **spec.options)
        self.coordinator = spec.coordinator

    def add_spent(self, cost: float) -> float:
        import ray

        self.spent_usd = float(ray.get(self.coordinator.add_spent.remote(cost)))
        return self.spent_usd


_RUNNERS: dict[str, WorkerRunner] = {}
_LOOP: asyncio.AbstractEventLoop | None = None


def _runner(spec: RunSpec) -> WorkerRunner:
    runner = _RUNNERS.get(spec.token)
    if runner is None:
        from agenteval.executors.coordinator import RaySlots

        _RUNNERS.clear()  # an earlier run's agent is not needed any more
        runner = _RUNNERS[spec.token] = WorkerRunner(spec)
        GLOBAL_LIMITS.share(RaySlots(spec.coordinator))
    return runner


def _loop() -> asyncio.AbstractEventLoop:
    """One event loop per worker process, for every unit it runs (clients stay bound to it)."""
    global _LOOP
    if _LOOP is None:
        _LOOP = asyncio.new_event_loop()
        threading.Thread(target=_LOOP.run_forever, name="agenteval-units", daemon=True).start()
    return _LOOP


def ray_attempt(ray: Any) -> int | None:
    """0 on a task's first attempt, n on its n-th retry; None where this Ray cannot say.
    Ray's own count: the runtime context does not expose it, the worker's core does."""
    core = getattr(ray._private.worker.global_worker, "core_worker", None)
    number = getattr(core, "get_current_task_attempt_number", None)
    return int(number()) if callable(number) else None


def run_unit_task(spec: RunSpec, unit: Unit) -> dict[str, Any]:
    """Run `unit`; its transcript (JSON) and the reason the run must stop, if any."""
    import ray

    # Counted first, with Ray's own attempt number: an earlier attempt killed before it
    # reached this line (still unpacking its arguments) is counted all the same.
    node = ray.get_runtime_context().get_node_id()
    ray.get(spec.coordinator.begin.remote(label(unit), node, os.getpid(), ray_attempt(ray)))
    runner = _runner(spec)
    runner.stop_reason = None
    transcript = asyncio.run_coroutine_threadsafe(runner.run_unit(unit), _loop()).result()
    return {"transcript": transcript.model_dump(mode="json"), "stop_reason": runner.stop_reason}
