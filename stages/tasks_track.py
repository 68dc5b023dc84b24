"""Stage `track` of pipelines/tasks: one MLflow run -> reports/tracked.json (what was
logged; stages.common.write_tracked) and reports/mlflow_run.json (git-ignored)."""

from __future__ import annotations

from agenteval.benchmarks.tasks.secrets import SecretSurvived
from agenteval.benchmarks.tasks.tracking import log_tasks_run
from stages.common import run_stage, track_step, variant_dir, variant_layout, variant_params


def main() -> int:
    lock = variant_dir("tasks") / "dvc.lock"
    settings, layout = variant_params("tasks"), variant_layout("tasks")
    return track_step(
        lambda: log_tasks_run(settings, layout, lock),
        SecretSurvived,
        tracked=(layout.reports, settings),
    )


if __name__ == "__main__":
    run_stage(main)
