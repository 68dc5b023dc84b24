"""An evaluation that judged no scenario (every unit ERRORED, or INFRA_ERROR against a pinned
model) measured nothing: it exits 3 with the reason and its MLflow run is FAILED, not
finished, and named so."""

from __future__ import annotations

from pathlib import Path

from mlflow import MlflowClient
from servers import OpenAIServer, Raw
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.tracking.run import log_evaluation

ROOT = Path(__file__).resolve().parents[1]


def model_not_found(_body: object) -> Raw:
    return Raw(404, {"error": {"type": "not_found_error", "message": "no model named nope"}})


def test_every_unit_errored_exits_3_and_fails_the_mlflow_run(tmp_path: Path) -> None:
    uri = f"sqlite:///{(tmp_path / 'mlflow.db').as_posix()}"
    with OpenAIServer(reply_fn=model_not_found) as server:
        args = ["run", "--out", str(tmp_path / "run"), "--no-progress",
                "--category", "personality"]  # fmt: skip
        for key, value in {
            "target.kind": "chat", "target.protocol": "openai", "target.model": "nope",
            "target.base_url": server.base_url, "run.max_attempts": "1",
            "run.cache_dir": str(tmp_path / "cache"), "tracking.uri": uri,
            "tracking.traces": "false",
        }.items():  # fmt: skip
            args += ["--set", f"{key}={value}"]
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 3, result.output
        assert "nothing measured: 6 of 6 scenarios unmeasured: 6 ERRORED" in result.output
        assert "no model named nope" in result.output  # the first error, not only in files
        client = MlflowClient(tracking_uri=uri)
        (experiment,) = [e for e in client.search_experiments() if e.name == "agenteval"]
        (run,) = client.search_runs([experiment.experiment_id])
        assert run.info.status == "FAILED"
        assert run.data.tags["agenteval.failure"] == "every unit ERRORED"
        # Logging the same results again finds this complete (if failed) run: no duplicate.
        params = read_json(tmp_path / "run/params.json")
        logged = log_evaluation(Layout.run_dir(ROOT, tmp_path / "run"), params)
        assert logged is not None and not logged.created and logged.run_id == run.info.run_id
        assert len(client.search_runs([experiment.experiment_id])) == 1


def test_a_model_pinned_run_that_measured_nothing_exits_3_and_is_named_so(
    tmp_path: Path,
) -> None:
    """The pin (run.agent_model) cannot be checked against the offline agent, which reports
    no model: every unit is INFRA_ERROR, which once exited 0 beside a FAILED MLflow run."""
    uri = f"sqlite:///{(tmp_path / 'mlflow.db').as_posix()}"
    args = ["run", "--out", str(tmp_path / "run"), "--no-progress", "--category", "personality",
            "--set", "run.agent_model=pinned-1", "--set", f"tracking.uri={uri}",
            "--set", "tracking.traces=false"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 3, result.output
    assert "nothing measured: " in result.output and "scenarios unmeasured" in result.output
    assert "INFRA_ERROR" in result.output
    client = MlflowClient(tracking_uri=uri)
    (experiment,) = [e for e in client.search_experiments() if e.name == "agenteval"]
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FAILED"
    assert run.info.run_name.startswith("measured nothing · ")
