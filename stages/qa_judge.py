"""Stage `judge` of pipelines/qa: pre-check, then A/B/C -> data/qa_verdicts/ (no agent call)."""

from __future__ import annotations

import sys
from collections import Counter

from agenteval.benchmarks.qa.steps import step_qa_judge
from agenteval.llm import QuotaExhausted
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    try:
        verdicts = step_qa_judge(variant_params("qa"), variant_layout("qa"))
    except QuotaExhausted as exc:
        print(
            f"judge: stopped: {exc}; resume with: dvc repro pipelines/qa/dvc.yaml", file=sys.stderr
        )
        return 3
    except ValueError as exc:
        print(f"judge: {exc}", file=sys.stderr)
        return 2
    classes = Counter(v.verdict or v.status for v in verdicts)
    print("judge: " + ", ".join(f"{name} {n}" for name, n in sorted(classes.items())))
    return 0


if __name__ == "__main__":
    run_stage(main)
