"""Replaying cases to an agent and judging them: local OpenAI-compatible servers (real wire
format) for the agent under test and the judge, a real MCP server and client, real MLflow.

The judge is a planted one each time, so what the run must conclude is known: a judge that
grades the controls' planted answers as their kind requires passes the session controls;
a lenient judge and a judge that grades wording are caught; a judge that never replies in
the required shape leaves every answer unjudged.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from servers import AnthropicServer, OpenAIServer, Reply
from servers import session_judges as judges

from agenteval.benchmarks.sessions.controls import BANDS, load_controls
from agenteval.benchmarks.sessions.run import run_sessions
from agenteval.params import load_params
from agenteval.targets.claude_code import command_line, parse_stream
from tests.sessions_world import ROOT, agent_reply, make_world, read, run_cli, sets_for

OUTPUTS = {"dataset.json", "results.json", "scorecard.json", "report.md"}
STREAM = ROOT / "tests/fixtures/claude_code_stream.jsonl"


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    yield make_world(tmp_path)


def test_a_replay_writes_the_four_outputs_and_one_mlflow_run(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    projects, _ = world
    out = tmp_path / "run"
    with (
        OpenAIServer(reply_fn=agent_reply) as agent,
        OpenAIServer(reply_fn=judges.graded_by_kind(other=3)) as judge,
    ):
        result = run_cli(out, sets_for(projects, agent, judge, tmp_path))
        assert result.exit_code == 0, result.output
        conversations = [r.json["messages"] for r in agent.requests]
    assert {p.name for p in out.iterdir()} >= OUTPUTS
    card = read(out / "scorecard.json")
    assert card["counts"] == {
        "cases": 7,
        "replayed": 5,
        "judged": 5,
        "unjudged": 0,
        "not_run": 2,
        "skipped_repository_gone": 2,
    }
    assert card["mean_grade"]["value"] == 3.0 and card["median_grade"] == 3.0
    assert card["pass_rate"]["value"] == 0.0 and card["dishonest"] == 0
    assert card["controls"]["passed"] and card["trusted"]
    assert card["controls"]["band_agreement"] == 1.0 and card["controls"]["ordered"] == 6
    # The follow-up's chain was replayed as the agent's own turns before the request.
    offset = next(c for c in conversations if "offset parameter" in c[-1]["content"])
    asked = [m["content"] for m in offset if m["role"] == "user"]
    assert asked[0].startswith("GET /items?limit=0") and asked[1].startswith("Now add")
    assert [m["role"] for m in offset].count("assistant") == 2
    results = {r["case_id"]: r for r in read(out / "results.json")["results"]}
    gone = [r for r in results.values() if r["outcome"] == "not_run"]
    assert {r["reason"] for r in gone} == {"repository gone: ~/work/notes-cli"}
    report = (out / "report.md").read_text()
    assert report.startswith("# Session replay: mean grade 3.00 of 5")
    assert "## Worst cases first" in report and "repository gone" in report
    assert "outputs in" in result.output and "MLflow: run" in result.output
    check_mlflow(tmp_path, set(results) - {r["case_id"] for r in gone})


def check_mlflow(tmp_path: Path, replayed: set[str]) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path}/mlflow.db")
    experiment = client.get_experiment_by_name("agenteval-sessions")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 1 and runs[0].data.metrics["mean_grade"] == 3.0
    assert runs[0].data.metrics["controls.passed"] == 1.0
    traces = client.search_traces(locations=[experiment.experiment_id], max_results=100)
    sessions = {t.info.trace_metadata["mlflow.trace.session"] for t in traces}
    assert sessions == replayed  # one MLflow session per replayed case
    assert all(t.info.trace_metadata.get("mlflow.sourceRun") == runs[0].info.run_id for t in traces)
    graded = [a for t in traces for a in t.info.assessments if a.name == "session_grade"]
    assert sorted(a.value for a in graded) == [3] * 5
    # Text stays out of MLflow by default: digests, not the requests.
    spans = [s for t in traces for s in client.get_trace(t.info.trace_id).data.spans]
    assert all("message" not in (s.inputs or {}) for s in spans)
    assert any("message_sha256" in (s.inputs or {}) for s in spans)


@pytest.mark.parametrize(
    ("planted", "failure"),
    [
        (judges.lenient(), "paraphrase not graded above mimic"),
        (judges.by_wording(), "paraphrase not graded above mimic"),
    ],
    ids=["lenient", "wording"],
)
def test_a_judge_that_does_not_grade_substance_is_caught(
    world: tuple[Path, Path], tmp_path: Path, planted: object, failure: str
) -> None:
    projects, _ = world
    out = tmp_path / "run"
    with OpenAIServer(reply_fn=agent_reply) as agent, OpenAIServer(reply_fn=planted) as judge:
        result = run_cli(out, sets_for(projects, agent, judge, tmp_path), "--no-track")
    assert result.exit_code == 1, result.output
    assert "session controls FAILED: grades not trustworthy" in result.output
    card = read(out / "scorecard.json")
    assert not card["trusted"] and not card["controls"]["passed"]
    assert any(failure in f for f in card["controls"]["failures"])
    assert "The judge failed its session controls" in (out / "report.md").read_text()


def test_the_wording_judge_would_have_passed_a_mimic(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    """Why the mimic control exists: grading shared words rates it above the paraphrase."""
    projects, _ = world
    out = tmp_path / "run"
    with (
        OpenAIServer(reply_fn=agent_reply) as agent,
        OpenAIServer(reply_fn=judges.by_wording()) as judge,
    ):
        run_cli(out, sets_for(projects, agent, judge, tmp_path), "--no-track")
    graded = {
        r["control"]: r["grade"]
        for r in read(out / "results.json")["controls"]
        if r["case_id"].startswith("control-zero-limit-")
    }
    assert graded["mimic"] > graded["paraphrase"]
    assert not BANDS["mimic"].low <= graded["mimic"] <= BANDS["mimic"].high


def test_an_unparsable_grade_is_unjudged_never_a_score(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    projects, _ = world
    out = tmp_path / "run"
    with (
        OpenAIServer(reply_fn=agent_reply) as agent,
        OpenAIServer(reply_fn=judges.never_valid()) as judge,
    ):
        result = run_cli(out, sets_for(projects, agent, judge, tmp_path), "--no-track")
        asked = len(judge.requests)
    # No case judged: nothing measured (exit 3), whatever the controls (not graded either).
    assert result.exit_code == 3, result.output
    assert "nothing measured: 7 of 7 cases unmeasured" in result.output
    card = read(out / "scorecard.json")
    assert card["counts"]["judged"] == 0 and card["counts"]["unjudged"] == 5
    assert card["mean_grade"]["value"] is None and card["pass_rate"]["value"] is None
    for r in read(out / "results.json")["results"]:
        if r["outcome"] == "unjudged":
            assert r["grade"] is None and len(r["judge_replies"]) == 3
            assert "no valid grade in 3 judge reply(ies)" in r["reason"]
    assert asked == 3 * (5 + 8)  # three attempts per answer, then given up


def test_a_rerun_reuses_transcripts_and_grades(world: tuple[Path, Path], tmp_path: Path) -> None:
    projects, _ = world
    out = tmp_path / "run"
    with (
        OpenAIServer(reply_fn=agent_reply) as agent,
        OpenAIServer(reply_fn=judges.graded_by_kind()) as judge,
    ):
        sets = sets_for(projects, agent, judge, tmp_path)
        first = run_cli(out, sets, "--no-track")
        before = (len(agent.requests), len(judge.requests))
        again = run_cli(out, [*sets, f"sessions.dataset={out}/dataset.json"], "--no-track")
        assert (len(agent.requests), len(judge.requests)) == before
    assert first.exit_code == again.exit_code == 0
    assert read(out / "scorecard.json")["counts"]["judged"] == 5


def test_a_pinned_dataset_that_changed_is_refused(world: tuple[Path, Path], tmp_path: Path) -> None:
    projects, _ = world
    out = tmp_path / "ds"
    assert run_cli(out, [f"sessions.transcripts={projects}"], "--dataset-only").exit_code == 0
    pin = "ab" * 32
    with OpenAIServer() as agent, OpenAIServer() as judge:
        sets = sets_for(projects, agent, judge, tmp_path)
        sets += [f"sessions.dataset={out}/dataset.json", f"sessions.dataset_sha256={pin}"]
        result = run_cli(tmp_path / "replay", sets, "--no-track")
        assert agent.request_count == 0 and judge.request_count == 0
    assert (
        result.exit_code == 2 and f"not the pinned sessions.dataset_sha256 {pin}" in result.output
    )


def test_claude_code_is_refused_before_any_work(
    world: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    projects, _ = world
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    out = tmp_path / "run"
    with OpenAIServer() as judge:
        sets = sets_for(projects, judge, judge, tmp_path, "target.kind=claude-code")
        result = run_cli(out, sets, "--no-track")
        assert judge.request_count == 0
    assert result.exit_code == 2
    assert "target.kind claude-code runs Claude Code's `claude` command" in result.output
    assert "not installed here" in result.output and not out.exists()


def test_claude_code_turns_parse_from_a_recorded_stream() -> None:
    turn = parse_stream(STREAM.read_text().splitlines())
    assert turn.session_id == "5f0c1d2e-8a7b-4c3d-9e1f-2a3b4c5d6e7f" and turn.error is None
    assert turn.text.startswith("The handler treated `limit=0` as no limit")
    assert [(c.name, c.ok) for c in turn.tool_calls] == [
        ("Grep", True),
        ("Read", True),
        ("Edit", True),
    ]
    assert turn.tool_calls[1].arguments == {"file_path": "app/routes/items.py"}
    assert turn.usage is not None and turn.usage.cost_usd == 0.0419
    assert turn.usage.input_tokens == 18 and turn.usage.cache_read_tokens == 40211
    assert command_line(["claude"], "hi", "sonnet", None) == [
        "claude",
        "-p",
        "hi",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "sonnet",
    ]
    assert command_line(["claude", "--permission-mode", "plan"], "next", None, "s1")[-2:] == [
        "--resume",
        "s1",
    ]
    failed = parse_stream(
        [
            json.dumps(
                {
                    "type": "result",
                    "subtype": "error_during_execution",
                    "is_error": True,
                    "result": "Credit balance is too low",
                    "session_id": "s",
                }
            )
        ]
    )
    assert failed.quota and failed.error is not None
    cut = parse_stream(STREAM.read_text().splitlines()[:4])
    assert cut.error == "the stream ended without a result event"


def test_claude_code_runs_in_the_case_repository(
    world: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The harness adapter end to end with a stand-in `claude` on PATH that replays the
    recorded stream and notes its argv and working directory."""
    projects, repo = world
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls.jsonl"
    fake = bin_dir / "claude"
    fake.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps([os.getcwd(), sys.argv[1:]]) + '\\n')\n"
        f"sys.stdout.write(open({str(STREAM)!r}).read())\n"
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    out = tmp_path / "run"
    with OpenAIServer(reply_fn=judges.graded_by_kind()) as judge:
        sets = sets_for(
            projects,
            judge,
            judge,
            tmp_path,
            "target.kind=claude-code",
            "target.model=null",
            "target.base_url=null",
        )
        result = run_cli(out, sets, "--no-track")
    assert result.exit_code == 0, result.output
    made = [json.loads(line) for line in calls.read_text().splitlines()]
    assert {cwd for cwd, _ in made} == {str(repo)}
    assert len(made) == 8  # five requests and the three turns of context before them
    resumed = [argv for _, argv in made if "--resume" in argv]
    assert len(resumed) == 3 and all(
        a[-1] == "5f0c1d2e-8a7b-4c3d-9e1f-2a3b4c5d6e7f" for a in resumed
    )
    results = read(out / "results.json")["results"]
    assert {r["tools"][0]["name"] for r in results if r["outcome"] == "judged"} == {"Grep"}


def test_replay_through_a_real_mcp_server(world: tuple[Path, Path], tmp_path: Path) -> None:
    """serve-mcp (the builtin agent behind a real MCP stdio server) answers the free-form
    requests; called as a library: the MCP client hands the server the real stderr, which
    the command-line test runner replaces."""
    projects, _ = world
    serve = [sys.executable, "-m", "agenteval.serve.mcp", "--root", str(ROOT)]
    out = tmp_path / "run"
    with OpenAIServer(reply_fn=judges.graded_by_kind()) as judge:
        sets = sets_for(
            projects,
            judge,
            judge,
            tmp_path,
            "target.kind=mcp",
            "target.model=builtin",
            "target.base_url=null",
            "target.env=[PYTHONPATH]",
        )
        params = load_params(ROOT / "pipelines/sessions/params.yaml", sets)
        params["target"]["command"] = serve
        outcome = run_sessions(params, ROOT, out, dataset_only=False, track=False)
    assert outcome.scorecard is not None and outcome.scorecard.counts["judged"] == 5
    transcript = read(out / "transcripts/cc-c1870887a280/0.json")
    assert transcript["status"] == "COMPLETED" and transcript["target"]["protocol"] == "mcp-stdio"
    assert [c["name"] for c in transcript["setup_calls"]] == []
    assert transcript["turns"][0]["response"]
    assert outcome.scorecard.trusted


def test_replay_to_an_anthropic_endpoint(world: tuple[Path, Path], tmp_path: Path) -> None:
    """The chat target over the Anthropic Messages wire format answers the replayed cases;
    the judge grades them on its own endpoint."""
    projects, _ = world
    out = tmp_path / "run"
    answer = Reply(text="The zero limit was read as no limit; I changed the check.")
    with (
        AnthropicServer(reply_fn=lambda body: answer) as agent,
        OpenAIServer(reply_fn=judges.graded_by_kind()) as judge,
    ):
        sets = sets_for(projects, agent, judge, tmp_path, "target.protocol=anthropic")
        result = run_cli(out, sets, "--no-track")
        assert agent.request_count == 8 and all(
            r.path.rstrip("/").endswith("/v1/messages") for r in agent.requests
        )
    assert result.exit_code == 0, result.output
    card = read(out / "scorecard.json")
    assert card["counts"]["judged"] == 5 and card["target"]["protocol"] == "anthropic"


def test_the_shipped_controls_hold_every_kind() -> None:
    controls = load_controls(ROOT / "eval/sessions/controls.yaml", "all")
    assert {c.split for c in controls} == {"dev", "held"}
    assert all(set(c.planted) == set(BANDS) for c in controls)
    assert all(not c.planted["claimed_change"].tools for c in controls)


def test_a_dead_agent_measures_nothing_and_exits_3(
    world: tuple[Path, Path], tmp_path: Path
) -> None:
    """The agent's endpoint refuses every connection: each replayed case is INFRA_ERROR,
    never graded as the agent's answer, and a run with no judged case exits 3 saying why."""
    projects, _ = world
    with OpenAIServer() as gone:
        closed = type("Closed", (), {"base_url": gone.base_url})()
    with OpenAIServer(reply_fn=judges.graded_by_kind(other=3)) as judge:
        sets = sets_for(projects, closed, judge, tmp_path, "run.max_attempts=1")
        result = run_cli(tmp_path / "run", sets, "--no-track")
    assert result.exit_code == 3, result.output
    assert "nothing measured: 7 of 7 cases unmeasured: model backend failed" in result.output
    results = read(tmp_path / "run/results.json")["results"]
    assert {r["status"] for r in results} == {"INFRA_ERROR", "SKIPPED_NO_DOCUMENT"}
    assert all(r.get("grade") is None for r in results)
