"""A run's numbers and files: batched params/tags/metrics, report artifacts, the scenario table."""

from __future__ import annotations

import math
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from agenteval.schema.scorecard import Scorecard
from agenteval.schema.status import JUDGED_STATUSES, Status
from agenteval.tracking.provenance import mlflow_key

if TYPE_CHECKING:
    import pandas as pd
    from mlflow import MlflowClient

    from agenteval.layout import Layout

T = TypeVar("T")
REPORT_FILES = ("scorecard.json", "summary.md", "metrics.json", "noise.json")
TABLE_NAME = "scenarios.parquet"
REDACTED = "[REDACTED]"


def run_metrics(metrics: Mapping[str, Any], card: Scorecard) -> dict[str, float]:
    """Everything in metrics.json, plus each scenario iteration's score and pass (1/0).

    Per-scenario keys let the MLflow UI compare one scenario across runs; unmeasured
    iterations have no score and no pass, and are left out rather than logged as NaN.
    """
    flat = {mlflow_key(k): float(v) for k, v in metrics.items() if _finite(v)}
    for result in card.scenarios:
        prefix = mlflow_key(f"scenario.{result.id}.{result.iteration}")
        if result.score is not None and _finite(result.score):
            flat[f"{prefix}.score"] = float(result.score)
        if result.status in JUDGED_STATUSES:
            flat[f"{prefix}.pass"] = 1.0 if result.status == Status.PASS else 0.0
    return flat


def interval_metrics(noise: Mapping[str, Any] | None) -> dict[str, float]:
    """Each headline number's 95% interval from reports/noise.json, as metrics MLflow can
    chart beside the value: `<name>.low`, `.high` (and `.half_width` for symmetric intervals),
    plus the paired MDE. A number without an interval gets none (see `interval_notes`)."""
    if not noise:
        return {}
    groups = {"": noise.get("overall") or {}}
    groups |= {f"category.{c}.": v for c, v in (noise.get("categories") or {}).items()}
    flat: dict[str, float] = {}
    for prefix, group in groups.items():
        for name in ("judged_pass_rate", "avg_score"):
            interval = group.get(name) or {}
            for part in ("half_width", "low", "high"):
                if _finite(interval.get(part)):
                    flat[mlflow_key(f"{prefix}{name}.{part}")] = float(interval[part])
    for name, entry in (noise.get("mde") or {}).items():
        if isinstance(entry, Mapping) and _finite(entry.get("mde")):
            flat[mlflow_key(f"mde.{name}")] = float(entry["mde"])
    return flat


def interval_notes(noise: Mapping[str, Any] | None) -> dict[str, str]:
    """Why a headline number has no interval ('too few scenarios ...'), as run tags
    `agenteval.interval.<name>`: stated, where a metric could only be missing."""
    if not noise:
        return {}
    groups = {"": noise.get("overall") or {}}
    groups |= {f"category.{c}.": v for c, v in (noise.get("categories") or {}).items()}
    notes: dict[str, str] = {}
    for prefix, group in groups.items():
        for name in ("judged_pass_rate", "avg_score"):
            entry = group.get(name) or {}
            if entry.get("value") is not None and entry.get("low") is None and entry.get("note"):
                notes[mlflow_key(f"agenteval.interval.{prefix}{name}")] = str(entry["note"])
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
    sql_store: Any = None,
) -> None:
    """log_batch in MLflow's per-call limits: one call per 100 params/tags or 1,000 metrics.

    One log_metric call per value costs a round trip (~3 ms on sqlite); 1,000 scenarios'
    metrics would take seconds that way and a fraction of one batched. With `sql_store` (a
    SqlAlchemyStore) the metrics of the new run are inserted in one transaction instead
    (tracking.sql_metrics): ten times faster again.
    """
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.utils.validation import (
        MAX_METRICS_PER_BATCH,
        MAX_PARAMS_TAGS_PER_BATCH,
        MAX_TAG_VAL_LENGTH,
    )

    for texts in _chunks(sorted(params.items()), MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, params=[Param(k, v) for k, v in texts])
    for texts in _chunks(sorted(tags.items()), MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, tags=[RunTag(k, v[:MAX_TAG_VAL_LENGTH]) for k, v in texts])
    now_ms = int(time.time() * 1000)
    if sql_store is not None:
        from agenteval.tracking.sql_metrics import insert_metrics

        insert_metrics(sql_store, run_id, dict(sorted(metrics.items())), now_ms)
        return
    for numbers in _chunks(sorted(metrics.items()), MAX_METRICS_PER_BATCH):
        client.log_batch(run_id, metrics=[Metric(k, v, now_ms, 0) for k, v in numbers])


def scenario_table(card: Scorecard) -> pd.DataFrame:
    """One row per scenario iteration; `session` joins it to the MLflow trace sessions."""
    import pandas as pd

    dims = _dimensions(card)
    columns = ["session", "id", "iteration", "category", "severity", "status", "score", "n_turns"]
    rows: list[dict[str, Any]] = []
    for result in card.scenarios:
        row: dict[str, Any] = {
            "session": f"{result.id}/{result.iteration}",
            "id": result.id,
            "iteration": result.iteration,
            "category": result.category,
            "severity": result.severity,
            "status": result.status,
            "score": result.score,
            "n_turns": len(result.turns),
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
) -> list[str]:
    """Upload the reports and the scenario table; returns the artifact names logged."""
    secrets = list(secrets)
    logged: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agenteval-mlflow-") as tmp:
        for name in REPORT_FILES:
            path = layout.reports / name
            if path.is_file():
                client.log_artifact(run_id, str(_redacted(path, Path(tmp), secrets)))
                logged.append(name)
        table = Path(tmp) / TABLE_NAME
        scenario_table(card).to_parquet(table, index=False)
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
