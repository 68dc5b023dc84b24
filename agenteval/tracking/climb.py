"""A hillclimb session in MLflow: one parent run, one child run per round.

Experiment `<tracking.experiment>-climb`. The parent carries the session's params, and at
the end its gains per split, the optimism gap (train gain minus test gain), the round counts
and reports/climb.json with the plot; each child carries its edit as a diff artifact, the
train and held gains with their lower bounds, the decision and its reason, and the cost.
Plain MlflowClient calls through `tracking.store.mlflow_client`, so mlflow is imported only
when a session logs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agenteval.params import flatten

PARENT_TAG = "mlflow.parentRunId"


def _numbers(prefix: str, values: Mapping[str, Any] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, value in (values or {}).items():
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[f"{prefix}.{key}"] = float(value)
    return out


class ClimbTracker:
    def __init__(self, params: Mapping[str, Any], root: Path) -> None:
        from agenteval.tracking.store import (
            DEFAULT_EXPERIMENT,
            repository_root,
            resolve_tracking_uri,
        )

        section = params.get("tracking") or {}
        self.uri = resolve_tracking_uri(section.get("uri"), repository_root(root))
        self.experiment = f"{section.get('experiment') or DEFAULT_EXPERIMENT}-climb"
        self.parent_id = ""
        self.experiment_id = ""

    def start(self, name: str, params: Mapping[str, Any], tags: Mapping[str, str]) -> str:
        from agenteval.tracking.store import ensure_experiment, mlflow_client

        with mlflow_client(self.uri) as client:
            self.experiment_id = ensure_experiment(client, self.experiment, self.uri)
            run = client.create_run(self.experiment_id, run_name=name, tags=dict(tags))
            self.parent_id = str(run.info.run_id)
            flat = flatten(dict(params))
            for key, value in sorted(flat.items()):
                client.log_param(self.parent_id, key, str(value)[:500])
        return self.parent_id

    def log_round(self, record: Mapping[str, Any]) -> str:
        from agenteval.tracking.store import mlflow_client

        number = int(record["round"])
        tags = {
            PARENT_TAG: self.parent_id,
            "climb.outcome": str(record.get("outcome")),
            "climb.reason": str(record.get("reason") or "")[:4900],
            "climb.edit": str(record.get("edit") or "")[:4900],
        }
        held = record.get("held") or {}
        metrics = _numbers("train", record.get("train")) | _numbers("held", held.get("delta"))
        metrics |= _numbers("held", {k: held.get(k) for k in ("released", "bound", "query")})
        metrics["kept"] = float(record.get("outcome") == "kept")
        for key in ("seconds", "proposer_cost_usd", "cost_usd"):
            if isinstance(record.get(key), int | float):
                metrics[key] = float(record[key])
        with mlflow_client(self.uri) as client:
            run = client.create_run(self.experiment_id, run_name=f"round-{number:02d}", tags=tags)
            run_id = str(run.info.run_id)
            for key, value in sorted(metrics.items()):
                client.log_metric(run_id, key, value, step=number)
            client.log_text(run_id, str(record.get("diff") or ""), "edit.diff")
            client.log_text(run_id, json.dumps(record, indent=2, default=str), "round.json")
            client.set_terminated(run_id, "FINISHED")
        return run_id

    def log_side_by_side(self, found: Mapping[str, Any]) -> None:
        """MLflow's align() beside agenteval's on the parent run: `<judge>.<split>.<figure>`
        metrics (mlflow_before, mlflow_aligned, agenteval_aligned) and the tuned prompt."""
        from agenteval.tracking.store import mlflow_client

        with mlflow_client(self.uri) as client:
            client.set_tag(self.parent_id, "align.mlflow", str(found.get("why"))[:4900])
            if not found.get("ran"):
                return
            for judge in ("mlflow_before", "mlflow_aligned", "agenteval_aligned"):
                for split, figures in found[judge].items():
                    for key, value in figures.items():
                        if isinstance(value, int | float):
                            client.log_metric(self.parent_id, f"{judge}.{split}.{key}", value)
            client.log_text(self.parent_id, str(found["instructions"]), "mlflow_aligned.md")

    def finish(
        self, summary: Mapping[str, Any], files: Sequence[Path], failed: bool = False
    ) -> None:
        from agenteval.tracking.store import mlflow_client

        figures = summary.get("figures") or {}
        metrics: dict[str, float] = {}
        for split in ("train", "held", "test"):
            metrics |= _numbers(split, figures.get(split))
        for key in ("optimism_gap", "kept", "reverted", "rejected", "rounds"):
            value = figures.get(key, summary.get(key))
            if isinstance(value, int | float):
                metrics[key] = float(value)
        metrics |= _numbers("held_queries", summary.get("held_queries"))
        with mlflow_client(self.uri) as client:
            for key, value in sorted(metrics.items()):
                client.log_metric(self.parent_id, key, value)
            client.set_tag(self.parent_id, "climb.stop_reason", str(summary.get("stop_reason")))
            for key in ("branch", "start_commit", "final_commit"):
                client.set_tag(self.parent_id, f"climb.{key}", str(summary.get(key)))
            for path in files:
                if path.is_file():
                    client.log_artifact(self.parent_id, str(path))
            client.set_terminated(self.parent_id, "FAILED" if failed else "FINISHED")
