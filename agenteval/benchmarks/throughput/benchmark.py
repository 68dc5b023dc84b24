"""The throughput benchmark behind the protocol (agenteval.benchmarks.base): one `run` step
(the sweep of every endpoint) and `track`; gated by its own rules (throughput.gate)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import Failure, Outcome, RunContext, Step
from agenteval.benchmarks.throughput import gate as gating
from agenteval.benchmarks.throughput import steps as sweep
from agenteval.benchmarks.throughput.records import TriageWorkload
from agenteval.benchmarks.throughput.settings import ThroughputParams
from agenteval.benchmarks.throughput.workload import WorkloadError
from agenteval.benchmarks.verdict import GateResult
from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.llm import LLMError


def _run(settings: ThroughputParams, ctx: RunContext, layout: Layout) -> Outcome:
    results = sweep.step_run(settings, layout)
    return Outcome(tuple(sweep.summary_lines(results)), sweep.coverage(results))


# Beyond the workload's problems, what the CLI always refused with its reason (a local model
# that will not start, a tokenizer file that is not one): input or set-up, never a figure.
CANNOT_RUN = Failure((ValueError, OSError, RuntimeError), runner.INVALID, "cannot run")


RUN = Step(
    "run",
    _run,
    (Failure(WorkloadError, runner.INVALID), Failure(LLMError, runner.STOPPED, "stopped"),
     CANNOT_RUN),
)  # fmt: skip


class Throughput:
    name = sweep.KIND
    Settings = ThroughputParams
    schemas = MappingProxyType({"throughput_workload": TriageWorkload})
    steps = (RUN, runner.track(sweep.KIND, lambda settings, layout: sweep.tracked(layout)))

    def metrics(self, layout: Layout) -> dict[str, Any]:
        found: dict[str, Any] = read_json(layout.metrics)
        return found

    def gate(
        self, current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None
    ) -> GateResult:
        return gating.gate(current, baseline, tolerance)


BENCHMARK = Throughput()
