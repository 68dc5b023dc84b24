"""Benchmark: what MLflow's SQL store spends on one trace, by the path the write takes.

Run from the repository root with the venv active:  python bench/mlflow_store_paths.py
Options: --turns N (default 100).

Why agenteval's traces cost what they cost (docs/performance.md). MLflow's exporter writes a
finished trace twice: its spans (`log_spans`, batched) and its info with tags, metadata and
assessments (`start_trace`), both queued on its worker threads, spans first. When the spans
land first they create the trace's row, and `start_trace` then takes its slower path: it
rolls back, locks the row, and merges every tag, metadata entry and assessment one by one.

The script logs N turns as agenteval does (a sqlite store in a temporary folder), reads the
traces back, and replays copies of them into the same store in both orders, timing the
store's own calls (CPU of this process per trace, and wall): `start_trace` on a new trace,
then `log_spans` of all of them in one batch; `log_spans` first, then `start_trace` on a
trace that exists; the latter again with the assessments, agenteval's tags or MLflow's own
environment metadata left out, to price each; `log_spans` per trace; and the count-back
(`search_traces` with and without spans). To time the store directly it calls
`SqlAlchemyStore` methods, which agenteval itself never does (it uses MLflow's public API
only, tests/test_mlflow_public.py): this is a measuring instrument, not a way to log.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"  # before anything imports mlflow

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import mlflow_logging  # noqa: E402

from agenteval.pipeline import Layout  # noqa: E402

ENV_METADATA = ("mlflow.source.", "mlflow.user", "mlflow.trace.size")


def logged_store(folder: Path, turns: int) -> str:
    """A sqlite store holding `turns` traces logged by agenteval (experiment "traces")."""
    uri = f"sqlite:///{folder.as_posix()}/mlflow.db"
    results = [mlflow_logging.scenario_result(i) for i in range(max(1, turns // 2))]
    layout = Layout.run_dir(ROOT, folder / "run")
    mlflow_logging.write_scorecard(layout, results)
    mlflow_logging.write_conversations(layout, results)
    mlflow_logging.timed_log(layout, uri, "traces", traces=True)
    return uri


def copy_of(trace: Any, experiment_id: str, drop: tuple[str, ...] = ()) -> tuple[Any, list[Any]]:
    """(info, spans) of a new trace with the same content; `drop`: "assessments", "tags",
    "environment" leave those out of its info."""
    from mlflow.entities import Span

    trace_id = "tr-" + uuid.uuid4().hex
    info = copy.deepcopy(trace.info)
    info.trace_id = trace_id
    info.trace_location.mlflow_experiment.experiment_id = experiment_id
    for key in ("mlflow.trace.spansLocation", "mlflow.artifactLocation"):
        info.tags.pop(key, None)
    if "tags" in drop:
        info.tags = {k: v for k, v in info.tags.items() if not k.startswith("agenteval.")}
    if "environment" in drop:
        info.trace_metadata = {
            k: v for k, v in info.trace_metadata.items() if not k.startswith(ENV_METADATA)
        }
    info.assessments = [] if "assessments" in drop else info.assessments
    for assessment in info.assessments:
        assessment.trace_id, assessment.assessment_id = trace_id, None
    spans = []
    for span in trace.data.spans:
        data = span.to_dict()
        data["trace_id"] = base64.b64encode(uuid.UUID(trace_id[3:]).bytes).decode()
        data["attributes"]["mlflow.traceRequestId"] = json.dumps(trace_id)
        spans.append(Span.from_dict(data))
    return info, spans


def timed(label: str, n: int, call: Callable[[], Any], rows: list[str]) -> None:
    cpu, wall = time.process_time(), time.perf_counter()
    call()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    rows.append(f"{label:58s} {cpu / n * 1000:6.1f} ms CPU {wall / n * 1000:7.1f} ms wall")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    import mlflow
    from mlflow.tracking._tracking_service.utils import _get_store  # measuring only

    rows: list[str] = []
    with tempfile.TemporaryDirectory(prefix="agenteval-bench-") as tmp:
        uri = logged_store(Path(tmp), args.turns)
        client = mlflow.MlflowClient(tracking_uri=uri)
        source = client.get_experiment_by_name("traces").experiment_id
        traces = client.search_traces(locations=[source], max_results=args.turns)
        n, store = len(traces), _get_store(uri)
        experiment = client.create_experiment("replay")
        info = traces[0].info
        rows.append(
            f"{n} traces of {len(traces[0].data.spans)} spans, {len(info.tags)} tags, "
            f"{len(info.trace_metadata)} metadata, {len(info.assessments)} assessments (first)"
        )

        def spans_of(found: list[tuple[Any, list[Any]]]) -> list[Any]:
            return [span for _, spans in found for span in spans]

        new = [copy_of(t, experiment) for t in traces]
        timed("start_trace, new trace", n, lambda: [store.start_trace(i) for i, _ in new], rows)
        timed(
            "then log_spans, one batch", n, lambda: store.log_spans(experiment, spans_of(new)), rows
        )
        for drop in ((), ("assessments",), ("tags",), ("environment",)):
            found = [copy_of(t, experiment, drop) for t in traces]
            store.log_spans(experiment, spans_of(found))
            label = "start_trace after its spans" + (f", without {drop[0]}" if drop else "")
            timed(label, n, lambda f=found: [store.start_trace(i) for i, _ in f], rows)
        first = [copy_of(t, experiment) for t in traces]
        timed(
            "log_spans first, one batch",
            n,
            lambda: store.log_spans(experiment, spans_of(first)),
            rows,
        )
        each = [copy_of(t, experiment) for t in traces]
        timed(
            "log_spans, one call per trace (creates it)",
            n,
            lambda: [store.log_spans(experiment, s) for _, s in each],
            rows,
        )
        for spans in (True, False):
            timed(
                f"search_traces, include_spans={spans}",
                n,
                lambda s=spans: client.search_traces(
                    locations=[source], max_results=n, include_spans=s
                ),
                rows,
            )
    print("\n".join(rows))
    print(f"rerun: python bench/mlflow_store_paths.py --turns {args.turns}  "
          f"(mlflow {mlflow.__version__}, python {sys.version.split()[0]})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
