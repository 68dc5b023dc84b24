"""`run.executor: ray` on the driver's side: connect, dispatch each unit as a task, report.

The driver is the process that runs the pipeline. It starts a local Ray instance (or joins
`run.ray.address`), creates the run's coordinator actor, and hands the engine a `dispatch`
that submits one task per unit and awaits its transcript. Tasks run again when their worker
process dies (`run.ray.max_retries`); their transcripts come back here and the engine
writes each one once, so a retry is never a duplicate. Units in flight are bounded by the
cluster's CPUs (`run.ray.cpus_per_unit` each), model requests by the limiter actors.
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agenteval.engine import Dispatch, Unit
from agenteval.executors.base import ExecutionReport
from agenteval.executors.coordinator import RunCoordinator
from agenteval.executors.ray_worker import TASK_NAME, RunSpec, run_unit_task
from agenteval.schema.params import RayParams
from agenteval.schema.transcript import Transcript


class ExecutorError(RuntimeError):
    """Ray gave up on a unit (its worker died more often than run.ray.max_retries)."""


class RayExecutor:
    name = "ray"

    def __init__(
        self,
        ray: Any,
        coordinator: Any,
        spec: RunSpec,
        section: RayParams,
    ) -> None:
        self.ray, self.coordinator = ray, coordinator
        self.spec_ref = ray.put(spec)
        self.task = ray.remote(run_unit_task).options(
            name=TASK_NAME,
            num_cpus=section.cpus_per_unit,
            max_retries=section.max_retries,
            retry_exceptions=False,  # a unit's own failures are already in its transcript
        )
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        self.slots = max(1, int(cpus / section.cpus_per_unit))
        self.dispatch: Dispatch = self._dispatch

    async def _dispatch(self, unit: Unit) -> tuple[Transcript, str | None]:
        try:
            reply = await self.task.remote(self.spec_ref, unit)
        except self.ray.exceptions.RayError as exc:
            raise ExecutorError(describe(exc)) from exc
        return Transcript.model_validate(reply["transcript"]), reply["stop_reason"]

    def report(self) -> ExecutionReport:
        seen = self.ray.get(self.coordinator.report.remote())
        retried = {unit: n for unit, n in seen["attempts"].items() if n > 1}
        return ExecutionReport("ray", workers=len(seen["workers"]), retried=retried)

    def limiter_stats(self) -> dict[str, Any]:
        """Per endpoint: its bound, the most slots ever held at once, slots reclaimed."""
        stats: dict[str, Any] = self.ray.get(self.coordinator.limiter_stats.remote())
        return stats


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else 'no detail'}"


def import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:  # params checking refuses this earlier; a clear word anyway
        raise ValueError(
            "run.executor: ray is not installed here: pip install -e '.[ray]'"
        ) from exc
    return ray


def connect(ray: Any, section: RayParams) -> bool:
    """Join Ray: the instance this process already has, `address`, or a new local one.
    True when this call started it (and must shut it down)."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # offline by default
    options: dict[str, Any] = {"logging_level": logging.WARNING}
    if section.address is None:
        # "local": a new instance even where `ray start` left one running or RAY_ADDRESS is set.
        options.update(address="local", num_cpus=section.num_cpus, include_dashboard=False)
    else:
        options["address"] = section.address
    ray.init(**options)
    return True


@contextmanager
def open_ray(params: dict[str, Any], root: Path, options: dict[str, Any]) -> Iterator[RayExecutor]:
    ray = import_ray()
    section = RayParams.model_validate(params["run"].get("ray") or {})
    started = connect(ray, section)
    coordinator = None
    try:
        coordinator = ray.remote(num_cpus=0)(RunCoordinator).remote()
        spec = RunSpec(uuid.uuid4().hex, params, str(root.resolve()), coordinator, options)
        yield RayExecutor(ray, coordinator, spec, section)
    finally:
        if coordinator is not None:
            ray.kill(coordinator)  # its limiters go with it
        if started:
            ray.shutdown()
