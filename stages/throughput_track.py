"""Stage `track` of pipelines/throughput: one MLflow run -> reports/tracked.json (what
was logged; stages.common.write_tracked) and reports/mlflow_run.json (git-ignored)."""

from __future__ import annotations

from stages.common import run_stage, track_step, variant_dir, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.throughput.steps import step_track

    lock = variant_dir("throughput") / "dvc.lock"
    settings, layout = variant_params("throughput"), variant_layout("throughput")
    return track_step(
        lambda: step_track(settings, layout, lock), tracked=(layout.reports, settings)
    )


if __name__ == "__main__":
    run_stage(main)
