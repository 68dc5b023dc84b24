"""Stage `score` of pipelines/qa: metrics.json, details/<task>.json and summary.md."""

from __future__ import annotations

from agenteval.benchmarks.qa.steps import coverage, step_qa_score
from stages.common import coverage_status, run_stage, variant_layout, variant_params


def main() -> int:
    scored = step_qa_score(variant_params("qa"), variant_layout("qa"))
    first = scored.metrics["correct.native@1"]
    print(
        f"score: correct.native@1 {first['value']} "
        f"({first['evaluated']} evaluated of {first['total']})"
    )
    return coverage_status("score", coverage(scored))


if __name__ == "__main__":
    run_stage(main)
