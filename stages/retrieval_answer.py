"""Stage `answer` of pipelines/retrieval: the target answers every labelled question."""

from __future__ import annotations

import sys

from agenteval.benchmarks.retrieval.library import LabelError
from agenteval.benchmarks.retrieval.steps import step_answer
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    try:
        result = step_answer(variant_params("retrieval"), variant_layout("retrieval"))
    except LabelError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    if result is None:
        print("answer: retrieval.answers is false; no answers asked")
        return 0
    completed = sum(t.status == "COMPLETED" for t in result.transcripts)
    print(f"answer: {completed}/{len(result.transcripts)} question(s) answered")
    if result.stop_reason:
        print(f"answer: stopped early: {result.stop_reason}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    run_stage(main)
