"""Stage `run` of pipelines/throughput: the sweep -> reports/ and data/requests.jsonl."""

from __future__ import annotations

from agenteval.benchmarks.throughput.workload import WorkloadError
from agenteval.llm import LLMError
from agenteval.measured import NothingMeasured
from stages.common import (
    Failure,
    measured_step,
    run_stage,
    run_step,
    variant_layout,
    variant_params,
)


def main() -> int:
    from agenteval.benchmarks.throughput.steps import coverage, step_run, summary_lines

    settings, layout = variant_params("throughput"), variant_layout("throughput")
    step, summary = measured_step(lambda: step_run(settings, layout), coverage, summary_lines)
    return run_step(
        "run",
        step,
        summary,
        Failure(WorkloadError, 2),
        Failure((LLMError, NothingMeasured), 3, "stopped"),
    )


if __name__ == "__main__":
    run_stage(main)
