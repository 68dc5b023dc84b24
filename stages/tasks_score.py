"""Stage `score` of pipelines/tasks: scorecard.json, metrics.json and summary.md."""

from __future__ import annotations

from agenteval.benchmarks.tasks.steps import step_score
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    card = step_score(variant_params("tasks"), variant_layout("tasks"))
    first = card.draws[0]
    print(
        f"score: {first.passed}/{first.tasks} passed, {first.verified}/{first.coding} verified, "
        f"{first.misreported} misreported, {first.unmeasured} unmeasured"
    )
    return 0


if __name__ == "__main__":
    run_stage(main)
