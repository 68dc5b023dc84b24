"""A shared tracking server: `mlflow server` on PostgreSQL with proxied artifacts.

The suite starts a throwaway PostgreSQL cluster (Debian's server binaries) and an `mlflow
server` on it (`--backend-store-uri postgresql+psycopg://...`, `--artifacts-destination`),
both on 127.0.0.1; agenteval reaches it only through `tracking.uri: http://...` (REST).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from services import Postgres, TrackingServer, mlflow_server, postgres_server

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all
from agenteval.schema.transcript import Transcript
from agenteval.tracking.records import session_id
from agenteval.tracking.run import log_evaluation

ROOT = Path(__file__).resolve().parents[1]


def read_traces(url: str, experiment_id: str, run_id: str) -> list[Any]:
    """The run's traces with their spans, read as agenteval reads them: through
    `mlflow_client`, which points MLflow's process-wide URI at the server too. A bare
    `MlflowClient(tracking_uri=url)` is not enough: for a trace whose spans the exporter stored
    as `mlflow-artifacts:` (seen on a loaded CI machine), MLflow 3.18 resolves that scheme
    against the process-wide URI, not the client's, and fails on the local default."""
    from agenteval.tracking.store import mlflow_client

    with mlflow_client(url) as client:
        return list(client.search_traces(locations=[experiment_id], run_id=run_id, max_results=500))


ISOLATED_ENV = ("MLFLOW_TRACKING_URI", "DVC_ROOT", "DVC_EXP_NAME", "DVC_EXP_BASELINE_REV")


@dataclass
class Shared:
    server: TrackingServer
    postgres: Postgres
    database: str


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shared]:
    with postgres_server() as postgres:
        backend = postgres.create_database("mlflow")
        artifacts = tmp_path_factory.mktemp("server") / "artifacts"
        with mlflow_server(backend, artifacts) as server:
            yield Shared(server, postgres, "mlflow")


@pytest.fixture(autouse=True)
def isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)


def sql(shared: Shared, query: str, *args: Any) -> list[tuple[Any, ...]]:
    """Rows straight from the server's PostgreSQL database (what the REST API stored)."""
    import psycopg

    pg = shared.postgres
    with psycopg.connect(
        host="127.0.0.1", port=pg.port, user=pg.user, dbname=shared.database
    ) as conn:
        return list(conn.execute(query, args).fetchall())


def test_a_full_run_with_traces_goes_over_rest_and_reads_back(
    shared: Shared, tmp_path: Path
) -> None:
    from mlflow import MlflowClient

    url = shared.server.url
    params = load_params(
        ROOT / "params.yaml",
        ['suite.ids=["false_premise", "incident_followups"]', f"tracking.uri={url}",
         "tracking.experiment=team"],
    )  # fmt: skip
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    run_all(params, layout)
    result = log_evaluation(layout, params)
    assert result is not None and result.created and result.tracking_uri == url

    client = MlflowClient(tracking_uri=url)
    run = client.get_run(result.run_id)
    assert run.info.status == "FINISHED"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:")  # proxied by the server
    assert run.data.params["target.kind"] == "builtin"
    for key, value in read_json(layout.metrics).items():
        assert run.data.metrics[key] == pytest.approx(value), key
    # Artifacts: through the server into --artifacts-destination, and back byte for byte.
    got = client.download_artifacts(result.run_id, "scorecard.json", str(tmp_path / "dl"))
    assert Path(got).read_bytes() == layout.scorecard.read_bytes()
    stored = list(shared.server.artifacts.rglob("scorecard.json"))
    assert len(stored) == 1 and stored[0].read_bytes() == layout.scorecard.read_bytes()
    # Traces: one per turn, grouped in sessions, with spans and the judge's feedback.
    records = [Transcript.model_validate(read_json(p)) for p in layout.transcripts.rglob("*.json")]
    traces = read_traces(url, result.experiment_id, result.run_id)
    assert len(traces) == result.traces_logged == sum(len(t.turns) for t in records)
    sessions = Counter(t.info.trace_metadata["mlflow.trace.session"] for t in traces)
    rid = result.run_id
    assert sessions == {session_id(rid, t.scenario_id, t.iteration): len(t.turns) for t in records}
    assert sum(len(t.data.spans) for t in traces) == result.spans_logged > len(traces)
    assert sum(len(t.info.assessments) for t in traces) == result.assessments_logged > 0
    # ... and they are rows of the PostgreSQL store.
    (runs,) = sql(shared, "SELECT count(*) FROM runs WHERE run_uuid = %s", result.run_id)
    assert runs == (1,)
    (rows,) = sql(
        shared,
        "SELECT count(*) FROM trace_request_metadata WHERE key = 'mlflow.sourceRun' AND value = %s",
        result.run_id,
    )
    assert rows == (len(traces),)
    # Logging the same results again finds the run instead of adding one.
    again = log_evaluation(layout, params)
    assert again is not None and not again.created and again.run_id == result.run_id


def test_two_runs_tracked_at_once_do_not_collide(shared: Shared, tmp_path: Path) -> None:
    """Two `agenteval run` processes log to one new experiment at the same moment: both
    create it, each gets its own complete run, no trace lands in the other's."""
    url, experiment = shared.server.url, "team-concurrent"
    env = {k: v for k, v in os.environ.items() if k not in ISOLATED_ENV}
    jobs = {}
    for name, scenario in (("a", "false_premise"), ("b", "incident_followups")):
        args = [sys.executable, "-m", "agenteval", "run", "--out", str(tmp_path / name),
                "--no-progress", "--scenario", scenario, "--set", f"tracking.uri={url}",
                "--set", f"tracking.experiment={experiment}"]  # fmt: skip
        jobs[name] = (
            scenario,
            subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True),
        )
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=url)
    experiments, runs = set(), set()
    for name, (scenario, proc) in jobs.items():
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
        record = read_json(tmp_path / name / "mlflow_run.json")
        run = client.get_run(record["run_id"])
        assert run.info.status == "FINISHED" and json.loads(run.data.params["suite.ids"]) == [
            scenario
        ]
        traces = read_traces(url, record["experiment_id"], record["run_id"])
        assert len(traces) == record["traces_logged"] > 0
        assert {t.info.tags["agenteval.scenario_id"] for t in traces} == {scenario}
        experiments.add(record["experiment_id"])
        runs.add(record["run_id"])
    assert len(experiments) == 1 and len(runs) == 2
    assert {r.info.run_id for r in client.search_runs(list(experiments))} == runs
