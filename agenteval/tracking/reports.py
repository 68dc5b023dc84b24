"""Log a report that is not an evaluation (e.g. scenario health) as its own MLflow run.

The run carries the report's numbers as metrics, its files as artifacts and a content key
(tag `agenteval.run_key`): logging the same report twice finds the run instead of a duplicate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ReportRun:
    run_id: str
    created: bool
    tracking_uri: str  # without credentials


def log_report(
    params: Mapping[str, Any],
    root: Path,
    *,
    kind: str,
    key: str,
    metrics: Mapping[str, float],
    files: Sequence[Path],
    tags: Mapping[str, str] | None = None,
) -> ReportRun | None:
    """One run in `tracking.experiment` named `<kind>-<key[:8]>`; None when tracking is off."""
    from agenteval.tracking.results import log_batched
    from agenteval.tracking.store import (
        DEFAULT_EXPERIMENT,
        RUN_KEY_TAG,
        ensure_experiment,
        find_run,
        mlflow_client,
        public_uri,
        repository_root,
        resolve_tracking_uri,
    )

    section = params.get("tracking") or {}
    if not section.get("enabled", True):
        return None
    uri = resolve_tracking_uri(section.get("uri"), repository_root(root))
    experiment = section.get("experiment") or DEFAULT_EXPERIMENT
    with mlflow_client(uri) as client:
        experiment_id = ensure_experiment(client, experiment, uri)
        existing = find_run(client, experiment_id, key)
        if existing is not None:
            return ReportRun(existing, False, public_uri(uri))
        run_tags = {RUN_KEY_TAG: key, "agenteval.report": kind} | dict(tags or {})
        run = client.create_run(experiment_id, run_name=f"{kind}-{key[:8]}", tags=run_tags)
        run_id = str(run.info.run_id)
        try:
            log_batched(client, run_id, params={}, tags={}, metrics=dict(metrics))
            for path in files:
                client.log_artifact(run_id, str(path))
        except BaseException:
            client.set_terminated(run_id, status="FAILED")
            raise
        client.set_terminated(run_id, status="FINISHED")
    return ReportRun(run_id, True, public_uri(uri))
