"""A benchmark run in MLflow: the same provenance tags as a scenario run, its metrics and files.

`benchmark_run` is how every benchmark opens its run (this one, tasks, sessions, memory):
logging the same results twice finds the existing run by its key (tag `agenteval.run_key`),
like `agenteval.tracking.run`. mlflow is imported only inside the calls.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.fileio import digest_of, read_json, sha256_file
from agenteval.layout import Layout
from agenteval.params import flatten, section_digest
from agenteval.tracking.run import TrackResult, write_run_record

BASE_SECTIONS = ("suite", "target", "simulator", "run")


def _tree_digest(path: Path) -> str | None:
    if path.is_file():
        return sha256_file(path)
    if not path.is_dir():
        return None
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return digest_of({p.relative_to(path).as_posix(): sha256_file(p) for p in files})


def metric_key(name: str) -> str:
    """An MLflow metric name: `@` and `^` are not allowed, and pass@k must stay apart from
    pass^k, so they are spelled out (correct.pass_at_3, correct.pass_hat_3)."""
    from agenteval.tracking.provenance import mlflow_key

    return mlflow_key(name.replace("@", "_at_").replace("^", "_hat_"))


def numeric_leaves(metrics: Mapping[str, Any]) -> dict[str, float]:
    """{"correct.pass_at_3.value": 0.4, ...}: every finite number of metrics.json."""
    out = {}
    for key, value in flatten(dict(metrics)).items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(value):
            out[metric_key(key)] = float(value)
    return out


def tracking_enabled(params: Mapping[str, Any]) -> bool:
    """Whether params' `tracking` section asks for MLflow runs (on unless `enabled: false`)."""
    return bool((params.get("tracking") or {}).get("enabled", True))


@dataclass(frozen=True)
class BenchmarkRun:
    """A benchmark's MLflow run: the one already logged under its key (`created` false:
    nothing more is logged) or one just started."""

    client: Any  # mlflow.MlflowClient on the run's store
    run_id: str
    created: bool
    experiment_id: str
    key: str
    tracking_uri: str  # without credentials

    def result(self, traces: int = 0) -> TrackResult:
        return TrackResult(
            self.run_id, self.created, traces, self.experiment_id, self.key, self.tracking_uri
        )


@contextmanager
def benchmark_run(
    params: Mapping[str, Any],
    root: Path,
    key: str,
    *,
    name: str,
    experiment: str | None = None,
) -> Iterator[BenchmarkRun]:
    """The run logged in full under `key` in `tracking.experiment` (else `experiment`, else
    agenteval's default), or a new run named `name` that is MLflow's active run while the
    block logs into it: FINISHED when the block ends, FAILED if it raises. Traces are in the
    store when their span ends, so feedback can be logged on them at once; a fault of the
    store is a TrackingError."""
    from agenteval.tracking.store import (
        DEFAULT_EXPERIMENT,
        RUN_KEY_TAG,
        ensure_experiment,
        find_run,
        mlflow_client,
        public_uri,
        repository_root,
        resolve_tracking_uri,
        store_failures,
    )

    section = params.get("tracking") or {}
    uri = resolve_tracking_uri(section.get("uri"), repository_root(root))
    chosen = section.get("experiment") or experiment or DEFAULT_EXPERIMENT
    with mlflow_client(uri, synchronous_traces=True) as client, store_failures(uri):
        import mlflow

        experiment_id = ensure_experiment(client, chosen, uri)
        found = find_run(client, experiment_id, key)
        if found is not None:
            yield BenchmarkRun(client, found, False, experiment_id, key, public_uri(uri))
            return
        tags = {RUN_KEY_TAG: key}
        with mlflow.start_run(experiment_id=experiment_id, run_name=name, tags=tags) as run:
            run_id = str(run.info.run_id)
            yield BenchmarkRun(client, run_id, True, experiment_id, key, public_uri(uri))


def log_benchmark(
    layout: Layout,
    params: Mapping[str, Any],
    config: Mapping[str, Any],
    *,
    kind: str,
    lock: Path | None,
    artifacts: Iterable[Path],
) -> TrackResult | None:
    """Log `layout.metrics` and `artifacts` as one MLflow run; None when tracking is off."""
    if not tracking_enabled(params):
        write_run_record(layout, None)
        return None
    files = [p for p in artifacts if p.exists()]
    sections = (*BASE_SECTIONS, kind)
    key = digest_of(
        {
            "kind": kind,
            "files": {p.name: _tree_digest(p) for p in [layout.metrics, *files]},
            "params": section_digest(dict(params), *sections),
        }
    )
    model = (config.get("target") or {}).get("model") or "agent"
    name = os.environ.get("DVC_EXP_NAME") or f"{kind}-{model}-{key[:8]}"
    with benchmark_run(params, layout.root, key, name=name) as run:
        if run.created:
            _fill(run.client, run.run_id, layout, params, config, kind, lock, files)
    result = run.result()
    write_run_record(layout, result)
    return result


def _fill(
    client: Any,
    run_id: str,
    layout: Layout,
    params: Mapping[str, Any],
    config: Mapping[str, Any],
    kind: str,
    lock: Path | None,
    files: list[Path],
) -> None:
    from agenteval.tracking import provenance, results
    from agenteval.tracking.store import MAX_PARAM_CHARS

    scrubber = provenance.secret_scrubber(params)
    tags = provenance.config_tags(layout, params, config)
    tags["suite.kind"] = kind
    if lock is not None and lock.is_file():
        tags["dvc.lock.digest"] = sha256_file(lock)[: provenance.SHORT]
    flat: dict[str, str] = {}
    for name in (*BASE_SECTIONS, kind):
        for key, value in flatten(params.get(name) or {}, name).items():
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            flat[provenance.mlflow_key(key)] = scrubber.scrub_text(text)[:MAX_PARAM_CHARS]
    results.log_batched(
        client,
        run_id,
        params=flat,
        tags={k: scrubber.scrub_text(v) for k, v in tags.items()},
        metrics=numeric_leaves(read_json(layout.metrics)),
    )
    for path in [layout.metrics, *files]:
        if path.is_dir():
            client.log_artifacts(run_id, str(path), artifact_path=path.name)
        else:
            client.log_artifact(run_id, str(path))
