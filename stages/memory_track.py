"""Stage `track` of pipelines/memory: one MLflow run -> reports/tracked.json (what was
logged; stages.common.write_tracked) and reports/mlflow_run.json (git-ignored)."""

from __future__ import annotations

import sys

from agenteval.benchmarks.memory.run import Paths
from agenteval.benchmarks.memory.tracking import log_memory
from agenteval.fileio import write_json
from agenteval.tracking.store import TrackingError
from stages.common import root, run_stage, variant_dir, variant_params, write_tracked

NAME = "memory"


def main() -> int:
    reports = variant_dir(NAME) / "reports"
    try:
        tracked = log_memory(variant_params(NAME), root(), Paths(reports))
    except TrackingError as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 2
    write_tracked(reports, variant_params(NAME), tracked)
    if tracked is None:
        write_json(reports / "mlflow_run.json", {"enabled": False})
        print("track: tracking.enabled is false; nothing logged")
        return 0
    verb = "logged" if tracked.created else "already logged as"
    print(
        f"track: {verb} run {tracked.run_id} in {tracked.tracking_uri} "
        f"({tracked.traces} traces, {tracked.feedback} feedback)"
    )
    return 0


if __name__ == "__main__":
    run_stage(main)
