"""Equal conditions across harnesses (001): the scripted harness, the chat harness (a loopback
model) and Claude Code (a stand-in executable, run whole inside the sandbox) get the same
toolchain on PATH, the same offline gh, the same sandbox and the same time limit; each run of
the same work is graded the same; and a Claude Code run cut off at the cap keeps the record of
what it did. Each of these was a real bug in an earlier comparison."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from servers import Call, OpenAIServer, Reply
from services import unavailable

from agenteval.benchmarks.tasks import scripted
from agenteval.benchmarks.tasks.runner import attempt_dir, load_attempt
from agenteval.benchmarks.tasks.scripted import ScriptedHarness
from agenteval.benchmarks.tasks.steps import run_tasks
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.schema.task_records import TaskAttempt
from agenteval.schema.tasks import Reference, Step

ROOT = Path(__file__).resolve().parents[1]
STAND_IN = ROOT / "tests/stand_ins/claude_code/probing_claude.py"
TASK_ID = "label-issues"
# One piece of work every harness does the same way: what it finds on PATH, then the labels.
PROBE = (
    "{ command -v gh | sed 's|/[^/]*/bin/gh$|<gh>|'; python -m pytest --version; "
    "gh issue view 16 --json title; } > conditions.txt 2>&1"
)
LABEL = "gh issue edit 16 --add-label bug && gh issue edit 17 --add-label documentation"
ANSWER = "Labelled #16 bug and #17 documentation."


@pytest.fixture(autouse=True)
def bwrap_installed() -> None:
    if shutil.which("bwrap") is None:
        unavailable("bwrap is not installed: apt-get install bubblewrap")


def params(harness: str, *sets: str) -> dict[str, Any]:
    common = [f"tasks.harness={harness}", "tasks.suite=everyday", f"tasks.ids=[{TASK_ID}]"]
    return load_params(ROOT / "pipelines/tasks/params.yaml", [*common, *sets])


def attempt_of(layout: Layout) -> TaskAttempt:
    found = load_attempt(attempt_dir(layout.data, TASK_ID, 0))
    assert found is not None
    return found


def run_scripted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TaskAttempt, str]:
    # The scripted harness replays a solution given here: the same commands as the others.
    steps = [Step(tool="run", args={"command": c}) for c in (PROBE, LABEL)]
    harness = ScriptedHarness({TASK_ID: Reference(steps=steps, answer=ANSWER)})
    monkeypatch.setattr(scripted, "from_params", lambda _params, _root: harness)
    layout = Layout.run_dir(ROOT, tmp_path / "scripted")
    run_tasks(params("scripted"), layout, judge=False)
    return attempt_of(layout), diff_of(layout)


def diff_of(layout: Layout) -> str:
    return (attempt_dir(layout.data, TASK_ID, 0) / "workspace.diff").read_text()


def run_chat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TaskAttempt, str]:
    monkeypatch.setenv("TASKS_AGENT_KEY", "sk-test-" + "c0nd1t10n5" * 3)
    script = [
        Reply(text="", tool_calls=[Call("run", {"command": PROBE}, id="p")]),
        Reply(text="", tool_calls=[Call("run", {"command": LABEL}, id="l")]),
        Reply(text=ANSWER),
    ]
    with OpenAIServer(script) as agent:
        sets = [
            "target.model=agent-model",
            f"target.base_url={agent.base_url}",
            "target.api_key_env=TASKS_AGENT_KEY",
            "run.cache=false",
            "run.max_attempts=1",
        ]
        layout = Layout.run_dir(ROOT, tmp_path / "chat")
        run_tasks(params("chat", *sets), layout, judge=False)
    return attempt_of(layout), diff_of(layout)


def run_claude(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *sets: str
) -> tuple[TaskAttempt, str]:
    monkeypatch.setenv("FAKE_CLAUDE_COMMANDS", json.dumps([PROBE, LABEL]))
    claude = [
        f"tasks.claude.command={STAND_IN}",
        "tasks.agent_env=[FAKE_CLAUDE_COMMANDS, FAKE_CLAUDE_SLEEP]",
    ]
    layout = Layout.run_dir(ROOT, tmp_path / "claude")
    run_tasks(params("claude-code", *claude, *sets), layout, judge=False)
    return attempt_of(layout), diff_of(layout)


def test_every_harness_gets_the_same_toolchain_gh_and_grading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = {
        "scripted": run_scripted(tmp_path, monkeypatch),
        "chat": run_chat(tmp_path, monkeypatch),
        "claude-code": run_claude(tmp_path, monkeypatch),
    }
    diffs = {name: diff for name, (_a, diff) in runs.items()}
    # What each one's shell found: the same gh first on PATH, the same pytest, the same issue.
    assert len(set(diffs.values())) == 1, diffs
    found = diffs["scripted"]
    assert "<gh>" in found and "+pytest " in found
    assert '"title": "Restock order skips items exactly at the threshold"' in found
    for name, (attempt, _diff) in runs.items():
        assert attempt.status == "COMPLETED", (name, attempt.error)
        gh_calls = [c["command"] for c in attempt.gh_calls]
        assert gh_calls == ["issue view", "issue edit", "issue edit"], name
        assert [(c.name, c.ok) for c in attempt.checks] == [("labels", True)] * 2, name
        assert attempt.sandbox is not None and attempt.sandbox.startswith("bwrap"), name


def test_a_claude_code_run_cut_off_at_the_cap_keeps_its_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_CLAUDE_SLEEP", "60")
    attempt, diff = run_claude(tmp_path, monkeypatch, "tasks.run_timeout_s=6")
    assert attempt.status == "TIMEOUT" and "cap" in (attempt.error or "")
    # Cut off before its answer: the two commands it ran, their gh calls and its diff stay.
    assert [c.arguments.get("command") for c in attempt.calls] == [PROBE, LABEL]
    assert len(attempt.gh_calls) == 3 and "conditions.txt" in diff
    assert [c.ok for c in attempt.checks] == [True, True]  # the finished project still graded
