"""Stage `controls`: measure the configured judge on the labelled controls.

Writes reports/controls.json and reports/controls.md, logs the measurement to MLflow under
the judge's configuration digest (when tracking is enabled), and exits 2 when a gated split
misses the thresholds in params `controls`, which stops `dvc repro` there.
"""

from __future__ import annotations

import sys

from agenteval.controls.load import ControlsError
from agenteval.controls.measure import measure_judge
from agenteval.tracking.store import TrackingError
from stages.common import layout, params, root, run_stage


def main() -> int:
    config = params()
    try:
        measured = measure_judge(config, root(), layout().reports)
    except ControlsError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    report = measured.report
    for name, s in report["splits"].items():
        agreement = s["agreement"]["value"]
        print(f"controls: {name}: agreement {agreement}, false passes {s['false_passes']}, "
              f"coverage {s['coverage']} ({s['judged']}/{s['controls']} judged)")  # fmt: skip
    if (config.get("tracking") or {}).get("enabled", True):
        from agenteval.tracking.controls import log_controls

        try:
            run_id, created = log_controls(report, config, root())
        except TrackingError as exc:
            print(f"controls: {exc}", file=sys.stderr)
            return 1
        print(f"controls: MLflow run {run_id}{'' if created else ' (already logged)'}")
    if not report["passed"]:
        for name, misses in report["misses"].items():
            print(f"controls: {name} below thresholds: {'; '.join(misses)}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    run_stage(main)
