"""Stage `run` of pipelines/throughput: the sweep -> reports/ and data/requests.jsonl."""

from __future__ import annotations

import sys

from agenteval.benchmarks.throughput.workload import WorkloadError
from agenteval.llm import LLMError
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.throughput.steps import step_run, summary_lines

    try:
        results = step_run(variant_params("throughput"), variant_layout("throughput"))
    except WorkloadError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except LLMError as exc:
        print(f"run: stopped: {exc}", file=sys.stderr)
        return 3
    for line in summary_lines(results):
        print(f"run: {line}")
    return 0


if __name__ == "__main__":
    run_stage(main)
