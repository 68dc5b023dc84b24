"""Stage `evaluate` of pipelines/code_retrieval: queries, baseline, replay, robustness,
then the gate against the committed baseline -> reports/."""

from __future__ import annotations

from agenteval.benchmarks.code_retrieval.history import HistoryError
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
    from agenteval.benchmarks.code_retrieval.steps import (
        PinsError,
        coverage,
        step_evaluate,
        summary_lines,
    )

    settings, layout = variant_params("code_retrieval"), variant_layout("code_retrieval")
    step, summary = measured_step(lambda: step_evaluate(settings, layout), coverage, summary_lines)
    return run_step(
        "evaluate",
        step,
        summary,
        Failure(PinsError, 2),
        Failure(HistoryError, 2),
        Failure(NothingMeasured, 3),
    )


if __name__ == "__main__":
    run_stage(main)
