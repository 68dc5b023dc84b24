"""Stage `track`: log the evaluation to MLflow -> reports/mlflow_run.json (the run's pointer).

The store itself (mlflow.db, mlartifacts/) lives at the repository root outside DVC: it
accumulates every experiment's runs, which no single pipeline output should own.
"""

from __future__ import annotations

import sys

from agenteval.tracking.run import log_evaluation, write_run_record
from agenteval.tracking.store import TrackingError
from stages.common import layout, params


def main() -> int:
    where = layout()
    try:
        result = log_evaluation(where, params())
    except TrackingError as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 1
    if result is None:
        # DVC expects the declared output even when tracking is switched off.
        write_run_record(where, None)
        print("track: tracking.enabled is false; nothing logged")
        return 0
    verb = "logged" if result.created else "already logged as"
    print(
        f"track: {verb} run {result.run_id} in {result.tracking_uri} "
        f"(experiment {result.experiment_id}, {result.traces_logged} trace(s))"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
