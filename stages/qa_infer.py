"""Stage `infer` of pipelines/qa: the agent answers every task k times -> data/transcripts/."""

from __future__ import annotations

import sys

from agenteval.benchmarks.qa.steps import step_qa_infer
from stages.common import run_stage, show_progress, variant_layout, variant_params


def main() -> int:
    result = step_qa_infer(variant_params("qa"), variant_layout("qa"), show_progress())
    completed = sum(t.status == "COMPLETED" for t in result.transcripts)
    print(f"infer: {completed}/{len(result.transcripts)} attempt(s) completed")
    if result.stop_reason:
        print(f"infer: stopped early: {result.stop_reason}", file=sys.stderr)
        print("infer: resume with: dvc repro pipelines/qa/dvc.yaml", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    run_stage(main)
