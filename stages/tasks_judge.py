"""Stage `judge` of pipelines/tasks: four dimensions per attempt -> data/grades/ (no agent call)."""

from __future__ import annotations

import sys
from collections import Counter

from agenteval.benchmarks.tasks.secrets import SecretSurvived
from agenteval.benchmarks.tasks.steps import step_judge
from agenteval.llm import QuotaExhausted
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    try:
        grades = step_judge(variant_params("tasks"), variant_layout("tasks"))
    except QuotaExhausted as exc:
        print(
            f"judge: stopped: {exc}; resume with: dvc repro pipelines/tasks/dvc.yaml",
            file=sys.stderr,
        )
        return 3
    except SecretSurvived as exc:
        print(f"judge: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"judge: {exc}", file=sys.stderr)
        return 2
    statuses = Counter(g.status for g in grades)
    print("judge: " + ", ".join(f"{name} {n}" for name, n in sorted(statuses.items())))
    return 0


if __name__ == "__main__":
    run_stage(main)
