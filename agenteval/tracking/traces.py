"""Log a run's turns as MLflow traces through the public tracing API, then prove the store
holds every one of them.

    sent = log_traces(experiment_id, run_id, turns, model_id)

Each turn is a fluent root span (`mlflow.start_span`): while it is the active span, its
tags, metadata, previews and LoggedModel are set with `mlflow.update_current_trace`, and its
feedback and expectations with `mlflow.log_assessment`, which MLflow then keeps on the
in-memory trace and stores with it (one write per trace instead of one per assessment).
Tool calls are child spans (`mlflow.start_span_no_context`) placed at their recorded offsets,
and the root is ended at the turn's recorded duration, so every duration in the UI is the
one measured (the trace's start is when it was logged; `agenteval.started_at` on the first
turn says when the conversation ran).

MLflow exports finished traces asynchronously (`MLFLOW_ENABLE_ASYNC_TRACE_LOGGING`): its
queue is drained with `mlflow.flush_trace_async_logging()` before it can fill (MLflow drops
what does not fit, see `flush_every`) and at the end. Then the traces, spans and assessments
of the run are counted back with `search_traces` and compared with what was sent; a store
still catching up is drained again while its counts grow (`settled_counts`), and any
difference that remains raises TrackingError.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agenteval.tracking.records import TurnTrace
from agenteval.tracking.store import TrackingError

if TYPE_CHECKING:
    from mlflow import MlflowClient

# MLflow's export queue (`MLFLOW_ASYNC_TRACE_LOGGING_MAX_QUEUE_SIZE`: 1,000 tasks by default,
# 2,000 unless the user chose, `tracking.store`) discards a task that finds it full. A trace
# is at most one task per span and one for the trace (MLflow 3.9 exports each span on its
# own; later versions batch them), so the queue is drained before that many could exceed a
# share of it.
QUEUE_SIZE_ENV = ("MLFLOW_ASYNC_TRACE_LOGGING_MAX_QUEUE_SIZE", 1000)
QUEUE_SHARE = 0.8
# Count-backs after the last drain while the store still catches up (a loaded machine can
# outlast one drain's timeouts); a count that stops growing short of what was sent is a loss.
SETTLE_ROUNDS = 5
SEARCH_PAGE = 500
DELETE_CHUNK = 100  # trace ids per delete_traces call


@dataclass(frozen=True)
class TraceCounts:
    traces: int = 0
    spans: int = 0
    assessments: int = 0

    def __add__(self, other: TraceCounts) -> TraceCounts:
        return TraceCounts(
            self.traces + other.traces,
            self.spans + other.spans,
            self.assessments + other.assessments,
        )

    @classmethod
    def of(cls, turn: TurnTrace) -> TraceCounts:
        return cls(1, 1 + len(turn.tools), len(turn.assessments))


def log_traces(
    client: MlflowClient,
    experiment_id: str,
    run_id: str,
    turns: Iterable[TurnTrace],
    model_id: str | None = None,
    logged: Callable[[TurnTrace, str], None] | None = None,
    settle: Callable[[], TraceCounts] | None = None,
) -> TraceCounts:
    """Log every turn as a trace of `run_id` (linked to the LoggedModel `model_id`), wait
    until MLflow has exported them, and check the store holds exactly what was sent plus
    what `settle()`, called then, returns (the run's traces written before and kept,
    `tracking.live`). The tracking URI must be the client's (`tracking.store.mlflow_client`
    sets both). `logged(turn, trace_id)` is told each trace's id."""
    import mlflow

    mlflow.set_experiment(experiment_id=experiment_id)
    writer, sent = TraceWriter(model_id), TraceCounts()
    probe: tuple[str, TurnTrace] | None = None
    with ended_twice_unsaid():
        for turn in turns:
            trace_id = writer.write(turn)
            if logged is not None:
                logged(turn, trace_id)
            sent += TraceCounts.of(turn)
            probe = probe or (trace_id, turn)
        writer.drain()
    already = settle() if settle is not None else TraceCounts()
    verify(client, experiment_id, run_id, sent + already, probe)
    return sent


class TraceWriter:
    """Writes turns as traces through MLflow's asynchronous export, draining its queue before
    it could fill. The experiment must be set (`mlflow.set_experiment`)."""

    def __init__(self, model_id: str | None = None) -> None:
        self.model_id, self.pending, self.limit = model_id, 0, flush_every()

    def write(self, turn: TurnTrace) -> str:
        """The turn as one trace; returns its id."""
        import mlflow

        exports = 2 + len(turn.tools)  # its spans and the trace itself
        if self.pending + exports > self.limit:
            self.drain()
        self.pending += exports
        return _log_turn(mlflow, turn, self.model_id)

    def drain(self) -> None:
        import mlflow

        mlflow.flush_trace_async_logging()
        self.pending = 0


def flush_every() -> int:
    """Export tasks that may be pending before the queue is drained: a share of the queue
    MLflow was configured with (at least one trace's worth)."""
    name, default = QUEUE_SIZE_ENV
    try:
        size = int(os.environ.get(name) or default)
    except ValueError:
        size = default
    return max(int(size * QUEUE_SHARE), 3)


def _log_turn(mlflow: Any, turn: TurnTrace, model_id: str | None) -> str:
    """One turn as one trace; returns its id."""
    spec = turn.root
    with mlflow.start_span(name=spec.name, span_type=spec.span_type) as root:
        start = root.start_time_ns
        root.set_inputs(spec.inputs)
        root.set_attributes(dict(spec.attributes))
        for tool in turn.tools:
            child = mlflow.start_span_no_context(
                name=tool.name,
                span_type=tool.span_type,
                parent_span=root,
                inputs=tool.inputs,
                attributes=dict(tool.attributes),
                start_time_ns=start + tool.start_ns,
            )
            child.end(
                outputs=tool.outputs,
                status="OK" if tool.ok else "ERROR",
                end_time_ns=start + tool.end_ns,
            )
        mlflow.update_current_trace(
            tags=dict(turn.tags),
            metadata=dict(turn.metadata),
            request_preview=turn.request_preview,
            response_preview=turn.response_preview,
            model_id=model_id,
        )
        for assessment in turn.assessments:
            mlflow.log_assessment(trace_id=root.trace_id, assessment=assessment)
        # Ended here, at the recorded duration; leaving the block ends it again, a no-op.
        root.end(
            outputs=spec.outputs,
            status="OK" if spec.ok else "ERROR",
            end_time_ns=start + spec.end_ns,
        )
        return str(root.trace_id)


class _EndedTwice(logging.Filter):
    """The warnings OpenTelemetry gives when `mlflow.start_span` ends a root span that
    `_log_turn` ended already at its recorded time: expected, so not shown."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "on an ended span" not in record.getMessage()


@contextlib.contextmanager
def ended_twice_unsaid() -> Iterator[None]:
    found = logging.getLogger("opentelemetry.sdk.trace")
    quiet = _EndedTwice()
    found.addFilter(quiet)
    try:
        yield
    finally:
        found.removeFilter(quiet)


def stored_counts(client: MlflowClient, experiment_id: str, run_id: str) -> TraceCounts:
    """Traces of the run in the store, with their spans and assessments."""
    found, token = TraceCounts(), None
    while True:
        page = client.search_traces(
            locations=[experiment_id],
            run_id=run_id,
            include_spans=True,
            max_results=SEARCH_PAGE,
            page_token=token,
        )
        for trace in page:
            found += TraceCounts(1, len(trace.data.spans), len(trace.info.assessments))
        token = page.token
        if not token:
            return found


def settled_counts(
    client: MlflowClient, experiment_id: str, run_id: str, sent: TraceCounts
) -> TraceCounts:
    """What the store holds of the run once it has caught up: while the counts are short of
    what was sent and still growing, MLflow's export is drained again and they are recounted.
    (Its drain gives up on a span processor after 30 s, which a loaded machine can take.)"""
    import mlflow

    stored = stored_counts(client, experiment_id, run_id)
    for _ in range(SETTLE_ROUNDS):
        if stored == sent:
            break
        mlflow.flush_trace_async_logging()
        again = stored_counts(client, experiment_id, run_id)
        if again == stored:
            break
        stored = again
    return stored


def verify(
    client: MlflowClient,
    experiment_id: str,
    run_id: str,
    sent: TraceCounts,
    probe: tuple[str, TurnTrace] | None,
) -> None:
    """Counts in the store equal counts sent, and a trace reads back whole."""
    stored = settled_counts(client, experiment_id, run_id, sent)
    if stored != sent:
        missing = ", ".join(
            f"{name}: {getattr(stored, name)} stored of {getattr(sent, name)} sent"
            for name in ("traces", "spans", "assessments")
            if getattr(stored, name) != getattr(sent, name)
        )
        raise TrackingError(f"MLflow store lost data for run {run_id} ({missing})")
    if probe is None:
        return
    trace_id, turn = probe
    trace = client.get_trace(trace_id)
    expected = TraceCounts.of(turn)
    if (len(trace.data.spans), len(trace.info.assessments)) != (
        expected.spans,
        expected.assessments,
    ):
        raise TrackingError(
            f"trace {trace_id} does not read back as written: {len(trace.data.spans)} "
            f"span(s), {len(trace.info.assessments)} assessment(s) instead of "
            f"{expected.spans} and {expected.assessments}"
        )


def run_trace_ids(client: MlflowClient, experiment_id: str, run_id: str) -> list[str]:
    """Ids of every trace of the run in the store."""
    ids, token = [], None
    while True:
        page = client.search_traces(
            locations=[experiment_id],
            run_id=run_id,
            include_spans=False,
            max_results=SEARCH_PAGE,
            page_token=token,
        )
        ids += [trace.info.trace_id for trace in page]
        token = page.token
        if not token:
            return ids


def delete_traces(client: MlflowClient, experiment_id: str, ids: Sequence[str]) -> None:
    """The traces `ids` removed, in chunks MLflow takes."""
    for start in range(0, len(ids), DELETE_CHUNK):
        client.delete_traces(experiment_id, trace_ids=list(ids[start : start + DELETE_CHUNK]))


def delete_run_traces(client: MlflowClient, experiment_id: str, run_id: str) -> None:
    """Every trace of the run removed (a failed attempt's: its retry has the same run key,
    so its sessions would otherwise show this attempt's turns as well), once MLflow has
    finished exporting what it still held."""
    import mlflow

    mlflow.flush_trace_async_logging()
    delete_traces(client, experiment_id, run_trace_ids(client, experiment_id, run_id))
