"""Stage `evaluate` of pipelines/retrieval: rankings, answers, hard cases -> reports/."""

from __future__ import annotations

import sys

from agenteval.benchmarks.retrieval.library import LabelError
from agenteval.benchmarks.retrieval.steps import step_evaluate
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    try:
        results = step_evaluate(variant_params("retrieval"), variant_layout("retrieval"))
    except LabelError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    for name, scores in results["metrics"].items():
        print(f"evaluate: {name}: recall@5 {scores['recall@5']:.3f}, MRR {scores['mrr']:.3f}")
    for name, why in results["meta"]["skipped_pipelines"].items():
        print(f"evaluate: {name}: skipped ({why})")
    for case in results["hard_cases"]:
        print(f"evaluate: hard case {case['case']!r}: {case['status']}")
    return 0


if __name__ == "__main__":
    run_stage(main)
