"""Stage `tasks` of pipelines/qa: load and select the QA tasks -> data/tasks.json, suite.json."""

from __future__ import annotations

import sys

from agenteval.benchmarks.qa.steps import step_tasks
from agenteval.benchmarks.qa.tasks import TaskFileError
from stages.common import run_stage, variant_layout, variant_params


def main() -> int:
    params = variant_params("qa")
    try:
        tasks = step_tasks(params, variant_layout("qa"))
    except TaskFileError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except ValueError as exc:  # e.g. a judge that is the model under test
        print(f"tasks: {exc}", file=sys.stderr)
        return 2
    print(f"tasks: {len(tasks)} task(s), {params['qa']['k']} attempt(s) each")
    return 0


if __name__ == "__main__":
    run_stage(main)
