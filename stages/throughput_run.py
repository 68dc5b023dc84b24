"""Stage `run` of pipelines/throughput: the sweep -> reports/ and data/requests.jsonl."""

from __future__ import annotations

from agenteval.benchmarks.throughput.workload import WorkloadError
from agenteval.llm import LLMError
from stages.common import Failure, run_stage, run_step, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.throughput.steps import step_run, summary_lines

    settings, layout = variant_params("throughput"), variant_layout("throughput")
    return run_step(
        "run",
        lambda: step_run(settings, layout),
        summary_lines,
        Failure(WorkloadError, 2),
        Failure(LLMError, 3, "stopped"),
    )


if __name__ == "__main__":
    run_stage(main)
