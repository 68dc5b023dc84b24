"""Stage `track` of pipelines/throughput: one MLflow run -> reports/mlflow_run.json."""

from __future__ import annotations

import sys

from agenteval.tracking.store import TrackingError
from stages.common import run_stage, variant_dir, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.throughput.steps import step_track

    lock = variant_dir("throughput") / "dvc.lock"
    try:
        result = step_track(variant_params("throughput"), variant_layout("throughput"), lock)
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
