"""Stage `track` of pipelines/code_retrieval: one MLflow run -> reports/tracked.json (what
was logged; stages.common.write_tracked) and reports/mlflow_run.json (git-ignored)."""

from __future__ import annotations

from stages.common import run_stage, track_step, variant_dir, variant_layout, variant_params


def main() -> int:
    from agenteval.benchmarks.code_retrieval.steps import step_track

    lock = variant_dir("code_retrieval") / "dvc.lock"
    settings, layout = variant_params("code_retrieval"), variant_layout("code_retrieval")
    return track_step(
        lambda: step_track(settings, layout, lock), tracked=(layout.reports, settings)
    )


if __name__ == "__main__":
    run_stage(main)
