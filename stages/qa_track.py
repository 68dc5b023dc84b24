"""Stage `track` of pipelines/qa: one MLflow run -> reports/tracked.json (what was logged;
see stages.common.write_tracked)."""

from __future__ import annotations

from agenteval.benchmarks.qa.steps import step_qa_track
from agenteval.tracking.run import TrackResult
from stages.common import (
    run_stage,
    track_step,
    variant_dir,
    variant_layout,
    variant_params,
    write_tracked,
)


def main() -> int:
    settings, where = variant_params("qa"), variant_layout("qa")

    def log() -> TrackResult | None:
        result: TrackResult | None = step_qa_track(settings, where, variant_dir("qa") / "dvc.lock")
        write_tracked(where.reports, settings, result)
        return result

    return track_step(log)


if __name__ == "__main__":
    run_stage(main)
