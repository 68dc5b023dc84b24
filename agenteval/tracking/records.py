"""Finished traces as MLflow entities, built directly rather than through live spans.

A conversation turn is already over when it is logged: its start, end, tool calls and scores
are on disk. Building `mlflow.entities.Span` and `TraceInfo` objects from them (the same
attribute encoding MLflow's LiveSpan writes) skips the OpenTelemetry span processors and the
one-round-trip-per-object export of the fluent API, so `tracking.traces_store` can write a
whole batch of traces, spans and assessments at once.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow.entities import Assessment, Span, TraceInfo

# MLflow's limits and keys, restated where they shape what we build (mlflow.tracing.constant).
PREVIEW_CHARS = 1000  # TRACE_REQUEST_RESPONSE_PREVIEW_MAX_LENGTH_OSS
METADATA_CHARS = 250  # MAX_CHARS_IN_TRACE_INFO_METADATA
SESSION_KEY = "mlflow.trace.session"
USER_KEY = "mlflow.trace.user"
SOURCE_RUN_KEY = "mlflow.sourceRun"
MODEL_ID_KEY = "mlflow.modelId"  # links a trace to a LoggedModel (the agent version)
SESSION_RUN_CHARS = 12  # characters of the run id in a session id
TOKEN_USAGE_KEY = "mlflow.chat.tokenUsage"  # span attribute MLflow totals per trace


def session_id(run_id: str, scenario_id: str, iteration: int) -> str:
    """`false_premise.0.7189ff3c0721`: the scenario, its iteration and the MLflow run, so
    every run's conversation is its own session (the run id, not the run key: the traces of
    `agenteval run` are written while it runs, before its key exists). Only characters that
    are safe in the path of the MLflow UI's session page (a `/` there is "Page Not Found")."""
    return f"{scenario_id}.{iteration}.{run_id[:SESSION_RUN_CHARS]}"


@dataclass
class TraceRecord:
    """One trace ready to store: its info (with assessments attached) and its spans."""

    info: TraceInfo
    spans: list[Span] = field(default_factory=list)

    @property
    def assessments(self) -> list[Assessment]:
        return list(self.info.assessments)


@dataclass(frozen=True)
class SpanSpec:
    """What one span says; `attributes` are plain values (encoded as MLflow encodes them)."""

    name: str
    span_type: str
    start_ns: int
    end_ns: int
    inputs: Any = None
    outputs: Any = None
    ok: bool = True
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TraceSpec:
    """What one trace says apart from its spans: names, tags, metadata, assessments."""

    name: str
    experiment_id: str
    tags: Mapping[str, str]
    metadata: Mapping[str, str]
    request_preview: str | None
    response_preview: str | None
    assessments: Sequence[Assessment] = ()


@functools.cache
def _mlflow() -> Any:
    """The MLflow names used per span, imported once (mlflow is never imported at start-up)."""
    from types import SimpleNamespace

    from mlflow.entities import Span, SpanStatusCode, TraceInfo, TraceLocation, TraceState
    from mlflow.entities.span_status import SpanStatus
    from mlflow.tracing.constant import TRACE_SCHEMA_VERSION, TRACE_SCHEMA_VERSION_KEY
    from mlflow.tracing.utils import (
        build_otel_context,
        dump_span_attribute_value,
        generate_mlflow_trace_id_from_otel_trace_id,
    )
    from mlflow.tracing.utils.default_log_level import default_log_level_for_span_type
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

    return SimpleNamespace(
        Span=Span,
        ReadableSpan=ReadableSpan,
        empty_resource=Resource.get_empty(),
        ok=SpanStatus(SpanStatusCode.OK).to_otel_status(),
        error=SpanStatus(SpanStatusCode.ERROR).to_otel_status(),
        context=build_otel_context,
        dump=dump_span_attribute_value,
        trace_id=generate_mlflow_trace_id_from_otel_trace_id,
        log_level=default_log_level_for_span_type,
        TraceInfo=TraceInfo,
        TraceLocation=TraceLocation,
        TraceState=TraceState,
        schema=(TRACE_SCHEMA_VERSION_KEY, str(TRACE_SCHEMA_VERSION)),
    )


@dataclass(frozen=True)
class BuiltSpans:
    """The spans of one trace, built: its new id, the root span first, then its children."""

    trace_id: str
    spans: list[Span]


def build_spans(root: SpanSpec, children: Sequence[SpanSpec], experiment_id: str) -> BuiltSpans:
    """A new trace's spans: `root` and its direct children, under fresh random ids."""
    m = _mlflow()
    otel_trace_id = random.getrandbits(128) or 1
    trace_id = m.trace_id(otel_trace_id)
    root_id = random.getrandbits(64) or 1
    spans = [_span(m, trace_id, otel_trace_id, root_id, None, root, experiment_id)]
    for child in children:
        span_id = random.getrandbits(64) or 1
        spans.append(_span(m, trace_id, otel_trace_id, span_id, root_id, child, None))
    return BuiltSpans(trace_id, spans)


def build_trace(spec: TraceSpec, root: SpanSpec, built: BuiltSpans) -> TraceRecord:
    """The trace of `built` (`build_spans` of `root` and its children, in this experiment),
    with the info, metadata and assessments `spec` gives it."""
    m = _mlflow()
    trace_id = built.trace_id
    metadata = dict(spec.metadata)
    metadata[m.schema[0]] = m.schema[1]
    metadata["mlflow.traceInputs"] = _cut(m.dump(root.inputs), METADATA_CHARS) or ""
    metadata["mlflow.traceOutputs"] = _cut(m.dump(root.outputs), METADATA_CHARS) or ""
    usage = root.attributes.get(TOKEN_USAGE_KEY)
    if usage:  # the trace total MLflow's exporter would have aggregated from the spans
        metadata["mlflow.trace.tokenUsage"] = m.dump(usage)
    for assessment in spec.assessments:
        assessment.trace_id = trace_id
    info = m.TraceInfo(
        trace_id=trace_id,
        trace_location=m.TraceLocation.from_experiment_id(spec.experiment_id),
        request_time=root.start_ns // 1_000_000,
        execution_duration=(root.end_ns - root.start_ns) // 1_000_000,
        state=m.TraceState.OK if root.ok else m.TraceState.ERROR,
        request_preview=_cut(spec.request_preview, PREVIEW_CHARS),
        response_preview=_cut(spec.response_preview, PREVIEW_CHARS),
        trace_metadata=metadata,
        tags={"mlflow.traceName": spec.name, **spec.tags},
        assessments=list(spec.assessments),
    )
    return TraceRecord(info, list(built.spans))


def _span(
    m: Any,
    trace_id: str,
    otel_trace_id: int,
    span_id: int,
    parent_id: int | None,
    spec: SpanSpec,
    experiment_id: str | None,
) -> Span:
    """An immutable MLflow span with the attributes LiveSpan would have written."""
    attributes = {
        "mlflow.traceRequestId": m.dump(trace_id),
        "mlflow.spanType": m.dump(spec.span_type),
        "mlflow.spanLogLevel": m.dump(int(m.log_level(spec.span_type))),
        "mlflow.spanInputs": m.dump(spec.inputs),
        "mlflow.spanOutputs": m.dump(spec.outputs),
    }
    if experiment_id is not None:
        attributes["mlflow.experimentId"] = m.dump(experiment_id)
    for key, value in spec.attributes.items():
        attributes[key] = m.dump(value)
    readable = m.ReadableSpan(
        name=spec.name,
        context=m.context(otel_trace_id, span_id),
        parent=m.context(otel_trace_id, parent_id) if parent_id is not None else None,
        start_time=spec.start_ns,
        end_time=spec.end_ns,
        attributes=attributes,
        status=m.ok if spec.ok else m.error,
        resource=m.empty_resource,  # Resource.create() per span is slow (mlflow#15625)
    )
    return m.Span(readable)  # type: ignore[no-any-return]


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 3] + "..."
