"""Stage `run` of pipelines/tasks: every task in a fresh copy -> data/attempts/."""

from __future__ import annotations

import sys
from collections import Counter

from agenteval.benchmarks.tasks.definitions import TaskFileError
from agenteval.benchmarks.tasks.harness import HarnessUnavailable
from agenteval.benchmarks.tasks.sandbox import SandboxUnavailable
from agenteval.benchmarks.tasks.secrets import SecretSurvived
from agenteval.benchmarks.tasks.steps import step_run
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    try:
        attempts = step_run(variant_params("tasks"), variant_layout("tasks"))
    except TaskFileError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except (HarnessUnavailable, SandboxUnavailable, ValueError) as exc:
        print(f"run: refused: {exc}", file=sys.stderr)
        return 2
    except SecretSurvived as exc:
        print(f"run: {exc}", file=sys.stderr)
        return 1
    statuses = Counter(a.status for a in attempts)
    print("run: " + ", ".join(f"{name} {n}" for name, n in sorted(statuses.items())))
    if any(a.resumable for a in attempts):
        print(
            "run: stopped early; resume with: dvc repro pipelines/tasks/dvc.yaml", file=sys.stderr
        )
        return 3
    return 0


if __name__ == "__main__":
    run_stage(main)
