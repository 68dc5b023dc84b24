"""MLflow tracking: a real pipeline run logged to a local sqlite store (never the network)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

# Before anything imports mlflow: its telemetry client is decided at import time.
os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.fileio import read_json, sha256_file, write_json
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all
from agenteval.schema.scorecard import ScenarioResult, Scorecard, TurnResult
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict
from agenteval.scorecard import metrics_of
from agenteval.scoring import ScoringRules, dimension_means, summarize
from agenteval.tracking.provenance import run_key
from agenteval.tracking.run import TrackResult, log_evaluation
from agenteval.tracking.store import (
    TrackingError,
    mlflow_client,
    public_uri,
    repository_root,
    resolve_tracking_uri,
)

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["false_premise", "incident_followups"]
KEY_ENV = "MY_KEY"
SECRET = "sk-test-Q7vLx2mN9pR4tW8yZ3bC6dF1"
SESSION = "mlflow.trace.session"
ISOLATED_ENV = ("MLFLOW_TRACKING_URI", "DVC_ROOT", "DVC_EXP_NAME", "DVC_EXP_BASELINE_REV")


@dataclass
class Logged:
    run_dir: Path
    layout: Layout
    params: dict[str, Any]
    uri: str
    result: TrackResult


def client(uri: str) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


def sqlite_uri(folder: Path) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(folder / 'mlflow.db').as_posix()}"


@pytest.fixture(scope="module")
def isolated_env() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as mp:
        for name in ISOLATED_ENV:
            mp.delenv(name, raising=False)
        mp.setenv(KEY_ENV, SECRET)
        yield mp


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory, isolated_env: pytest.MonkeyPatch) -> Logged:
    run_dir = tmp_path_factory.mktemp("run")
    params = load_params(
        ROOT / "params.yaml",
        [f"suite.ids={json.dumps(SCENARIOS)}", f"target.api_key_env={KEY_ENV}"],
    )
    layout = Layout.run_dir(ROOT, run_dir)
    run_all(params, layout)
    uri = sqlite_uri(tmp_path_factory.mktemp("store"))
    result = log_evaluation(layout, params, uri=uri, experiment="agenteval-test")
    assert result is not None
    return Logged(run_dir, layout, params, uri, result)


def transcripts(layout: Layout) -> list[Transcript]:
    return [Transcript.model_validate(read_json(p)) for p in layout.transcripts.rglob("*.json")]


def run_traces(logged: Logged) -> list[Any]:
    found = client(logged.uri).search_traces(
        locations=[logged.result.experiment_id], run_id=logged.result.run_id, max_results=500
    )
    return sorted(found, key=lambda t: t.info.timestamp_ms)


def test_run_has_params_provenance_and_metrics(logged: Logged) -> None:
    run = client(logged.uri).get_run(logged.result.run_id)
    assert logged.result.created and run.info.status == "FINISHED"
    params, tags, metrics = run.data.params, run.data.tags, run.data.metrics
    assert params["target.kind"] == "builtin" and params["judge.kind"] == "code"
    assert json.loads(params["suite.ids"]) == SCENARIOS
    assert params["target.api_key_env"] == KEY_ENV
    assert params["target.params.top_k"] == "4" and params["run.concurrency"] == "4"
    card = Scorecard.model_validate(read_json(logged.layout.scorecard))
    assert tags["agenteval.run_key"] == logged.result.run_key
    config = card.config
    assert tags["agent.model"] == config["target"]["model"] == "builtin-bm25"
    assert tags["agent.kind"] == "builtin" and tags["agent.protocol"] == "in-process"
    assert tags["agent.digest"] == config["target"]["config_digest"][:8]
    assert tags["judge.kind"] == "code"
    assert tags["judge.digest"] == config["judge"]["config_digest"][:8]
    assert tags["simulator.kind"] == "scripted"
    for tag, field in (("suite", "scenario_set"), ("corpus", "corpus"), ("params", "params")):
        assert tags[f"{tag}.digest"] == config[f"{field}_digest"][:8]
    prompt = ROOT / "eval/agents/default/system_prompt.md"
    assert tags["agent.system_prompt.sha256"] == sha256_file(prompt)[:8]
    assert tags["prompt.judge_turn.sha256"] == sha256_file(ROOT / "eval/prompts/judge_turn.md")[:8]
    assert len(tags["dvc.lock.digest"]) == 8
    # Readable in the UI: every tag a person reads fits in one chip (key: value, ~38 chars).
    machinery = ("agenteval.run_key", "mlflow.", "interval.")
    shown = {k: v for k, v in tags.items() if not k.startswith(machinery)}
    assert max(len(f"{k}: {v}") for k, v in shown.items()) <= 38, shown
    if (ROOT / ".git").exists() and shutil.which("git"):
        assert len(tags["mlflow.source.git.commit"]) == 40
        assert tags["git.commit"] == tags["mlflow.source.git.commit"][:8]
        assert tags["git.dirty"] in ("true", "false")
    agent = f"builtin-bm25-{config['target']['config_digest'][:8]}"  # its LoggedModel's name
    # What changed against the committed params.yaml leads (suite.ids is the suite's label).
    expected = f"api_key_env={KEY_ENV} · {agent} · code judge · 2 scenarios"
    assert run.info.run_name == expected == logged.result.run_name
    flat = read_json(logged.layout.metrics)
    for key, value in flat.items():
        assert metrics[key] == pytest.approx(value), key
    # Per-scenario values are rows of scenarios.parquet, not metrics.
    assert not [key for key in metrics if key.startswith("scenario.")]
    intervals = {f"{name}.{part}" for name in ("judged_pass_rate", "avg_score")
                 for part in ("low", "high", "half_width")}  # fmt: skip
    extra = {key for key in set(metrics) - set(flat) if not key.startswith("mde.")}
    assert extra <= intervals, extra


def test_provenance_json_holds_every_full_digest(logged: Logged, tmp_path: Path) -> None:
    mlflow_client = client(logged.uri)
    path = mlflow_client.download_artifacts(logged.result.run_id, "provenance.json", tmp_path)
    record = read_json(Path(path))
    card = Scorecard.model_validate(read_json(logged.layout.scorecard))
    assert record["agent"]["config_digest"] == card.config["target"]["config_digest"]
    assert record["agent"]["details"]["knobs"]["top_k"] == 4
    assert len(record["agent"]["code_digest"]) == 64
    assert record["judge"]["config_digest"] == card.config["judge"]["config_digest"]
    assert record["digests"]["scenario_set"] == card.config["scenario_set_digest"]
    prompt = "eval/agents/default/system_prompt.md"
    assert record["files"][prompt] == sha256_file(ROOT / prompt)
    assert SECRET not in json.dumps(record)


def test_the_agent_is_a_logged_model_with_the_headline_metrics(logged: Logged) -> None:
    store = client(logged.uri)
    run = store.get_run(logged.result.run_id)
    card = Scorecard.model_validate(read_json(logged.layout.scorecard))
    (model,) = store.search_logged_models(
        experiment_ids=[logged.result.experiment_id], filter_string="model_type = 'agent'"
    )
    digest = card.config["target"]["config_digest"]
    assert model.name == f"builtin-bm25-{digest[:8]}" and model.source_run_id == run.info.run_id
    assert model.tags["agent.config_digest"] == digest
    assert model.params["model"] == "builtin-bm25" and model.params["knobs.top_k"] == "4"
    assert len(model.params["code_digest"]) == 64
    assert [m.model_id for m in run.inputs.model_inputs] == [model.model_id]
    linked = {m.key: m for m in model.metrics}
    assert set(linked) >= {"judged_pass_rate", "avg_score", "pass_rate"}
    assert linked["avg_score"].value == pytest.approx(run.data.metrics["avg_score"])
    (dataset,) = [d.dataset for d in run.inputs.dataset_inputs]
    assert dataset.digest == card.config["scenario_set_digest"][:8]
    assert {m.dataset_name for m in linked.values()} == {dataset.name}
    (evaluation,) = store.search_datasets(experiment_ids=[logged.result.experiment_id])
    assert evaluation.name == dataset.name
    assert evaluation.tags["suite.digest"] == card.config["scenario_set_digest"]
    with mlflow_client(logged.uri):  # records load through the fluent store
        records = evaluation.to_df()
    assert sorted(r["scenario_id"] for r in records["inputs"]) == sorted(SCENARIOS)
    traces = run_traces(logged)
    assert {t.info.trace_metadata["mlflow.modelId"] for t in traces} == {model.model_id}


def test_artifacts_include_reports_and_scenario_table(logged: Logged, tmp_path: Path) -> None:
    import pandas as pd

    mlflow_client = client(logged.uri)
    names = {a.path for a in mlflow_client.list_artifacts(logged.result.run_id)}
    assert names == {
        "scorecard.json",
        "summary.md",
        "metrics.json",
        "noise.json",
        "provenance.json",
        "scenarios.parquet",
        "verdicts.json",
    }
    local = mlflow_client.download_artifacts(logged.result.run_id, "scenarios.parquet", tmp_path)
    table = pd.read_parquet(local)
    card = Scorecard.model_validate(read_json(logged.layout.scorecard))
    assert sorted(table["id"]) == sorted(SCENARIOS) and len(table) == len(card.scenarios)
    for result in card.scenarios:
        row = table[table["id"] == result.id].iloc[0]
        session = f"{result.id}.{result.iteration}.{logged.result.run_id[:12]}"
        assert row["session"] == session and row["root_cause"] == result.root_cause
        assert row["status"] == result.status and row["category"] == result.category
        assert row["score"] == pytest.approx(result.score)
        assert row["n_turns"] == len(result.turns)
        judged = [t.scores.get("correctness") for t in result.turns]
        values = [v for v in judged if v is not None]
        if values:
            assert row["dim_correctness"] == pytest.approx(sum(values) / len(values))


def verdict_rows(uri: str, run_id: str) -> list[dict[str, Any]]:
    """The run's verdict table as MLflow's own reader loads it."""
    import mlflow

    frame = mlflow.load_table("verdicts.json", run_ids=[run_id])
    return [dict(row) for _, row in frame.iterrows()]


def test_verdict_table_links_every_turn_to_its_trace(logged: Logged) -> None:
    with mlflow_client(logged.uri):
        rows = verdict_rows(logged.uri, logged.result.run_id)
    card = Scorecard.model_validate(read_json(logged.layout.scorecard))
    assert len(rows) == sum(len(r.turns) for r in card.scenarios)
    traces = {
        (t.info.tags["agenteval.scenario_id"], int(t.info.tags["agenteval.turn"])): t.info.trace_id
        for t in run_traces(logged)
    }
    for row in rows:
        assert row["trace_id"] == traces[(row["scenario_id"], int(row["turn"]))]
        assert row["trace"].endswith(f"selectedEvaluationId={row['trace_id']}")
        scenario = next(r for r in card.scenarios if r.id == row["scenario_id"])
        assert row["status"] == scenario.status and row["root_cause"] == scenario.root_cause
        turn = next(t for t in scenario.turns if t.turn == row["turn"])
        assert row["turn_score"] == pytest.approx(turn.score)
    run = client(logged.uri).get_run(logged.result.run_id)
    tags = run.data.tags
    assert tags["agenteval.traces"] == "sample:50" and tags["agenteval.traced"] == "2 of 2"
    assert "every one" in tags["mlflow.note.content"]


def test_untraced_run_keeps_every_verdict_and_says_none_traced(
    logged: Logged, tmp_path: Path
) -> None:
    uri = sqlite_uri(tmp_path)
    found = log_evaluation(logged.layout, logged.params, uri=uri, traces="none")
    assert found is not None and found.traces_logged == 0
    assert client(uri).search_traces(locations=[found.experiment_id], max_results=5) == []
    with mlflow_client(uri):
        rows = verdict_rows(uri, found.run_id)
    assert {r["scenario_id"] for r in rows} == set(SCENARIOS)
    assert all(r["trace_id"] is None or r["trace_id"] != r["trace_id"] for r in rows)  # NaN
    tags = client(uri).get_run(found.run_id).data.tags
    assert tags["agenteval.traces"] == "none" and "none traced" in tags["mlflow.note.content"]


def test_one_trace_per_turn_grouped_into_sessions(logged: Logged) -> None:
    records = transcripts(logged.layout)
    traces = run_traces(logged)
    assert logged.result.traces_logged == len(traces) == sum(len(t.turns) for t in records)
    sessions = Counter(t.info.trace_metadata["mlflow.trace.session"] for t in traces)
    run = logged.result.run_id[:12]
    assert sessions == {f"{t.scenario_id}.{t.iteration}.{run}": len(t.turns) for t in records}
    by_turn = {
        (t.info.tags["agenteval.scenario_id"], int(t.info.tags["agenteval.turn"])): t
        for t in traces
    }
    for record in records:
        for turn in record.turns:
            trace = by_turn[(record.scenario_id, turn.turn)]
            assert trace.info.trace_metadata["mlflow.trace.user"] == "scripted"
            root = next(s for s in trace.data.spans if s.parent_id is None)
            assert root.inputs["messages"][-1]["content"] == turn.user_message
            assert root.outputs["messages"][-1]["content"] == turn.response
            tools = [s for s in trace.data.spans if s.span_type == "TOOL"]
            assert [s.name for s in tools] == [c.name for c in turn.tool_calls]
            assert [s.inputs for s in tools] == [c.arguments for c in turn.tool_calls]
            # the in-process agent measures no latency: none is invented for the overview
            assert turn.latency_ms is None and root.end_time_ns == root.start_time_ns
    # Turns of one session are ordered by start time, as MLflow's session view sorts them.
    first = [t for t in traces if t.info.tags["agenteval.scenario_id"] == SCENARIOS[0]]
    assert [t.info.tags["agenteval.turn"] for t in first] == ["1", "2"]


def test_judge_scores_are_feedback_with_the_judge_as_source(logged: Logged) -> None:
    from mlflow.entities import Feedback

    traces = run_traces(logged)
    verdicts = [
        Verdict.model_validate(read_json(p)) for p in logged.layout.verdicts.rglob("*.json")
    ]
    judge = verdicts[0].judge
    expected, seen = 0, 0
    for verdict in verdicts:
        for turn in verdict.turns:
            trace = next(
                t
                for t in traces
                if t.info.tags["agenteval.scenario_id"] == verdict.scenario_id
                and t.info.tags["agenteval.turn"] == str(turn.turn)
            )
            feedback = {
                a.name: a
                for a in trace.info.assessments
                if isinstance(a, Feedback) and SESSION not in (a.metadata or {})
            }
            judged = {d: s for d, s in turn.scores.items() if s is not None}
            assert set(feedback) == set(judged)  # not-judged dimensions are skipped
            for dimension, score in judged.items():
                item = feedback[dimension]
                assert item.value == pytest.approx(score)
                assert item.source.source_type == "CODE"
                assert item.source.source_id == f"code:-:{judge.config_digest[:12]}"
                assert item.metadata["judge.config_digest"] == judge.config_digest
                assert item.rationale == turn.reasons.get(dimension)
            expected += len(judged)
            seen += len(feedback)
    assert seen == expected > 0


def test_each_session_carries_its_scenario_outcome(logged: Logged) -> None:
    """Session-level feedback (MLflow's multi-turn convention: on the session's first trace,
    metadata mlflow.trace.session): status, pass, score, the judge's root cause and verdict."""
    from mlflow.entities import Feedback

    card = Scorecard.model_validate(read_json(logged.layout.scorecard))
    traces = run_traces(logged)
    for result in card.scenarios:
        session = f"{result.id}.{result.iteration}.{logged.result.run_id[:12]}"
        own = [t for t in traces if t.info.trace_metadata[SESSION] == session]
        assert len(own) == len(result.turns)
        found = {
            (t.info.tags["agenteval.turn"], a.name): a
            for t in own
            for a in t.info.assessments
            if isinstance(a, Feedback) and (a.metadata or {}).get(SESSION) == session
        }
        assert {turn for turn, _ in found} == {"1"}  # all on the first turn
        named = {name: a for _, name in found for a in [found[("1", name)]]}
        assert named["scenario_status"].value == result.status == "FAIL"
        assert named["scenario_pass"].value is False
        assert named["scenario_score"].value == pytest.approx(result.score)
        assert named["root_cause"].value == result.root_cause
        assert named["root_cause"].source.source_id.startswith("code:-:")
        assert named["judge_verdict"].value == "JUDGED"
        assert named["scenario_status"].source.source_id == "agenteval.scoring"


def test_ground_truth_is_logged_as_expectations(logged: Logged) -> None:
    from mlflow.entities import Expectation

    traces = run_traces(logged)
    premise = {
        t.info.tags["agenteval.turn"]: {
            a.name: a for a in t.info.assessments if isinstance(a, Expectation)
        }
        for t in traces
        if t.info.tags["agenteval.scenario_id"] == "false_premise"
    }
    assert premise["1"]["expected_answer"].value == "17%"
    assert premise["1"]["expected_tools"].value == ["query_documents"]
    assert "17%" in premise["1"]["success_criteria"].value
    assert premise["2"]["expected_phrases"].value == ["Fairweather"]
    source = premise["2"]["expected_answer"].source
    assert source.source_type == "HUMAN"
    assert source.source_id.startswith("scenario:eval/scenarios/adversarial/false_premise.yaml@")


def test_logging_again_returns_the_same_run(logged: Logged) -> None:
    again = log_evaluation(
        logged.layout, logged.params, uri=logged.uri, experiment="agenteval-test"
    )
    assert again is not None and not again.created and again.traces_logged == 0
    assert again.run_id == logged.result.run_id and again.run_key == logged.result.run_key
    mlflow_client = client(logged.uri)
    assert len(mlflow_client.search_runs([logged.result.experiment_id])) == 1
    assert len(run_traces(logged)) == logged.result.traces_logged
    record = read_json(logged.layout.reports / "mlflow_run.json")
    assert record["run_id"] == logged.result.run_id and record["created"] is False
    assert record["tracking_uri"] == logged.uri


def test_planted_secret_appears_nowhere(logged: Logged, tmp_path: Path) -> None:
    # An agent that printed its environment: the key lands in a reply, a tool result and
    # the summary. Only the variable's NAME may reach MLflow.
    run_dir = tmp_path / "run"
    shutil.copytree(logged.run_dir, run_dir)
    layout = Layout.run_dir(ROOT, run_dir)
    path = next(layout.transcripts.rglob("*.json"))
    record = read_json(path)
    record["turns"][0]["response"] += f" (env: {KEY_ENV}={SECRET})"
    record["turns"][0]["tool_calls"][0]["result"] = {"stdout": f"{KEY_ENV}={SECRET}"}
    write_json(path, record)
    with (layout.reports / "summary.md").open("a", encoding="utf-8") as handle:
        handle.write(f"\nleaked {SECRET}\n")
    store = tmp_path / "store"
    result = log_evaluation(layout, logged.params, uri=sqlite_uri(store), experiment="secret")
    assert result is not None and result.created and result.traces_logged > 0
    run = client(sqlite_uri(store)).get_run(result.run_id)
    assert run.data.params["target.api_key_env"] == KEY_ENV
    assert SECRET not in json.dumps([run.data.params, run.data.tags])
    for file in store.rglob("*"):  # the database, every artifact and trace blob
        if file.is_file():
            assert SECRET.encode() not in file.read_bytes(), file
    assert SECRET not in (layout.reports / "mlflow_run.json").read_text()


def lose_an_assessment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The store never gets one assessment (the last one logged)."""
    import mlflow

    real, seen = mlflow.log_assessment, []

    def lossy(trace_id: str, assessment: Any) -> Any:
        seen.append(trace_id)
        return assessment if len(seen) == 3 else real(trace_id=trace_id, assessment=assessment)

    monkeypatch.setattr(mlflow, "log_assessment", lossy)


def lose_a_span(monkeypatch: pytest.MonkeyPatch) -> None:
    """One tool span is never recorded: MLflow hands back a no-op span, as it does when it
    fails to start one (it logs that and carries on)."""
    import mlflow
    from mlflow.entities import NoOpSpan

    real = mlflow.start_span_no_context

    def lost(*args: Any, **kwargs: Any) -> Any:
        monkeypatch.setattr(mlflow, "start_span_no_context", real)
        return NoOpSpan()

    monkeypatch.setattr(mlflow, "start_span_no_context", lost)


@pytest.mark.parametrize(("lose", "what"), [(lose_an_assessment, "assessments"),
                                            (lose_a_span, "spans")])  # fmt: skip
def test_lost_traces_fail_loudly_and_leave_no_reusable_run(
    logged: Logged, monkeypatch: pytest.MonkeyPatch, lose: Any, what: str
) -> None:
    uri = logged.uri  # a fresh experiment in the same store
    experiment = f"lossy-{what}"
    with monkeypatch.context() as patched:
        lose(patched)
        with pytest.raises(TrackingError, match=f"lost data .*{what}: "):
            log_evaluation(logged.layout, logged.params, uri=uri, experiment=experiment)
    retry = log_evaluation(logged.layout, logged.params, uri=uri, experiment=experiment)
    assert retry is not None and retry.created
    statuses = sorted(r.info.status for r in client(uri).search_runs([retry.experiment_id]))
    assert statuses == ["FAILED", "FINISHED"]
    # The failed attempt's traces are gone: the experiment's sessions are the retry's, each
    # turn once, not the attempt's as well.
    traces = client(uri).search_traces(
        locations=[retry.experiment_id], include_spans=False, max_results=500
    )
    card = Scorecard.model_validate(read_json(logged.layout.scorecard))
    run = retry.run_id[:12]
    expected = {f"{r.id}.{r.iteration}.{run}": len(r.turns) for r in card.scenarios}
    assert Counter(t.info.trace_metadata[SESSION] for t in traces) == expected


def test_a_store_still_catching_up_is_drained_again_not_called_lossy(
    logged: Logged, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow's drain gives up on its span processor after 30 s, which a loaded machine can
    take: traces still on their way are waited for while the store's counts grow."""
    import mlflow

    drain, calls = mlflow.flush_trace_async_logging, []

    def gives_up_once(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) > 1:  # the first drain returns at once, as if it had timed out
            drain(*args, **kwargs)

    monkeypatch.setattr(mlflow, "flush_trace_async_logging", gives_up_once)
    result = log_evaluation(logged.layout, logged.params, uri=logged.uri, experiment="slow")
    assert result is not None and result.created and len(calls) >= 2
    assert (result.traces_logged, result.spans_logged, result.assessments_logged) == (
        logged.result.traces_logged,
        logged.result.spans_logged,
        logged.result.assessments_logged,
    )


def test_disabled_tracking_does_nothing(tmp_path: Path) -> None:
    params = load_params(ROOT / "params.yaml", ["tracking.enabled=false"])
    layout = Layout.run_dir(ROOT, tmp_path)  # no scorecard at all: nothing may be read
    assert log_evaluation(layout, params, uri=sqlite_uri(tmp_path)) is None
    assert list(tmp_path.iterdir()) == []


def test_tracking_uri_resolution(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ISOLATED_ENV:
        monkeypatch.delenv(name, raising=False)
    repo, copy = tmp_path / "repo", tmp_path / "exp-copy"
    assert resolve_tracking_uri(None, repository_root(repo)) == sqlite_uri(repo.resolve())
    # Queued experiments run in a temporary copy; DVC_ROOT names the real repository.
    monkeypatch.setenv("DVC_ROOT", str(repo))
    assert resolve_tracking_uri(None, repository_root(copy)) == sqlite_uri(repo.resolve())
    assert resolve_tracking_uri("sqlite:///runs.db", repo) == f"sqlite:///{repo}/runs.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5000")
    assert resolve_tracking_uri(None, repo) == "http://127.0.0.1:5000"
    assert resolve_tracking_uri("sqlite:////abs/x.db", repo) == "sqlite:////abs/x.db"
    assert public_uri("https://user:pw@host:5000/x?token=t") == "https://host:5000/x"


def test_export_settings_hold_while_logging_and_a_users_own_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workers, queue = (
        "MLFLOW_ASYNC_TRACE_LOGGING_MAX_WORKERS",
        "MLFLOW_ASYNC_TRACE_LOGGING_MAX_QUEUE_SIZE",
    )
    monkeypatch.delenv(workers, raising=False)
    monkeypatch.setenv(queue, "300")
    with mlflow_client(sqlite_uri(tmp_path)):
        # sqlite takes one writer at a time: one export worker, not MLflow's 10
        assert (os.environ.get(workers), os.environ.get(queue)) == ("1", "300")
    assert (os.environ.get(workers), os.environ.get(queue)) == (None, "300")
    monkeypatch.delenv(queue)
    with mlflow_client("http://127.0.0.1:9"):  # a server: its requests go in parallel
        assert (os.environ.get(workers), os.environ.get(queue)) == (None, "2000")
    monkeypatch.setenv(workers, "4")
    with mlflow_client(sqlite_uri(tmp_path)):
        assert os.environ.get(workers) == "4"
    assert os.environ.get(workers) == "4" and os.environ.get(queue) is None


def test_run_key_follows_dvc_lock_only_when_it_describes_the_files(
    logged: Logged, tmp_path: Path
) -> None:
    key, basis = run_key(logged.layout, logged.params)
    assert basis == "files" and key == logged.result.run_key  # --out runs: dvc.lock is not theirs
    changed = load_params(ROOT / "params.yaml", [f"suite.ids={json.dumps(SCENARIOS)}"])
    assert run_key(logged.layout, changed)[0] != key
    repo = Layout.repository(tmp_path)
    repo.reports.mkdir()
    shutil.copy(logged.layout.scorecard, repo.scorecard)
    md5 = hashlib.md5(repo.scorecard.read_bytes(), usedforsecurity=False).hexdigest()
    lock = {
        "schema": "2.0",
        "stages": {
            "infer": {"cmd": "python -m stages.infer", "params": {"params.yaml": {"run": {}}}},
            "score": {"outs": [{"path": "reports/scorecard.json", "md5": md5}]},
            "track": {"outs": [{"path": "reports/mlflow_run.json", "md5": "0" * 32}]},
        },
    }

    def key_with(stages: dict[str, Any]) -> tuple[str, str]:
        (tmp_path / "dvc.lock").write_text(yaml.safe_dump({**lock, "stages": stages}))
        return run_key(repo, logged.params)

    base, basis = key_with(lock["stages"])
    assert basis == "dvc.lock"
    # Our own entry is ignored; any upstream change (here infer's params) gives a new key.
    assert key_with({**lock["stages"], "track": {"outs": []}})[0] == base
    assert key_with({**lock["stages"], "infer": {"cmd": "x"}})[0] != base
    # The response cache is an infer output only to travel with `dvc push`: new replies in
    # it (an LLM judge's, saved by the next repro) leave the evaluation's key alone.
    cache = {"path": ".cache/agenteval/llm", "md5": "c" * 32 + ".dir"}
    infer = {**lock["stages"]["infer"], "outs": [{"path": "data/transcripts", "md5": "t"}]}
    with_cache = {**infer, "outs": [cache, *infer["outs"]]}
    assert (
        key_with({**lock["stages"], "infer": with_cache})[0]
        == key_with({**lock["stages"], "infer": infer})[0]
    )
    # A lock that recorded another scorecard is stale for these files: keyed on them instead.
    stale = {**lock["stages"], "score": {"outs": [{"path": "reports/scorecard.json", "md5": "1"}]}}
    assert key_with(stale)[1] == "files"


def test_stage_writes_a_record_when_tracking_is_off(tmp_path: Path) -> None:
    (tmp_path / "params.yaml").write_text("tracking:\n  enabled: false\n")
    env = {k: v for k, v in os.environ.items() if k not in ISOLATED_ENV}
    env["PYTHONPATH"] = str(ROOT)  # the stage runs in the workspace DVC gives it: here tmp_path
    done = subprocess.run(
        [sys.executable, "-m", "stages.track"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert read_json(tmp_path / "reports" / "mlflow_run.json") == {"enabled": False}
    assert not (tmp_path / "mlflow.db").exists()


def synthetic_layout(folder: Path, n: int) -> Layout:
    """A scorecard of `n` scenarios (two turns each) with its metrics and summary."""
    dims = ("correctness", "tool_selection", "efficiency")
    results = [
        ScenarioResult(
            id=f"scenario_{i:04d}",
            category=f"category_{i % 6}",
            severity="standard",
            status="PASS" if i % 3 else "FAIL",
            score=round(5 + (i % 50) / 10, 4),
            turns=[
                TurnResult(
                    turn=t, scores=dict.fromkeys(dims, float((i + t) % 11)), score=6.0, passed=True
                )
                for t in (1, 2)
            ],
        )
        for i in range(n)
    ]
    rules = ScoringRules.from_params(load_params(None)["judge"])
    card = Scorecard(
        summary=summarize(results, rules),
        config={"target": {"kind": "builtin", "model": "synthetic"}, "judge": {"kind": "code"}},
        scenarios=results,
        dimension_means=dimension_means(results),
    )
    layout = Layout.run_dir(ROOT, folder)
    write_json(layout.scorecard, card)
    write_json(layout.metrics, metrics_of(card))
    (layout.reports / "summary.md").write_text("# synthetic\n", encoding="utf-8")
    return layout


def test_thousand_scenarios_log_every_metric(
    tmp_path: Path, isolated_env: pytest.MonkeyPatch
) -> None:
    layout = synthetic_layout(tmp_path / "run", 1000)
    params = load_params(ROOT / "params.yaml")
    uri = sqlite_uri(tmp_path / "store")
    # How long this takes is measured by bench/mlflow_logging.py, never asserted here.
    result = log_evaluation(layout, params, uri=uri, experiment="scale", traces=False)
    assert result is not None and result.created
    metrics = client(uri).get_run(result.run_id).data.metrics
    # metrics.json and the headline intervals; the 1,000 scenario rows are a table artifact
    assert set(metrics) >= set(read_json(layout.metrics)) and len(metrics) < 100


def test_headline_numbers_carry_their_intervals(logged: Logged) -> None:
    """Two scenarios are too few for an interval: MLflow says so instead of a degenerate ±."""
    run = client(logged.uri).get_run(logged.result.run_id)
    noise = read_json(logged.layout.reports / "noise.json")
    rate = noise["overall"]["judged_pass_rate"]
    metrics, tags = run.data.metrics, run.data.tags
    assert rate["low"] is None and rate["note"].startswith("too few scenarios")
    assert "judged_pass_rate.low" not in metrics and "judged_pass_rate.half_width" not in metrics
    assert tags["interval.judged_pass_rate"] == rate["note"]
    assert tags["interval.avg_score"].startswith("too few scenarios")
    assert "(too few scenarios)" in tags["mlflow.note.content"]
    assert tags["mlflow.note.content"].startswith("judged pass rate")


def test_interval_metrics_and_headline_from_a_bounded_interval() -> None:
    from gate_cards import make_card

    from agenteval.tracking.results import headline, interval_metrics, interval_notes
    from agenteval.uncertainty import noise_report

    noise = noise_report(make_card({s: "PF"[i % 2] for i, s in enumerate("abcde")}), resamples=0)
    rate = noise["overall"]["judged_pass_rate"]
    metrics = interval_metrics(noise)
    assert metrics["judged_pass_rate.low"] == pytest.approx(rate["low"])
    assert metrics["judged_pass_rate.high"] == pytest.approx(rate["high"])
    assert "judged_pass_rate.half_width" not in metrics  # Wilson is not symmetric
    score = noise["overall"]["avg_score"]
    assert metrics["avg_score.half_width"] == pytest.approx(score["half_width"])  # t: symmetric
    assert headline(noise) == (
        f"judged pass rate 0.600 [{rate['low']:.3f}, {rate['high']:.3f}] · "
        f"avg score 6.40 [{score['low']:.2f}, {score['high']:.2f}]"
    )
    flat = noise_report(make_card({s: "P" for s in "abcde"}), resamples=0)
    assert "avg_score.low" not in interval_metrics(flat)  # every score equal: no interval
    assert interval_notes(flat)["interval.avg_score"].startswith("no spread")


def agenteval_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ISOLATED_ENV}
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def cli_run(tmp_path: Path, uri: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return agenteval_cli(
        "run",
        "--out",
        str(tmp_path / "run"),
        "--no-progress",
        "--scenario",
        SCENARIOS[1],
        "--set",
        f"tracking.uri={uri}",
        *extra,
    )


def test_agenteval_run_logs_the_run_it_made(tmp_path: Path) -> None:
    uri = sqlite_uri(tmp_path / "store")
    done = cli_run(tmp_path, uri, "--set", "tracking.experiment=cli")
    assert done.returncode == 0, done.stderr
    (line,) = [x for x in done.stdout.splitlines() if x.startswith("MLflow: logged run")]
    run_id = line.split()[3]
    mlflow_client = client(uri)
    assert mlflow_client.get_run(run_id).info.status == "FINISHED"
    record = read_json(tmp_path / "run" / "mlflow_run.json")
    assert record["run_id"] == run_id and record["traces_logged"] > 0
    traces = mlflow_client.search_traces(locations=[record["experiment_id"]], run_id=run_id)
    assert len(traces) == record["traces_logged"]
    assert sum(len(t.data.spans) for t in traces) == record["spans_logged"]
    assert sum(len(t.info.assessments) for t in traces) == record["assessments_logged"]


def test_a_store_that_cannot_be_opened_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    done = cli_run(tmp_path, f"sqlite:///{blocker}/mlflow.db")
    assert done.returncode == 1
    assert "MLflow logging failed:" in done.stderr and "Traceback" not in done.stderr
    assert (tmp_path / "run" / "scorecard.json").is_file()  # the evaluation itself is kept


def corrupt_store(folder: Path) -> str:
    """A store MLflow made, then damaged past its header: sqlite opens it, every query fails."""
    uri = sqlite_uri(folder)
    script = (
        "import sys; from agenteval.tracking.store import mlflow_client, ensure_experiment\n"
        "with mlflow_client(sys.argv[1]) as c: ensure_experiment(c, 'x', sys.argv[1])\n"
    )
    subprocess.run([sys.executable, "-c", script, uri], check=True, capture_output=True)
    store = folder / "mlflow.db"
    for leftover in folder.glob("mlflow.db-*"):
        leftover.unlink()
    size = store.stat().st_size
    store.write_bytes(store.read_bytes()[:100] + b"\xab" * (size - 100))
    return uri


def test_a_corrupt_store_is_one_line_naming_it(logged: Logged, tmp_path: Path) -> None:
    uri = corrupt_store(tmp_path / "store")
    with pytest.raises(TrackingError) as raised:  # the track stage's and the fallback's path
        log_evaluation(logged.layout, logged.params, uri=uri, experiment="x")
    message = str(raised.value)
    assert message.startswith(f"the store {uri} failed: ") and "\n" not in message
    assert "malformed" in message


def test_a_run_whose_store_is_corrupt_is_logged_by_resuming_once_it_is_fixed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "store"
    uri = corrupt_store(folder)
    done = cli_run(tmp_path, uri)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert f"MLflow logging failed: the store {uri} failed:" in done.stderr
    assert f"agenteval run --resume {tmp_path / 'run'}" in done.stderr
    assert (tmp_path / "run" / "scorecard.json").is_file()
    (folder / "mlflow.db").unlink()  # the user moves the broken store aside
    again = agenteval_cli("run", "--resume", str(tmp_path / "run"), "--no-progress")
    assert again.returncode == 0, again.stderr
    assert "MLflow: logged run" in again.stdout
    record = read_json(tmp_path / "run" / "mlflow_run.json")
    assert client(uri).get_run(record["run_id"]).info.status == "FINISHED"


def test_logged_into_another_store_the_run_keeps_its_name(
    logged: Logged, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agenteval track --tracking-uri <server>` after `dvc exp run`: no DVC_EXP_NAME then,
    but the evaluation keeps the name (its experiment included) it was first logged with."""
    record = logged.layout.reports / "mlflow_run.json"
    kept = read_json(record)
    try:
        write_json(record, {**kept, "run_name": "fuzzy-lamb · " + logged.result.run_name})
        monkeypatch.setenv("DVC_EXP_NAME", "another-exp")  # ignored: the record names it
        store = sqlite_uri(tmp_path / "s")
        other = log_evaluation(logged.layout, logged.params, uri=store, traces=False)
        assert other is not None and other.created
        assert client(other.tracking_uri).get_run(other.run_id).info.run_name == (
            "fuzzy-lamb · " + logged.result.run_name
        )
    finally:
        write_json(record, kept)


def test_run_names_lead_with_what_tells_runs_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    from agenteval.tracking.names import changed_params, run_name

    base = load_params(ROOT / "params.yaml")
    sets = ["target.params.top_k=2", "judge.kind=llm", f"suite.ids={json.dumps(SCENARIOS)}"]
    changed = load_params(ROOT / "params.yaml", sets)
    assert changed_params(changed, base) == ["kind=llm", "top_k=2"]  # suite.ids: the label
    assert changed_params(base, base) == []
    many = load_params(ROOT / "params.yaml", [*sets, "run.concurrency=2", "run.timeout_s=9"])
    assert changed_params(many, base)[-1] == "+1 more"  # four changed, three named
    monkeypatch.setenv("DVC_EXP_NAME", "fuzzy-lamb")
    assert run_name("agent-1 · code judge · 2 scenarios", ["top_k=2"]) == (
        "fuzzy-lamb · top_k=2 · agent-1 · code judge · 2 scenarios"
    )
    failed = run_name("agent-1 · code judge · 2 scenarios", failure="every unit ERRORED")
    assert failed.startswith("measured nothing · fuzzy-lamb · ")


def test_a_run_that_judged_no_scenario_measured_nothing() -> None:
    from agenteval.schema.scorecard import ScenarioResult
    from agenteval.tracking.run import nothing_measured

    def results(*statuses: str) -> list[ScenarioResult]:
        return [ScenarioResult(id=f"s{i}", category="c", status=s, score=None, turns=[])
                for i, s in enumerate(statuses)]  # fmt: skip

    assert nothing_measured(results("ERRORED", "ERRORED")) == "every unit ERRORED"
    assert nothing_measured(results("TIMEOUT", "INFRA_ERROR", "TIMEOUT")) == (
        "nothing judged: 1 INFRA_ERROR, 2 TIMEOUT"
    )
    assert nothing_measured([]) == "no scenario was evaluated"
    assert nothing_measured(results("TIMEOUT", "FAIL")) is None  # one judged scenario counts
    assert nothing_measured(results("BLOCKED_BY_ARCHITECTURE")) is None


def test_more_traces_than_mlflow_export_queue_holds(
    tmp_path: Path, isolated_env: pytest.MonkeyPatch
) -> None:
    """MLflow discards an export task that finds its queue full: traces are drained before
    the queue can fill, whatever size it was given (MLflow 3.9 queues every span on its own,
    so a few hundred turns overflowed the default 1,000 before)."""
    from mlflow.entities import Feedback

    from agenteval.tracking.records import SOURCE_RUN_KEY, SpanSpec, TurnTrace
    from agenteval.tracking.traces import TraceCounts, log_traces

    isolated_env.setenv("MLFLOW_ASYNC_TRACE_LOGGING_MAX_QUEUE_SIZE", "12")
    uri = sqlite_uri(tmp_path / "store")
    ms = 1_000_000
    with mlflow_client(uri) as mlflow:
        experiment_id = mlflow.create_experiment("queue")
        run_id = mlflow.create_run(experiment_id).info.run_id
        turns = [
            TurnTrace(
                root=SpanSpec(f"turn {i}", "AGENT", 0, 3 * ms, {"q": i}, {"a": i}),
                tools=[SpanSpec("query_documents", "TOOL", 0, ms, {"query": i}, {"hits": 1})],
                tags={"agenteval.turn": str(i)},
                metadata={SESSION: f"s{i}", SOURCE_RUN_KEY: run_id},
                request_preview=str(i),
                response_preview=str(i),
                assessments=[Feedback(name="correctness", value=float(i % 10))],
            )
            for i in range(30)
        ]
        sent = log_traces(mlflow, experiment_id, run_id, turns)
    assert sent == TraceCounts(30, 60, 30)
