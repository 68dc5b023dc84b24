"""Stage `track` of pipelines/qa: one MLflow run -> reports/tracked.json (what was logged;
see stages.common.write_tracked)."""

from __future__ import annotations

import sys

from agenteval.benchmarks.qa.steps import step_qa_track
from agenteval.tracking.store import TrackingError
from stages.common import run_stage, variant_dir, variant_layout, variant_params, write_tracked


def main() -> int:
    settings, where = variant_params("qa"), variant_layout("qa")
    try:
        result = step_qa_track(settings, where, variant_dir("qa") / "dvc.lock")
    except TrackingError as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 1
    write_tracked(where.reports, settings, result)
    if result is None:
        print("track: tracking.enabled is false; nothing logged")
    else:
        verb = "logged" if result.created else "already logged as"
        print(f"track: {verb} run {result.run_id} in {result.tracking_uri}")
    return 0


if __name__ == "__main__":
    run_stage(main)
