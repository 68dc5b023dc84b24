"""Stage `track` of pipelines/tasks: one MLflow run -> reports/mlflow_run.json."""

from __future__ import annotations

import sys

from agenteval.benchmarks.tasks.secrets import SecretSurvived
from agenteval.benchmarks.tasks.tracking import log_tasks_run
from agenteval.tracking.store import TrackingError
from stages.common import run_stage, variant_dir, variant_layout, variant_params


def main() -> int:
    try:
        result = log_tasks_run(
            variant_params("tasks"), variant_layout("tasks"), variant_dir("tasks") / "dvc.lock"
        )
    except (TrackingError, SecretSurvived) as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 1
    if result is None:
        print("track: tracking.enabled is false; nothing logged")
    else:
        verb = "logged" if result.created else "already logged as"
        print(f"track: {verb} run {result.run_id} in {result.tracking_uri}")
    return 0


if __name__ == "__main__":
    run_stage(main)
