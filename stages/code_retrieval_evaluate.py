"""Stage `evaluate` of pipelines/code_retrieval: queries, baseline, replay, robustness,
then the gate against the committed baseline -> reports/."""

from __future__ import annotations

from agenteval.benchmarks.code_retrieval.history import HistoryError
from stages.common import Failure, run_stage, run_step, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.code_retrieval.steps import PinsError, step_evaluate, summary_lines

    settings, layout = variant_params("code_retrieval"), variant_layout("code_retrieval")
    return run_step(
        "evaluate",
        lambda: step_evaluate(settings, layout),
        summary_lines,
        Failure(PinsError, 2),
        Failure(HistoryError, 2),
    )


if __name__ == "__main__":
    run_stage(main)
