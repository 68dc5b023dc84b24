"""Traces written straight into a SQL tracking store (sqlite, PostgreSQL, MySQL), a batch per
transaction.

MLflow's `start_trace` is one transaction per trace (~9 ms on sqlite with five assessments,
almost all of it SQLAlchemy ORM work) and `log_spans` another per batch. For traces that are
already finished and whose ids are new, the rows those two calls leave behind are fully
determined; this module builds exactly those rows (same columns, same values, the same
promoted metadata, the artifact-location and spans-location tags, the rollup rebuild queue)
and inserts each table's rows with one executemany per batch. `tests/test_track_store.py`
writes the same records both ways and compares every row, so an MLflow upgrade that changes
what the store writes fails that test instead of silently diverging.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval.tracking.records import SOURCE_RUN_KEY, TraceRecord

if TYPE_CHECKING:
    from mlflow.entities import Assessment, Experiment, Span
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    from agenteval.tracking.conversations import Late


# Trace ids per counting query: well under any database's limit on bound parameters
# (sqlite's is 32,766; older builds 999).
COUNT_CHUNK = 900


@dataclass
class Rows:
    """The rows of one batch, per table, in insertion order (parents before children)."""

    trace_info: list[dict[str, Any]] = field(default_factory=list)
    trace_tags: list[dict[str, Any]] = field(default_factory=list)
    trace_request_metadata: list[dict[str, Any]] = field(default_factory=list)
    assessments: list[dict[str, Any]] = field(default_factory=list)
    spans: list[dict[str, Any]] = field(default_factory=list)
    partitions: list[tuple[Any, int, list[int]]] = field(default_factory=list)


def is_sql_store(store: object) -> bool:
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

    return isinstance(store, SqlAlchemyStore)


class SqlTraceWriter:
    """Writes batches of finished traces into one experiment of a SqlAlchemyStore."""

    def __init__(self, store: SqlAlchemyStore, experiment_id: str) -> None:
        from mlflow.store.db.db_types import MSSQL

        self.store = store
        self.experiment: Experiment = store.get_experiment(experiment_id)  # type: ignore[no-untyped-call]
        store._check_experiment_is_active(self.experiment)  # type: ignore[no-untyped-call]
        # MLflow keeps span JSON unescaped except on MSSQL (non-Unicode VARCHAR content).
        self.ensure_ascii = store.db_type == MSSQL

    def write(self, records: Sequence[TraceRecord]) -> None:
        rows = Rows()
        for record in records:
            self._add_trace(rows, record)
        with self.store.ManagedSessionMaker(read_only=False) as session:
            insert_rows(session, rows)

    def _add_trace(self, rows: Rows, record: TraceRecord) -> None:
        """What start_trace(info) and then log_spans(spans) store for a new, finished trace."""
        from mlflow.store.tracking.utils.sql_trace_rollups import RollupFamily
        from mlflow.store.tracking.utils.trace_analytics import (
            PROMOTED_TRACE_METADATA_KEYS,
            analytics_columns_from_metadata,
            validate_trace_name,
        )
        from mlflow.tracing.constant import SpansLocation, TraceMetadataKey, TraceTagKey

        info, trace_id = record.info, record.info.trace_id
        experiment_id = int(self.experiment.experiment_id)
        metadata = dict(info.trace_metadata)
        row = {
            "request_id": trace_id,
            "experiment_id": experiment_id,
            "timestamp_ms": info.request_time,
            "execution_time_ms": info.execution_duration,
            "status": info.state.value,
            "client_request_id": info.client_request_id,
            "request_preview": info.request_preview,
            "response_preview": info.response_preview,
            "trace_name": validate_trace_name(info.tags.get(TraceTagKey.TRACE_NAME)),
            # start_trace leaves 0; the log_spans that stores the spans advances it once.
            "db_payload_generation": 1,
            **analytics_columns_from_metadata(metadata),
        }
        rows.trace_info.append(row)
        tags = {k: v for k, v in info.tags.items() if k != TraceTagKey.TRACE_NAME}
        location = self.store._get_trace_artifact_location_tag(self.experiment, trace_id)
        tags[str(location.key)] = str(location.value)
        tags[TraceTagKey.SPANS_LOCATION] = SpansLocation.TRACKING_STORE.value
        rows.trace_tags += [{"request_id": trace_id, "key": k, "value": v} for k, v in tags.items()]
        for key in PROMOTED_TRACE_METADATA_KEYS:
            metadata.pop(key, None)
        metadata[TraceMetadataKey.TRACE_INFO_FINALIZED] = "true"
        rows.trace_request_metadata += [
            {"request_id": trace_id, "key": k, "value": v} for k, v in sorted(metadata.items())
        ]
        for assessment in info.assessments:
            rows.assessments.append(_assessment_row(assessment, trace_id, row))
        rows.spans += [self.span_row(span, experiment_id) for span in record.spans]
        starts = [info.request_time]
        rows.partitions += [(RollupFamily.TRACE_METRIC, experiment_id, starts),
                            (RollupFamily.ASSESSMENT, experiment_id, starts)]  # fmt: skip
        rows.partitions += [
            (RollupFamily.SPAN_COST, experiment_id, [s.start_time_ns // 1_000_000])
            for s in record.spans
        ]

    def write_late(self, parts: Sequence[Late]) -> None:
        """Add the late parts (tags, metadata, assessments) of traces already stored: the rows
        `write` would have made for them had they been in the trace from the start."""
        from mlflow.store.tracking.utils.sql_trace_rollups import RollupFamily

        rows = Rows()
        experiment_id = int(self.experiment.experiment_id)
        for late in parts:
            trace_id = late.trace_id
            rows.trace_tags += [{"request_id": trace_id, "key": k, "value": v}
                                for k, v in late.tags.items()]  # fmt: skip
            rows.trace_request_metadata += [
                {"request_id": trace_id, "key": k, "value": v}
                for k, v in sorted(late.metadata.items())
            ]
            trace = {"experiment_id": experiment_id, "timestamp_ms": late.request_time_ms}
            for assessment in late.assessments:
                assessment.trace_id = trace_id
                rows.assessments.append(_assessment_row(assessment, trace_id, trace))
            if late.assessments:
                rows.partitions.append(
                    (RollupFamily.ASSESSMENT, experiment_id, [late.request_time_ms])
                )
        with self.store.ManagedSessionMaker(read_only=False) as session:
            insert_rows(session, rows)

    def span_row(self, span: Span, experiment_id: int) -> dict[str, Any]:
        from mlflow.tracing.otel.translation import translate_span_when_storing
        from mlflow.tracing.utils import TraceJSONEncoder

        span_dict = translate_span_when_storing(span)
        content = json.dumps(span_dict, cls=TraceJSONEncoder, ensure_ascii=self.ensure_ascii)
        # records.py never sets the cost and model attributes MLflow promotes to columns.
        return {
            "trace_id": span.trace_id,
            "experiment_id": experiment_id,
            "span_id": span.span_id,
            "parent_span_id": span.parent_id,
            "name": span.name,
            "type": span.span_type,
            "status": span.status.status_code,
            "start_time_unix_nano": span.start_time_ns,
            "end_time_unix_nano": span.end_time_ns,
            "content": content,
            "input_cost": None,
            "output_cost": None,
            "total_cost": None,
            "model_name": None,
            "model_provider": None,
        }

    def counts(self, run_id: str) -> dict[str, int]:
        """Traces of the run in the store, with their spans and assessments: counted rows.

        Finding the run's traces scans every trace's source-run row (MLflow indexes that
        table by key, not by value), so it is done once: the spans and assessments are then
        counted by trace id through their own indexes, in chunks."""
        from sqlalchemy import func, select

        models = _models()
        traces = (
            select(models.SqlTraceMetadata.request_id)
            .join(
                models.SqlTraceInfo,
                models.SqlTraceInfo.request_id == models.SqlTraceMetadata.request_id,
            )
            .where(
                models.SqlTraceMetadata.key == SOURCE_RUN_KEY,
                models.SqlTraceMetadata.value == run_id,
                models.SqlTraceInfo.experiment_id == int(self.experiment.experiment_id),
            )
        )
        with self.store.ManagedSessionMaker() as session:
            ids = list(session.execute(traces).scalars())
            found = {"traces": len(ids), "spans": 0, "assessments": 0}
            for start in range(0, len(ids), COUNT_CHUNK):
                chunk = ids[start : start + COUNT_CHUNK]
                for name, column in (
                    ("spans", models.SqlSpan.trace_id),
                    ("assessments", models.SqlAssessments.trace_id),
                ):
                    query = select(func.count()).where(column.in_(chunk))
                    found[name] += int(session.execute(query).scalar_one())
        return found


def _assessment_row(assessment: Assessment, trace_id: str, trace: dict[str, Any]) -> dict[str, Any]:
    """The row SqlAssessments.from_mlflow_entity builds, plus what start_trace adds to it."""
    from mlflow.store.tracking.utils.trace_analytics import assessment_aggregate
    from mlflow.tracing.utils import generate_assessment_id
    from mlflow.utils.time import get_current_time_millis

    if assessment.assessment_id is None:
        assessment.assessment_id = generate_assessment_id()
    now = get_current_time_millis()  # type: ignore[no-untyped-call]
    if assessment.feedback is not None:
        kind, value = "feedback", assessment.feedback.value
        error = assessment.feedback.error
        error_json = json.dumps(error.to_dictionary()) if error else None
    elif assessment.expectation is not None:
        kind, value, error_json = "expectation", assessment.expectation.value, None
    else:
        raise ValueError(f"assessment {assessment.name!r} is neither feedback nor expectation")
    aggregate_value, is_numeric = assessment_aggregate(value)
    return {
        "assessment_id": assessment.assessment_id,
        "trace_id": trace_id,
        "name": assessment.name,
        "assessment_type": kind,
        "value": json.dumps(value),
        "error": error_json,
        "created_timestamp": assessment.create_time_ms or now,
        "last_updated_timestamp": assessment.last_update_time_ms or now,
        "source_type": assessment.source.source_type,
        "source_id": assessment.source.source_id,
        "run_id": assessment.run_id,
        "span_id": assessment.span_id,
        "rationale": assessment.rationale,
        "overrides": assessment.overrides,
        "valid": True,
        "assessment_metadata": json.dumps(assessment.metadata) if assessment.metadata else None,
        "experiment_id": trace["experiment_id"],
        "trace_timestamp_ms": trace["timestamp_ms"],
        "aggregate_value": aggregate_value,
        "is_numeric_value": is_numeric,
    }


def _models() -> Any:
    from mlflow.store.tracking.dbmodels import models

    return models


def insert_rows(session: Any, rows: Rows) -> None:
    """One executemany per table, parents first, in the caller's transaction."""
    from mlflow.store.tracking.utils.sql_trace_rollups import enqueue_rollup_rebuild_partitions

    models = _models()
    # The rebuild queue is locked first, as MLflow's own writers do (no-op unless rollups
    # are enabled for the deployment).
    enqueue_rollup_rebuild_partitions(session, rows.partitions)
    # Core statements on the session's connection (same transaction): through
    # Session.execute each would first pass the ORM's statement handling.
    connection = session.connection()
    for model, values in (
        (models.SqlTraceInfo, rows.trace_info),
        (models.SqlTraceTag, rows.trace_tags),
        (models.SqlTraceMetadata, rows.trace_request_metadata),
        (models.SqlAssessments, rows.assessments),
        (models.SqlSpan, rows.spans),
    ):
        if values:
            execute_many(connection, model.__table__, values)


def execute_many(connection: Any, table: Any, values: list[dict[str, Any]]) -> None:
    """INSERT every row of `values` (dicts with the same keys) into `table`: the statement
    compiled once for the connection's dialect and handed to the driver's executemany.
    SQLAlchemy's own executemany processes each row's parameters first, a fifth of the
    insert time for a run's traces; no column here needs that for the values built in this
    module (plain str, int, float, bool and None, which every driver adapts itself)."""
    compiled = _insert_for(table, connection.dialect, tuple(values[0]))
    rows: list[Any] = values
    if compiled.positional:
        order = compiled.positiontup or []
        rows = [tuple(row[key] for key in order) for row in values]
    connection.exec_driver_sql(compiled.string, rows)


@functools.lru_cache(maxsize=64)
def _insert_for(table: Any, dialect: Any, keys: tuple[str, ...]) -> Any:
    """The INSERT of these columns, compiled once per dialect (a stream flushes 32 traces
    at a time: compiling it for every flush cost 3 ms each)."""
    from sqlalchemy import insert

    return insert(table).compile(dialect=dialect, column_keys=list(keys))
