"""A benchmark run in MLflow: the same provenance tags as a scenario run, its metrics and files.

Logging the same results twice finds the existing run (tag `agenteval.run_key`), like
`agenteval.tracking.run`. mlflow is imported only inside the call.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
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
    section = params.get("tracking") or {}
    if not section.get("enabled", True):
        write_run_record(layout, None)
        return None
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

    files = [p for p in artifacts if p.exists()]
    sections = (*BASE_SECTIONS, kind)
    key = digest_of(
        {
            "kind": kind,
            "files": {p.name: _tree_digest(p) for p in [layout.metrics, *files]},
            "params": section_digest(dict(params), *sections),
        }
    )
    uri = resolve_tracking_uri(section.get("uri"), repository_root(layout.root))
    experiment = section.get("experiment") or DEFAULT_EXPERIMENT
    with mlflow_client(uri) as client:
        experiment_id = ensure_experiment(client, experiment, uri)
        run_id = find_run(client, experiment_id, key)
        created = run_id is None
        if run_id is None:
            model = (config.get("target") or {}).get("model") or "agent"
            name = os.environ.get("DVC_EXP_NAME") or f"{kind}-{model}-{key[:8]}"
            run_id = str(
                client.create_run(experiment_id, run_name=name, tags={RUN_KEY_TAG: key}).info.run_id
            )
            try:
                _fill(client, run_id, layout, params, config, kind, lock, files)
            except BaseException:
                client.set_terminated(run_id, status="FAILED")
                raise
            client.set_terminated(run_id, status="FINISHED")
    result = TrackResult(run_id, created, 0, experiment_id, key, public_uri(uri))
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
