"""A run's numbers and files: batched params/tags/metrics, report artifacts, the scenario table."""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agenteval.schema.scorecard import Scorecard
from agenteval.scratch import temporary_folder
from agenteval.tracking.provenance import mlflow_key
from agenteval.tracking.store import (
    MAX_METRICS_PER_BATCH,
    MAX_PARAMS_TAGS_PER_BATCH,
    MAX_TAG_CHARS,
)

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import MlflowClient

    from agenteval.layout import Layout
    from agenteval.tracking.models import EvaluationLinks

T = TypeVar("T")
REPORT_FILES = ("scorecard.json", "summary.md", "metrics.json", "noise.json")
TABLE_NAME = "scenarios.parquet"
REDACTED = "[REDACTED]"


# The numbers a run is compared by: linked to the agent's LoggedModel and the scenario set,
# so MLflow's model comparison lines agents up on them (with their intervals).
HEADLINE_METRICS = ("judged_pass_rate", "avg_score", "pass_rate")
INTERVAL_PARTS = ("low", "high", "half_width")


def run_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Everything in metrics.json (the names `dvc metrics show` uses). Per-scenario values
    are rows of scenarios.parquet, not metrics: hundreds of them would bury the headline."""
    return {mlflow_key(k): float(v) for k, v in metrics.items() if _finite(v)}


def interval_metrics(noise: Mapping[str, Any] | None) -> dict[str, float]:
    """The overall 95% interval of each headline number from reports/noise.json, as metrics
    MLflow can chart beside the value: `<name>.low`, `.high` (and `.half_width` for symmetric
    intervals), plus the paired MDE. A number without an interval gets none (see
    `interval_notes`); per-category intervals stay in noise.json."""
    if not noise:
        return {}
    overall = noise.get("overall") or {}
    flat: dict[str, float] = {}
    for name in ("judged_pass_rate", "avg_score"):
        interval = overall.get(name) or {}
        for part in INTERVAL_PARTS:
            if _finite(interval.get(part)):
                flat[mlflow_key(f"{name}.{part}")] = float(interval[part])
    for name, entry in (noise.get("mde") or {}).items():
        if isinstance(entry, Mapping) and _finite(entry.get("mde")):
            flat[mlflow_key(f"mde.{name}")] = float(entry["mde"])
    return flat


def model_metric_keys(metrics: Mapping[str, float]) -> set[str]:
    """The headline numbers and their intervals: the metrics linked to the agent's model."""
    wanted = set(HEADLINE_METRICS)
    wanted |= {f"{name}.{part}" for name in HEADLINE_METRICS for part in INTERVAL_PARTS}
    return wanted & set(metrics)


def interval_notes(noise: Mapping[str, Any] | None) -> dict[str, str]:
    """Why a headline number has no interval ('too few scenarios ...'), as run tags
    `interval.<name>`: stated, where a metric could only be missing."""
    if not noise:
        return {}
    overall = noise.get("overall") or {}
    notes: dict[str, str] = {}
    for name in ("judged_pass_rate", "avg_score"):
        entry = overall.get(name) or {}
        if entry.get("value") is not None and entry.get("low") is None and entry.get("note"):
            notes[mlflow_key(f"interval.{name}")] = str(entry["note"])
    return notes


def headline(noise: Mapping[str, Any] | None) -> str | None:
    """`judged pass rate 0.400 [0.276, 0.538] · avg score 7.15 [6.52, 7.78]`, for the run's
    description; a number without an interval says why ('too few scenarios')."""
    overall = (noise or {}).get("overall") or {}
    parts = []
    for name, label, fmt in (("judged_pass_rate", "judged pass rate", ".3f"),
                             ("avg_score", "avg score", ".2f")):  # fmt: skip
        entry = overall.get(name) or {}
        if _finite(entry.get("value")):
            shown = f"{entry['value']:{fmt}}"
            if _finite(entry.get("low")) and _finite(entry.get("high")):
                shown += f" [{entry['low']:{fmt}}, {entry['high']:{fmt}}]"
            elif str(entry.get("note") or "").startswith("too few scenarios"):
                shown += " (too few scenarios)"
            parts.append(f"{label} {shown}")
    return " · ".join(parts) or None


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def log_batched(
    client: MlflowClient,
    run_id: str,
    *,
    params: Mapping[str, str],
    tags: Mapping[str, str],
    metrics: Mapping[str, float],
    links: EvaluationLinks | None = None,
) -> None:
    """`log_batch` within MLflow's per-call limits: one call per 100 params or tags and per
    1,000 metrics, instead of a round trip per value. With `links.model_id` the headline
    metrics (`model_metric_keys`) are also the agent model's metrics, on the scenario set."""
    from mlflow.entities import Metric, Param, RunTag

    for texts in _chunks(sorted(params.items()), MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, params=[Param(k, v) for k, v in texts])
    for texts in _chunks(sorted(tags.items()), MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, tags=[RunTag(k, v[:MAX_TAG_CHARS]) for k, v in texts])
    now_ms = int(time.time() * 1000)
    linked = model_metric_keys(metrics) if links is not None and links.model_id else set()
    for numbers in _chunks(sorted(metrics.items()), MAX_METRICS_PER_BATCH):
        batch = [
            Metric(k, v, now_ms, 0, **_link_fields(links if k in linked else None))
            for k, v in numbers
        ]
        client.log_batch(run_id, metrics=batch)


def _link_fields(links: EvaluationLinks | None) -> dict[str, str | None]:
    if links is None:
        return {}
    return {"model_id": links.model_id, "dataset_name": links.dataset_name,
            "dataset_digest": links.dataset_digest}  # fmt: skip


def scenario_table(card: Scorecard, run_id: str) -> pd.DataFrame:
    """One row per scenario iteration (the per-scenario values, kept out of the metrics);
    `session` joins it to the MLflow trace sessions of the run."""
    import pandas as pd

    from agenteval.tracking.records import session_id

    dims = _dimensions(card)
    columns = ["session", "id", "iteration", "category", "severity", "status", "score",
               "n_turns", "root_cause"]  # fmt: skip
    rows: list[dict[str, Any]] = []
    for result in card.scenarios:
        row: dict[str, Any] = {
            "session": session_id(run_id, result.id, result.iteration),
            "id": result.id,
            "iteration": result.iteration,
            "category": result.category,
            "severity": result.severity,
            "status": result.status,
            "score": result.score,
            "n_turns": len(result.turns),
            "root_cause": result.root_cause,
        }
        for dim in dims:
            row[f"dim_{dim}"] = _mean([t.scores.get(dim) for t in result.turns])
        rows.append(row)
    frame = pd.DataFrame(rows, columns=columns + [f"dim_{d}" for d in dims])
    # Explicit dtypes: an all-null column would otherwise become `object` in parquet.
    floats = ["score"] + [f"dim_{d}" for d in dims]
    frame[floats] = frame[floats].astype("float64")
    return frame.astype({"iteration": "int64", "n_turns": "int64"})


def _mean(values: list[float | None]) -> float | None:
    """Mean over the turns that judged this dimension; None when none did."""
    judged = [v for v in values if v is not None]
    return sum(judged) / len(judged) if judged else None


def _dimensions(card: Scorecard) -> list[str]:
    seen: dict[str, None] = {}
    for result in card.scenarios:
        for turn in result.turns:
            seen.update(dict.fromkeys(turn.scores))
    return list(seen)


def log_artifacts(
    client: MlflowClient,
    run_id: str,
    layout: Layout,
    card: Scorecard,
    secrets: Iterable[str],
    *,
    provenance: Mapping[str, Any] | None = None,
) -> list[str]:
    """Upload the reports, provenance.json and the scenario table; returns the names logged."""
    from agenteval.fileio import json_text
    from agenteval.tracking.provenance import PROVENANCE_FILE

    secrets = list(secrets)
    logged: list[str] = []
    with temporary_folder("agenteval-mlflow-") as tmp:
        if provenance is not None:
            text = json_text(provenance)
            for secret in secrets:
                text = text.replace(secret, REDACTED)
            record = Path(tmp) / PROVENANCE_FILE
            record.write_text(text, encoding="utf-8")
            client.log_artifact(run_id, str(record))
            logged.append(PROVENANCE_FILE)
        for name in REPORT_FILES:
            path = layout.reports / name
            if path.is_file():
                client.log_artifact(run_id, str(_redacted(path, Path(tmp), secrets)))
                logged.append(name)
        table = Path(tmp) / TABLE_NAME
        scenario_table(card, run_id).to_parquet(table, index=False)
        client.log_artifact(run_id, str(table))
        logged.append(TABLE_NAME)
    return logged


def _redacted(path: Path, tmp: Path, secrets: list[str]) -> Path:
    """The file itself, or a copy without any known secret value if one slipped into it."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if not any(secret in text for secret in secrets):
        return path
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    copy = tmp / path.name
    copy.write_text(text, encoding="utf-8")
    return copy
