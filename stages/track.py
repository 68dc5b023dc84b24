"""Stage `track`: log the evaluation to MLflow -> reports/mlflow_run.json (the run's pointer,
git-ignored and not a DVC output: its run id belongs to the local store).

The store itself (mlflow.db, mlartifacts/) lives at the repository root outside DVC: it
accumulates every experiment's runs, which no single pipeline output should own.
"""

from __future__ import annotations

import sys

from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.schema.scorecard import Scorecard
from agenteval.scoring import every_unit_errored
from agenteval.tracking.run import log_evaluation, write_run_record
from agenteval.tracking.store import TrackingError
from stages.common import layout, params, run_stage


def main() -> int:
    where = layout()
    try:
        result = log_evaluation(where, params())
    except TrackingError as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 1
    code = 1 if where.scorecard.is_file() and every_unit_errored(load_card(where).scenarios) else 0
    if result is None:
        # DVC expects the declared output even when tracking is switched off.
        write_run_record(where, None)
        print("track: tracking.enabled is false; nothing logged")
    else:
        verb = "logged" if result.created else "already logged as"
        print(
            f"track: {verb} run {result.run_id} in {result.tracking_uri} "
            f"(experiment {result.experiment_id}, {result.traces_logged} trace(s))"
        )
    if code:
        # The last stage fails, so `dvc repro` exits non-zero with every report written.
        print("track: every scenario ERRORED: the evaluation measured nothing", file=sys.stderr)
    return code


def load_card(where: Layout) -> Scorecard:
    return Scorecard.model_validate(read_json(where.scorecard))


if __name__ == "__main__":
    run_stage(main)
