"""Stage `run` of pipelines/throughput: the sweep -> reports/ and data/requests.jsonl."""

from __future__ import annotations

from typing import Any

from agenteval.benchmarks.throughput.workload import WorkloadError
from agenteval.llm import LLMError
from agenteval.measured import NothingMeasured
from stages.common import Failure, run_stage, run_step, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.throughput.steps import coverage, step_run, summary_lines

    settings, layout = variant_params("throughput"), variant_layout("throughput")
    return run_step(
        "run",
        lambda: measured(step_run(settings, layout)),
        lambda results: [*summary_lines(results), *filter(None, [coverage(results).line()])],
        Failure(WorkloadError, 2),
        Failure((LLMError, NothingMeasured), 3, "stopped"),
    )


def measured(results: dict[str, Any]) -> dict[str, Any]:
    """The results, unless every request failed: the outputs are written, the stage fails."""
    from agenteval.benchmarks.throughput.steps import coverage

    coverage(results).check()
    return results


if __name__ == "__main__":
    run_stage(main)
