"""The throughput benchmark behind the protocol (agenteval.benchmarks.base): one `run` step
(the sweep of every endpoint) and `track`; gated by its own rules (throughput.gate)."""

from __future__ import annotations

from types import MappingProxyType

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import Definition, Failure, Outcome, RunContext, Step
from agenteval.benchmarks.throughput import gate as gating
from agenteval.benchmarks.throughput import steps as sweep
from agenteval.benchmarks.throughput.records import TriageWorkload
from agenteval.benchmarks.throughput.settings import ThroughputParams
from agenteval.benchmarks.throughput.workload import WorkloadError
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


BENCHMARK = Definition(
    name=sweep.KIND,
    Settings=ThroughputParams,
    steps=(RUN, runner.track(sweep.KIND, lambda settings, ctx, layout: sweep.tracked(layout))),
    schemas=MappingProxyType({"throughput_workload": TriageWorkload}),
    rule=gating.gate,
)
