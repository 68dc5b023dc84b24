"""Stage `track` of pipelines/sessions: one MLflow run -> reports/mlflow_run.json."""

from __future__ import annotations

from agenteval.benchmarks.sessions.variant import NAME, stage_track
from stages.common import root, run_stage, track_step, variant_dir, variant_params


def main() -> int:
    record = variant_dir(NAME) / "reports/mlflow_run.json"
    return track_step(lambda: stage_track(variant_params(NAME), root(), record))


if __name__ == "__main__":
    run_stage(main)
