"""Stage `evaluate` of pipelines/code_retrieval: queries, baseline, replay, robustness,
then the gate against the committed baseline -> reports/."""

from __future__ import annotations

import sys

from agenteval.benchmarks.code_retrieval.history import HistoryError
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.code_retrieval.steps import PinsError, step_evaluate, summary_lines

    try:
        results = step_evaluate(variant_params("code_retrieval"), variant_layout("code_retrieval"))
    except PinsError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except HistoryError as exc:
        print(f"evaluate: {exc}", file=sys.stderr)
        return 2
    for line in summary_lines(results):
        print(f"evaluate: {line}")
    return 0


if __name__ == "__main__":
    run_stage(main)
