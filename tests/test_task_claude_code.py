"""Claude Code as a harness: its stream-json transcript parsed into the same tool record,
refused with a clear message where `claude` is not installed, and driven end to end through
a stand-in executable that replays a recorded transcript (tests/stand_ins/claude_code)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks.claude_code import ClaudeCodeHarness, StreamParser
from agenteval.benchmarks.tasks.harness import HarnessUnavailable
from agenteval.benchmarks.tasks.rules import misreported, verified
from agenteval.benchmarks.tasks.steps import run_tasks
from agenteval.benchmarks.tasks.tools import ToolRecord
from agenteval.layout import Layout
from agenteval.llm.cost import PriceTable
from agenteval.params import load_params
from agenteval.schema.task_records import TaskAttempt
from agenteval.schema.transcript import Participant

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests/stand_ins/claude_code"
STREAM = FIXTURES / "bugfix_durations.stream.jsonl"


def parsed(workdir: Path) -> tuple[ToolRecord, StreamParser]:
    record = ToolRecord()
    parser = StreamParser(record, workdir)
    for line in STREAM.read_text().splitlines():
        parser.feed(line.replace("{CWD}", str(workdir)))
    parser.finish()
    return record, parser


def test_stream_json_becomes_the_same_tool_record(tmp_path: Path) -> None:
    record, parser = parsed(tmp_path)
    assert [
        (c.name, c.arguments.get("path") or c.arguments.get("command")) for c in record.calls
    ] == [
        ("read_file", "toybox/durations.py"),
        ("run", "python -m pytest -q tests/test_durations.py"),
        ("edit_file", "toybox/durations.py"),
        ("write_file", "tests/test_compound_durations.py"),
        ("run", "python -m pytest -q 2>&1 | tail -3"),
    ]
    assert all(c.ok for c in record.calls) and record.calls[-1].exit_code == 0
    assert set(record.calls[2].arguments) == {"path", "old", "new"}
    (answer,) = record.answers  # narration beside a tool call is not an answer
    assert answer.after_call == 5 and answer.text.startswith("parse_duration now accepts")
    usage = parser.usage(PriceTable(), "claude-sonnet-4-5")
    assert usage is not None and usage.cost_usd == pytest.approx(0.0871)
    assert usage.cost_source == "api_equivalent" and "not money spent" in (
        usage.cost_provenance or ""
    )
    assert usage.total_tokens == 31 + 959 + 12400 + 9211
    attempt = TaskAttempt(
        task_id="bugfix-durations",
        task_digest="x",
        status="COMPLETED",
        prompt="p",
        harness=Participant(kind="claude-code"),
        calls=record.calls,
        answers=record.answers,
        changed_files=["tests/test_compound_durations.py", "toybox/durations.py"],
    )
    # its transcript shows a passing run, which the evaluator never saw (no recorder here):
    # it neither verifies nor stands behind the answer's claim of a passing suite
    flags = misreported(attempt)
    assert not verified(attempt.calls) and len(flags) == 1 and "no pytest run" in flags[0]


def test_counts_without_a_price_read_na_and_failures_keep_their_exit(tmp_path: Path) -> None:
    record = ToolRecord()
    parser = StreamParser(record, tmp_path)
    parser.feed(
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "id": "m1",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Bash",
                            "input": {"command": "python -m pytest"},
                        }
                    ],
                },
            }
        )
    )
    parser.feed(
        json.dumps(
            {
                "type": "user",
                "message": {
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "is_error": True,
                            "content": [
                                {"type": "text", "text": "Exit code 1\n1 failed, 3 passed"}
                            ],
                        }
                    ]
                },
            }
        )
    )
    parser.feed(
        json.dumps(
            {
                "type": "result",
                "subtype": "success",
                "result": "It fails.",
                "num_turns": 2,
                "usage": {"input_tokens": 0, "output_tokens": 0},
            }
        )
    )
    (call,) = record.calls
    assert call.exit_code == 1 and not call.ok and not verified(record.calls)
    usage = parser.usage(
        PriceTable({"local-model": {"input_per_mtok": 1, "output_per_mtok": 1}}), "local-model"
    )
    assert (
        usage is not None and usage.cost_usd is None and usage.total_tokens is None
    )  # n/a, not $0


def test_refused_before_any_work_where_claude_is_not_installed(tmp_path: Path) -> None:
    params = load_params(
        ROOT / "pipelines/tasks/params.yaml",
        ["tasks.harness=claude-code", "tasks.claude.command=claude-not-on-this-path"],
    )
    harness = ClaudeCodeHarness(params)
    with pytest.raises(HarnessUnavailable, match="not installed here"):
        harness.preflight()
    with pytest.raises(HarnessUnavailable):
        run_tasks(params, Layout.run_dir(ROOT, tmp_path / "run"))
    assert not (tmp_path / "run").exists()


def test_driven_end_to_end_through_a_stand_in_executable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unsandboxed, so the stand-in can leave its evidence where the test reads it (the
    sandboxed Claude Code: tests/test_task_sandbox.py); the run says it was unsandboxed."""
    evidence = tmp_path / "evidence.json"
    monkeypatch.setenv("FAKE_CLAUDE_EVIDENCE", str(evidence))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-" + "k3Y" * 12)
    params = load_params(
        ROOT / "pipelines/tasks/params.yaml",
        [
            "tasks.harness=claude-code",
            f"tasks.claude.command={FIXTURES / 'fake_claude.py'}",
            "tasks.ids=[bugfix-durations]",
            "target.model=claude-sonnet-4-5",
            "tasks.sandbox=none",
            "tasks.agent_env=[FAKE_CLAUDE_EVIDENCE]",
        ],
    )
    card = run_tasks(params, Layout.run_dir(ROOT, tmp_path / "run"))
    assert card.sandbox.startswith("none")
    (row,) = card.tasks
    # the stand-in replays a transcript: its "passed" runs never ran, so the claim is a misreport
    assert row.result == "PASS" and row.verified is False and len(row.misreported) == 1
    assert row.cost_source == "api_equivalent" and row.cost_usd == pytest.approx(0.0871)
    assert row.changed_files == ["tests/test_compound_durations.py", "toybox/durations.py"]
    seen = json.loads(evidence.read_text())
    assert seen["argv"][0] == "-p" and "stream-json" in seen["argv"]
    assert {"--dangerously-skip-permissions", "--no-session-persistence"} <= set(seen["argv"])
    assert seen["argv"][seen["argv"].index("--model") + 1] == "claude-sonnet-4-5"
    assert "ANTHROPIC_API_KEY" not in seen["env"]
    # nothing of the evaluator's PYTHONPATH: only the pytest recorder's client (sitecustomize)
    site = seen["env"]["PYTHONPATH"].split(":")
    assert len(site) == 1 and Path(site[0]).name == "site" and "agenteval-pt-" in site[0]
    assert Path(seen["cwd"]).name == "project" and not Path(seen["cwd"]).is_relative_to(ROOT)
