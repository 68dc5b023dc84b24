"""Stage `score` of pipelines/tasks: scorecard.json, metrics.json and summary.md."""

from __future__ import annotations

from agenteval.benchmarks.tasks.score import coverage
from agenteval.benchmarks.tasks.steps import step_score
from stages.common import coverage_status, run_stage, variant_layout, variant_params


def main() -> int:
    card = step_score(variant_params("tasks"), variant_layout("tasks"))
    first = card.draws[0]
    print(
        f"score: {first.passed}/{first.tasks} passed, {first.verified}/{first.coding} verified, "
        f"{first.misreported} misreported, {first.unmeasured} unmeasured"
    )
    return coverage_status("score", coverage(card.tasks))


if __name__ == "__main__":
    run_stage(main)
