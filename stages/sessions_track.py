"""Stage `track` of pipelines/sessions: one MLflow run -> reports/mlflow_run.json."""

from __future__ import annotations

import sys

from agenteval.benchmarks.sessions.variant import NAME, stage_track
from agenteval.tracking.store import TrackingError
from stages.common import root, run_stage, variant_dir, variant_params


def main() -> int:
    try:
        result = stage_track(
            variant_params(NAME), root(), variant_dir(NAME) / "reports/mlflow_run.json"
        )
    except TrackingError as exc:
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
