"""Write a run's traces in batches and prove the store holds every one of them.

    sent = log_traces(uri, experiment_id, run_id, records)

Two writers, one contract. A SQL store (sqlite, PostgreSQL, MySQL URIs) gets
`sql_traces.SqlTraceWriter`: one transaction and one executemany per table per batch. Any
other store (an MLflow tracking server over HTTP) gets `ApiTraceWriter`: MLflow's own
`start_trace` (trace info with its assessments in one request) from a pool of threads, then
`log_spans` once per batch. After the last batch the traces, spans and assessments the store
holds for the run are counted and compared with what was sent, and one trace is read back
through MLflow's public API; any difference raises TrackingError.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agenteval.tracking.records import TraceRecord
from agenteval.tracking.store import TrackingError

if TYPE_CHECKING:
    from mlflow.tracing.client import TracingClient

BATCH_TRACES = 500  # traces per transaction: ~0.3 s of sqlite write lock per batch
API_WORKERS = 8  # start_trace requests in flight to a tracking server
SEARCH_PAGE = 500


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
    def of(cls, records: Sequence[TraceRecord]) -> TraceCounts:
        return cls(
            len(records),
            sum(len(r.spans) for r in records),
            sum(len(r.info.assessments) for r in records),
        )


class TraceWriter(Protocol):
    def write(self, records: Sequence[TraceRecord]) -> None: ...

    def counts(self, run_id: str) -> dict[str, int]: ...


class ApiTraceWriter:
    """Through MLflow's tracing client: works with every store, one request per trace."""

    def __init__(self, client: TracingClient, experiment_id: str, workers: int = API_WORKERS):
        self.client, self.experiment_id, self.workers = client, experiment_id, max(1, workers)

    def write(self, records: Sequence[TraceRecord]) -> None:
        # Trace infos first (with their assessments), so log_spans finds finalized traces
        # and never overwrites their times, previews or token totals.
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            list(pool.map(self.client.start_trace, [r.info for r in records]))
        spans = [span for record in records for span in record.spans]
        if spans:
            self.client.log_spans(self.experiment_id, spans)

    def counts(self, run_id: str) -> dict[str, int]:
        found = {"traces": 0, "spans": 0, "assessments": 0}
        token = None
        while True:
            page = self.client.search_traces(
                locations=[self.experiment_id],
                run_id=run_id,
                include_spans=True,
                max_results=SEARCH_PAGE,
                page_token=token,
            )
            for trace in page:
                found["traces"] += 1
                found["spans"] += len(trace.data.spans)
                found["assessments"] += len(trace.info.assessments)
            token = page.token
            if not token:
                return found


def run_trace_ids(uri: str, experiment_id: str, run_id: str) -> list[str]:
    """Ids of every trace of the run in the store."""
    from mlflow.tracing.client import TracingClient

    client, ids, token = TracingClient(uri), [], None
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


def sql_store(uri: str) -> Any:
    """The SqlAlchemyStore behind `uri`, or None for any other kind of store."""
    from mlflow.tracing.client import TracingClient

    from agenteval.tracking.sql_traces import is_sql_store

    store = TracingClient(uri).store
    return store if is_sql_store(store) else None


def make_writer(uri: str, experiment_id: str, *, sql: bool | None = None) -> Any:
    """The fastest lossless writer for the store behind `uri` (`sql=False` forces the API)."""
    from mlflow.tracing.client import TracingClient

    from agenteval.tracking.sql_traces import SqlTraceWriter, is_sql_store

    client = TracingClient(uri)
    store = client.store
    if sql is not False and is_sql_store(store):
        return SqlTraceWriter(store, experiment_id)
    if sql:
        raise TrackingError(f"{type(store).__name__} is not a SQL tracking store")
    return ApiTraceWriter(client, experiment_id)


def log_traces(
    uri: str,
    experiment_id: str,
    run_id: str,
    records: Iterable[TraceRecord],
    *,
    writer: TraceWriter | None = None,
    batch: int = BATCH_TRACES,
    already: tuple[TraceCounts, TraceRecord | None] = (TraceCounts(), None),
) -> TraceCounts:
    """Write every record in batches, then verify the store holds exactly what was sent.
    `already`: what this run's traces in the store hold before this call (the traces
    `tracking.stream` wrote while the run ran) and one of them, whole, to read back."""
    writer = writer or make_writer(uri, experiment_id)
    sent, probe = already
    for chunk in _batches(records, batch):
        sent += TraceCounts.of(chunk)  # counted before the store sees them
        probe = probe or chunk[0]
        writer.write(chunk)
    verify(writer, uri, run_id, sent, probe)
    return sent


def verify(
    writer: TraceWriter, uri: str, run_id: str, sent: TraceCounts, probe: TraceRecord | None
) -> None:
    """Counts in the store equal counts sent, and a trace reads back whole through MLflow."""
    stored = writer.counts(run_id)
    expected = {"traces": sent.traces, "spans": sent.spans, "assessments": sent.assessments}
    if stored != expected:
        missing = ", ".join(
            f"{name}: {stored.get(name, 0)} stored of {count} sent"
            for name, count in expected.items()
            if stored.get(name) != count
        )
        raise TrackingError(f"MLflow store lost data for run {run_id} ({missing})")
    if probe is None:
        return
    from mlflow.tracing.client import TracingClient

    trace = TracingClient(uri).get_trace(probe.info.trace_id)
    if (len(trace.data.spans), len(trace.info.assessments)) != (
        len(probe.spans),
        len(probe.info.assessments),
    ):
        raise TrackingError(
            f"trace {probe.info.trace_id} does not read back as written: "
            f"{len(trace.data.spans)} span(s), {len(trace.info.assessments)} assessment(s) "
            f"instead of {len(probe.spans)} and {len(probe.info.assessments)}"
        )


def _batches(records: Iterable[TraceRecord], size: int) -> Iterator[list[TraceRecord]]:
    iterator = iter(records)
    while chunk := list(itertools.islice(iterator, max(1, size))):
        yield chunk
