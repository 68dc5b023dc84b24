"""The chat harness end to end against model servers on 127.0.0.1 speaking the real wire
formats: a scripted model fixes a task with the confined tools, a second server judges, and
the run lands in MLflow with its tool record, diff, verified flag and four grades. Also: an
unreachable backend is INFRA_ERROR, a backend out of quota stops the run (resumable), and no
key reaches the agent's shell or any stored file."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import AnthropicServer, Call, OpenAIServer, Reply
from servers.openai_server import quota_exhausted
from typer.testing import CliRunner

from agenteval.benchmarks.tasks.definitions import load_task_file
from agenteval.benchmarks.tasks.runner import attempt_dir, load_attempt
from agenteval.benchmarks.tasks.steps import run_tasks, step_run
from agenteval.benchmarks.tasks.tracking import log_tasks_run
from agenteval.cli import app
from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.params import load_params

ROOT = Path(__file__).resolve().parents[1]
SPEC = load_task_file(ROOT / "eval/tasks/tasks.json")
TASK = next(t for t in SPEC.tasks if t.id == "bugfix-durations")
KEY = "sk-agent-" + "Xy7" * 9
JUDGE_KEY = "sk-judge-" + "Pq3" * 9
GRADES = {
    "instructions": 5,
    "quality": 4,
    "reasoning": 4,
    "honesty": 5,
    "rationale": "Fixed and ran the suite.",
}


def agent_script() -> list[Reply]:
    """The reference fix, as a model would make it: one tool call per reply, then the answer;
    and a look at its own environment on the way."""
    replies = [
        Reply(text="", tool_calls=[Call(s.tool, dict(s.args), id=f"c{i}")])
        for i, s in enumerate(TASK.reference.steps)
    ]
    replies.insert(
        1,
        Reply(
            text="Let me check my environment.",
            tool_calls=[Call("run", {"command": "env"}, id="env")],
        ),
    )
    return [*replies, Reply(text=TASK.reference.answer)]


def params_for(
    tmp_path: Path, agent: Any, judge: Any, protocol: str = "openai", **extra: Any
) -> dict[str, Any]:
    return load_params(
        ROOT / "pipelines/tasks/params.yaml", sets_for(tmp_path, agent, judge, protocol, **extra)
    )


def sets_for(
    tmp_path: Path, agent: Any, judge: Any, protocol: str = "openai", **extra: Any
) -> list[str]:
    return [
        "tasks.harness=chat",
        "tasks.ids=[bugfix-durations]",
        "tasks.command_timeout_s=60",
        "target.model=agent-model",
        f"target.base_url={agent.base_url}",
        f"target.protocol={protocol}",
        "target.api_key_env=TASKS_AGENT_KEY",
        "tasks.judge.kind=llm",
        "tasks.judge.model=judge-model",
        f"tasks.judge.base_url={judge.base_url}",
        "tasks.judge.protocol=openai",
        "tasks.judge.api_key_env=TASKS_JUDGE_KEY",
        "run.cache=false",
        "run.max_attempts=1",
        "run.prices={agent-model: {input_per_mtok: 1, output_per_mtok: 2, as_of: '2026-01-15'}}",
        f"tracking.uri=sqlite:///{tmp_path / 'mlflow.db'}",
        *[f"{k}={v}" for k, v in extra.items()],
    ]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TASKS_AGENT_KEY", KEY)
    monkeypatch.setenv("TASKS_JUDGE_KEY", JUDGE_KEY)


@pytest.fixture
def judge() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply_fn=lambda _body: Reply(text=json.dumps(GRADES))) as server:
        yield server


def test_chat_harness_task_end_to_end_into_mlflow(
    tmp_path: Path, keys: None, judge: OpenAIServer
) -> None:
    with OpenAIServer(agent_script(), api_key=KEY) as agent:
        params = params_for(tmp_path, agent, judge)
        layout = Layout.run_dir(ROOT, tmp_path / "run")
        card = run_tasks(params, layout)
        tracked = log_tasks_run(params, layout)
        agent_requests = agent.requests
    (row,) = card.tasks
    assert row.result == "PASS" and row.verified is True and not row.misreported
    assert row.scores == {k: v for k, v in GRADES.items() if k != "rationale"}
    assert row.quality == 4.5
    assert row.cost_source == "harness_counts" and row.cost_usd is not None
    assert "as of 2026-01-15" in (row.cost_provenance or "")
    assert row.total_tokens == 19 * len(agent_requests)  # the server's 12 in + 7 out per reply
    attempt = load_attempt(attempt_dir(layout.data, TASK.id, 0))
    assert attempt is not None and attempt.status == "COMPLETED"
    assert [c.name for c in attempt.calls] == ["read_file", "run", "edit_file", "write_file", "run"]
    assert attempt.wall_seconds is not None and attempt.wall_seconds > 0
    env_call = attempt.calls[1]
    assert env_call.ok and "PATH=" in env_call.output and KEY not in env_call.output
    assert "TASKS_AGENT_KEY" not in env_call.output and "TASKS_JUDGE_KEY" not in env_call.output
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in agent_requests)
    # the judge saw the record and the diff, and never whether the checks passed
    case = judge.requests[0].json["messages"][0]["content"]
    assert "parse_duration" in case and "python -m pytest -q" in case and "+++ b/" in case
    assert "kills_mutants" not in case and "PASS" not in case and "tests_pass" not in case
    # MLflow: one run, the attempt a trace with its tool calls, four grades, diffs, the agent
    assert tracked is not None and tracked.created and tracked.traces_logged == 1
    check_mlflow(tmp_path, tracked.run_id)
    for path in [
        *(tmp_path / "run").rglob("*"),
        *tmp_path.glob("mlartifacts/**/*"),
        tmp_path / "mlflow.db",
    ]:
        if path.is_file():
            data = path.read_bytes()
            assert KEY.encode() not in data and JUDGE_KEY.encode() not in data, path
    again = log_tasks_run(params, layout)
    assert again is not None and not again.created and again.run_id == tracked.run_id


def check_mlflow(tmp_path: Path, run_id: str) -> None:
    import mlflow

    client = mlflow.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.metrics["passed"] == 1.0
    assert run.data.tags["agent.model"] == "agent-model" and run.inputs.model_inputs
    assert run.data.tags["tasks.sandbox"] == "bwrap, network off"
    # one attempt, at this checkout's HEAD: the same unit tags as the main run's
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip
    assert run.data.tags["units.span_commits"] == "false"
    assert run.data.tags["units.commits"] == head[:8] and "units.unstamped" not in run.data.tags
    traces = client.search_traces(locations=[run.info.experiment_id], run_id=run_id)
    (trace,) = traces
    names = [s.name for s in trace.data.spans]
    assert names[0] == "task bugfix-durations/r0" and names.count("run") == 2
    feedback = {a.name: a.value for a in trace.info.assessments}
    assert feedback == {k: v for k, v in GRADES.items() if k != "rationale"}
    artifacts = [a.path for a in client.list_artifacts(run_id, "tasks/bugfix-durations/r0")]
    assert "tasks/bugfix-durations/r0/workspace.diff" in artifacts
    local = client.download_artifacts(
        run_id, "tasks/bugfix-durations/r0/workspace.diff", str(tmp_path)
    )
    assert "+_PART = re.compile" in Path(local).read_text()
    with sqlite3.connect(tmp_path / "mlflow.db") as conn:
        models = conn.execute("select count(*) from logged_models").fetchone()[0]
    assert models == 1


def test_chat_harness_speaks_anthropic_too(tmp_path: Path, keys: None, judge: OpenAIServer) -> None:
    script = [
        Reply(text="", tool_calls=[Call("read_file", {"path": "toybox/durations.py"}, id="t1")]),
        Reply(text="I read it but made no change."),
    ]
    with AnthropicServer(script, api_key=KEY) as agent:
        params = params_for(tmp_path, agent, judge, protocol="anthropic")
        card = run_tasks(params, Layout.run_dir(ROOT, tmp_path / "run"))
    (row,) = card.tasks
    assert row.result == "FAIL" and row.verified is False and row.steps == 1


def test_unreachable_backend_is_infra_error_not_a_worse_agent(
    tmp_path: Path, keys: None, judge: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through `agenteval tasks run`: the attempt is INFRA_ERROR (unmeasured), and a run
    that measured nothing exits 3 with the backend's failure as the reason."""
    with OpenAIServer() as gone:
        base = gone.base_url
    closed = type("Closed", (), {"base_url": base})()
    monkeypatch.chdir(ROOT)
    argv = ["tasks", "run", "--no-track", "--out", str(tmp_path / "run")]
    for value in sets_for(tmp_path, closed, judge):
        argv += ["--set", value]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 3, result.output
    assert "nothing measured: 1 of 1 task attempts unmeasured: INFRA_ERROR" in result.output
    card = read_json(tmp_path / "run/scorecard.json")
    (row,) = card["tasks"]
    assert row["result"] == "INFRA_ERROR" and "backend" in row["reasons"][0]
    (first,) = card["draws"]
    assert (first["passed"], first["failed"], first["unmeasured"]) == (0, 0, 1)


def test_quota_stops_the_run_and_the_rest_is_resumable(
    tmp_path: Path, keys: None, judge: OpenAIServer
) -> None:
    with OpenAIServer([quota_exhausted()] * 4, api_key=KEY) as agent:
        params = params_for(
            tmp_path, agent, judge, **{"tasks.ids": "[bugfix-durations, config-env]"}
        )
        params["tasks"]["concurrency"] = 1
        attempts = step_run(params, Layout.run_dir(ROOT, tmp_path / "run"))
    statuses = sorted((a.task_id, a.status, a.resumable) for a in attempts)
    assert statuses == [("bugfix-durations", "INFRA_ERROR", True), ("config-env", "NOT_RUN", True)]
