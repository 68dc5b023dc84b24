"""Stage `track`: log the evaluation to MLflow -> reports/tracked.json (what was logged).

It runs when its inputs change, like any stage. The store itself (mlflow.db, mlartifacts/)
lives at the repository root outside DVC: it accumulates every experiment's runs, which no
single pipeline output should own, and DVC cannot see it; `agenteval track` logs the results
into an emptied or another store on request. reports/mlflow_run.json (git-ignored) points
at the run in the store last logged into.
"""

from __future__ import annotations

import sys

from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.measured import scenario_coverage
from agenteval.schema.scorecard import Scorecard
from agenteval.tracking.run import log_evaluation, write_run_record
from agenteval.tracking.store import TrackingError
from stages.common import coverage_status, layout, params, run_stage, write_tracked


def main() -> int:
    where, settings = layout(), params()
    try:
        result = log_evaluation(where, settings)
    except TrackingError as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 1
    coverage = scenario_coverage(load_card(where).scenarios) if where.scorecard.is_file() else None
    write_tracked(where.reports, settings, result)
    if result is None:
        write_run_record(where, None)
        print("track: tracking.enabled is false; nothing logged")
    else:
        verb = "logged" if result.created else "already logged as"
        print(
            f"track: {verb} run {result.run_id} in {result.tracking_uri} "
            f"(experiment {result.experiment_id}, {result.traces_logged} trace(s))"
        )
    # The last stage fails (3) when nothing was measured, so `dvc repro` exits non-zero
    # with every report written; a partial run says how much it left unmeasured.
    return 0 if coverage is None else coverage_status("track", coverage)


def load_card(where: Layout) -> Scorecard:
    return Scorecard.model_validate(read_json(where.scorecard))


if __name__ == "__main__":
    run_stage(main)
