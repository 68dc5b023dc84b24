"""The agent's commands run in a bubblewrap sandbox (real bwrap, no mocks): the answer key,
the repository, the snapshot, other processes' views, the home and the loopback network are
out of reach of the scripted, chat and Claude Code harnesses and of the checks (the agent's
code runs there too); the same probes succeed with `tasks.sandbox=none`, which the scorecard
says; the timeout still kills everything; and where bwrap is missing or cannot create its
namespaces the run is refused before any work, naming `tasks.sandbox`."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import Call, OpenAIServer, Reply
from services import unavailable

from agenteval.benchmarks.tasks.boundary import agent_env
from agenteval.benchmarks.tasks.commands import run_command
from agenteval.benchmarks.tasks.definitions import load_task_file
from agenteval.benchmarks.tasks.runner import attempt_dir, load_attempt
from agenteval.benchmarks.tasks.sandbox import UNSANDBOXED, build, default_sandbox, from_params
from agenteval.benchmarks.tasks.steps import run_tasks
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.schema.task_records import TaskAttempt, TaskToolCall

ROOT = Path(__file__).resolve().parents[1]
TASK_FILE = ROOT / "eval/tasks/tasks.json"
SPEC = load_task_file(TASK_FILE)
TASK = next(t for t in SPEC.tasks if t.id == "bugfix-durations")
KEY_TEXT = TASK.reference.answer[:40]  # a line of the answer key
assert KEY_TEXT in TASK_FILE.read_text()
CLI_ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(autouse=True)
def bwrap_installed() -> None:
    if shutil.which("bwrap") is None:
        unavailable("bwrap is not installed: apt-get install bubblewrap")


def port_of(server: OpenAIServer) -> int:
    return int(server.url.rsplit(":", 1)[1])


def visible(folder: Path, *readable: Path) -> set[str]:
    """What the sandbox shows of a hidden `folder`: only the entries that lead to a path put
    back read-only (the interpreter under the home, a venv inside the repository)."""
    exposed = [*build("bwrap", root=ROOT).exposed, *readable]
    return {p.relative_to(folder).parts[0] for p in exposed if p.is_relative_to(folder)}


def hidden_but_exposed(call: TaskToolCall, folder: Path) -> bool:
    """`ls -A folder` in the sandbox shows only what is put back read-only; a folder inside a
    hidden one (a clone under /tmp) with nothing put back is not there at all."""
    if call.ok:
        return listing(call) <= visible(folder)
    return not visible(folder) and "No such file" in call.output


def listing(call: TaskToolCall) -> set[str]:
    lines = call.output.splitlines()
    return {line for line in lines if line.strip() and not line.startswith("exit code")}


def connect(port: int) -> str:
    return (
        "python -c \"import socket; socket.create_connection(('127.0.0.1', "
        f"{port}), timeout=3); print('connected')\""
    )


def probes(tmp_path: Path, port: int) -> dict[str, str]:
    """What an agent after the answer key would try, by name."""
    me = os.getpid()
    found = {
        "key": f"grep -F -m1 '{KEY_TEXT}' {TASK_FILE}",
        "repo": f"ls -A {ROOT}",
        "git": f"git -C {ROOT} show HEAD:eval/tasks/tasks.json",
        "siblings": f"find {ROOT.parent} -maxdepth 4 -name tasks.json -path '*eval/tasks*'",
        "snapshot": f"cat {tmp_path}/work/agenteval-snapshot-*/project/README.md",
        "proc": f"cat /proc/{me}/root{TASK_FILE}",
        "proc_cwd": f"cat /proc/{me}/cwd/eval/tasks/tasks.json",
        "home": "ls -A ~",
        "net": connect(port),
        "write_out": f"echo escaped > {tmp_path}/escaped-by-command",
    }
    if shutil.which("curl"):
        found["curl"] = f"curl -sS -m 3 http://127.0.0.1:{port}/v1/models"
    return found


CONFTEST = """from pathlib import Path

Path({marker!r}).write_text("escaped during the checks")
"""


def solution_steps(tmp_path: Path, port: int) -> list[dict[str, Any]]:
    commands = probes(tmp_path, port)
    steps = [{"tool": "run", "args": {"command": c}} for c in commands.values()]
    # Code the checks will run: pytest imports conftest.py in the finished project.
    marker = str(tmp_path / "escaped-by-check")
    steps.append(
        {
            "tool": "write_file",
            "args": {"path": "conftest.py", "content": CONFTEST.format(marker=marker)},
        }
    )
    return steps


def by_probe(attempt: TaskAttempt, names: list[str]) -> dict[str, TaskToolCall]:
    runs = [c for c in attempt.calls if c.name == "run"]
    return dict(zip(names, runs, strict=True))


@pytest.fixture
def loopback() -> Iterator[int]:
    with OpenAIServer() as server:
        yield port_of(server)


def scripted_run(
    tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch, *sets: str
) -> tuple[Any, TaskAttempt, Layout]:
    """A scripted agent after the key (its steps replace the task's reference solution),
    through the whole run: params, preflight, runner, checks, scorecard."""
    from agenteval.benchmarks.tasks import steps
    from agenteval.benchmarks.tasks.scripted import ScriptedHarness
    from agenteval.schema.tasks import Reference

    solution = Reference.model_validate(
        {"steps": solution_steps(tmp_path, port), "answer": "Done: fixed, tests pass."}
    )
    params = load_params(
        ROOT / "pipelines/tasks/params.yaml",
        ["tasks.ids=[bugfix-durations]", f"tasks.work_root={tmp_path / 'work'}", *sets],
    )
    (tmp_path / "work").mkdir(exist_ok=True)
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    harness = ScriptedHarness({TASK.id: solution}, label="prober")
    monkeypatch.setattr(steps, "make_harness", lambda *_args: harness)
    card = run_tasks(params, layout, judge=False)
    attempt = load_attempt(attempt_dir(layout.data, TASK.id, 0))
    assert attempt is not None
    return card, attempt, layout


def test_scripted_agent_cannot_reach_the_key_the_snapshot_or_the_network(
    tmp_path: Path, loopback: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    card, attempt, layout = scripted_run(tmp_path, loopback, monkeypatch)
    calls = by_probe(attempt, list(probes(tmp_path, loopback)))
    for name in ("key", "git", "snapshot", "proc", "proc_cwd", "net"):
        assert not calls[name].ok, (name, calls[name].output)
    assert "curl" not in calls or not calls["curl"].ok
    for call in attempt.calls:
        assert KEY_TEXT not in call.output
    assert hidden_but_exposed(calls["repo"], ROOT), calls["repo"].output
    assert calls["siblings"].ok and listing(calls["siblings"]) == set()  # no other checkout
    assert calls["home"].ok and listing(calls["home"]) <= visible(Path.home())
    assert not (tmp_path / "escaped-by-command").exists()
    assert not (tmp_path / "escaped-by-check").exists()  # the checks ran sealed too
    (row,) = card.tasks
    assert row.result == "FAIL" and attempt.status == "COMPLETED"  # recorded, not crashed
    assert attempt.sandbox == card.sandbox == "bwrap, network off"
    assert "Sandbox: bwrap, network off." in (layout.reports / "summary.md").read_text()


def test_the_same_agent_unsandboxed_reads_the_key_and_the_run_says_so(
    tmp_path: Path, loopback: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other direction: without the sandbox every probe above lands; and a sealed run
    in the same folder runs the attempt again rather than reuse the unsealed one."""
    card, attempt, layout = scripted_run(tmp_path, loopback, monkeypatch, "tasks.sandbox=none")
    calls = by_probe(attempt, list(probes(tmp_path, loopback)))
    for name in ("key", "git", "snapshot", "proc", "net", "write_out"):
        assert calls[name].ok, (name, calls[name].output)
    assert KEY_TEXT in calls["key"].output and "connected" in calls["net"].output
    assert (tmp_path / "escaped-by-command").exists()
    # a planted conftest.py is never graded, sandbox or not: tests_tampered
    assert not (tmp_path / "escaped-by-check").exists()
    assert any(c.name == "tests_tampered" and not c.ok for c in attempt.checks)
    assert card.sandbox == attempt.sandbox == UNSANDBOXED
    assert f"Sandbox: {UNSANDBOXED}." in (layout.reports / "summary.md").read_text()
    sealed, again, _layout = scripted_run(tmp_path, loopback, monkeypatch)
    assert again.sandbox == sealed.sandbox == "bwrap, network off"
    assert not by_probe(again, list(probes(tmp_path, loopback)))["key"].ok


def test_network_on_by_param(
    tmp_path: Path, loopback: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    card, attempt, _layout = scripted_run(
        tmp_path, loopback, monkeypatch, "tasks.sandbox_network=true"
    )
    calls = by_probe(attempt, list(probes(tmp_path, loopback)))
    assert calls["net"].ok and "connected" in calls["net"].output
    assert not calls["key"].ok and card.sandbox == "bwrap, network on"


def test_chat_agent_through_a_loopback_model_is_refused_everything_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TASKS_AGENT_KEY", "sk-agent-" + "Xy7" * 9)
    with OpenAIServer() as agent:
        # The model's own endpoint listens on 127.0.0.1: the agent's shell cannot reach it.
        commands = [f"cat {TASK_FILE}", f"ls -A {ROOT}", connect(port_of(agent))]
        agent.push(
            Reply(text="", tool_calls=[Call("run", {"command": commands[0]}, id="c1")]),
            Reply(text="", tool_calls=[Call("read_file", {"path": str(TASK_FILE)}, id="c2")]),
            Reply(text="", tool_calls=[Call("run", {"command": commands[1]}, id="c3")]),
            Reply(text="", tool_calls=[Call("run", {"command": commands[2]}, id="c4")]),
            Reply(text="I could not find the answers; I made no change."),
        )
        params = load_params(
            ROOT / "pipelines/tasks/params.yaml",
            [
                "tasks.harness=chat",
                "tasks.ids=[bugfix-durations]",
                "target.model=agent-model",
                f"target.base_url={agent.base_url}",
                "target.protocol=openai",
                "target.api_key_env=TASKS_AGENT_KEY",
                "run.cache=false",
            ],
        )
        layout = Layout.run_dir(ROOT, tmp_path / "run")
        card = run_tasks(params, layout, judge=False)
    attempt = load_attempt(attempt_dir(layout.data, TASK.id, 0))
    assert attempt is not None and attempt.status == "COMPLETED"
    key, read, repo, net = attempt.calls
    assert not key.ok and "No such file" in key.output
    assert not read.ok and "outside the project" in read.output
    assert hidden_but_exposed(repo, ROOT), repo.output
    assert not net.ok and "connected" not in net.output
    assert card.tasks[0].result == "FAIL" and card.sandbox == "bwrap, network off"


def test_claude_code_runs_whole_inside_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    login = tmp_path / "login" / "credentials.json"
    login.parent.mkdir()
    login.write_text('{"login": "its own"}\n')
    commands = [
        f"cat {TASK_FILE}",
        f"ls -A {ROOT}",
        f"cat {login}",
        "ls -A ~",
        f"touch {tmp_path}/escaped-by-claude",
    ]
    monkeypatch.setenv("FAKE_CLAUDE_COMMANDS", json.dumps(commands))
    params = load_params(
        ROOT / "pipelines/tasks/params.yaml",
        [
            "tasks.harness=claude-code",
            f"tasks.claude.command={ROOT / 'tests/stand_ins/claude_code/probing_claude.py'}",
            f"tasks.claude.home_files=[{login}]",
            "tasks.ids=[bugfix-durations]",
            "tasks.agent_env=[FAKE_CLAUDE_COMMANDS]",
        ],
    )
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    card = run_tasks(params, layout, judge=False)
    attempt = load_attempt(attempt_dir(layout.data, TASK.id, 0))
    assert attempt is not None and attempt.status == "COMPLETED", attempt and attempt.error
    key, repo, own_login, home, _escape = attempt.calls
    assert not key.ok and KEY_TEXT not in key.output
    installation = ROOT / "tests/stand_ins/claude_code"
    assert repo.ok and listing(repo) <= visible(ROOT, installation)
    assert own_login.ok and "its own" in own_login.output  # its login, read-only
    assert home.ok and listing(home) <= visible(Path.home())  # nothing else of the home
    assert not (tmp_path / "escaped-by-claude").exists()
    assert card.sandbox == "bwrap, network on for the agent (its API), off for the checks"


def test_timeout_still_kills_everything_the_command_started(tmp_path: Path) -> None:
    marker = tmp_path / "child-alive"
    token = "61.2345"  # a sleep no other process here runs
    script = f"echo started; (sleep 3; touch {marker}) & sleep {token}"
    start = time.perf_counter()
    done = asyncio.run(run_command(script, tmp_path, agent_env(), 1.0, sandbox=default_sandbox()))
    assert done.timed_out and done.exit_code is None and "started" in done.output
    assert time.perf_counter() - start < 30
    time.sleep(3.5)
    assert not marker.exists()
    alive = subprocess.run(["pgrep", "-f", f"sleep {token}"], capture_output=True, text=True)
    assert alive.stdout.strip() == "", "a process outlived its sandbox"


def test_the_checks_touch_nothing_outside_the_copy(tmp_path: Path) -> None:
    """A file the agent turned into a link out: never carried into the graded tree (a
    finding), so neither the mutant nor `clean` can follow it."""
    from agenteval.benchmarks.tasks.checks import run_checks
    from agenteval.benchmarks.tasks.workspace import prepare

    victim = tmp_path / "victim.py"
    victim.write_text("precious\n")
    (tmp_path / "precious-dir").mkdir()
    (tmp_path / "precious-dir/keep.txt").write_text("keep\n")
    cold = next(t for t in SPEC.tasks if t.id == "cold-cache")
    assert TASK.expect is not None and cold.expect is not None
    ws = prepare(ROOT / SPEC.toybox, None)
    try:
        target = ws.work / "toybox/durations.py"
        target.unlink()
        target.symlink_to(victim)
        (ws.work / ".toybox-cache").symlink_to(tmp_path / "precious-dir")
        expect = TASK.expect.model_copy(update={"tests_pass": cold.expect.tests_pass})
        grading = ws.grade([])
        results = asyncio.run(run_checks(expect, ws, agent_env(), 60, default_sandbox(), grading))
    finally:
        ws.close()
    assert "toybox/durations.py: a link, not graded" in grading.findings
    assert ".toybox-cache: a link, not graded" in grading.findings
    mutant = next(r for r in results if r.name == "kills_mutants")
    assert not mutant.ok
    assert victim.read_text() == "precious\n"
    assert (tmp_path / "precious-dir/keep.txt").read_text() == "keep\n"


def test_interpreter_inside_a_hidden_folder_is_put_back_read_only(tmp_path: Path) -> None:
    sandbox = build("bwrap", hide=[sys.prefix]).check()  # the venv hidden, then put back
    argv = sandbox.wrap(
        [sys.executable, "-c", "import pytest, pathlib; pathlib.Path('x').write_text('1')"],
        tmp_path,
        writable=[tmp_path],
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "x").read_text() == "1"
    escape = sandbox.wrap([sys.executable, "-c", f"open({sys.prefix!r} + '/w', 'w')"], tmp_path)
    assert subprocess.run(escape, capture_output=True, timeout=60).returncode != 0


def test_policy_refuses_to_open_what_holds_the_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"tasks\.sandbox_expose"):
        build("bwrap", root=ROOT, sealed=[TASK_FILE.parent], expose=[ROOT / "eval"])
    with pytest.raises(ValueError, match="hide"):
        build("bwrap", hide=["/"])
    with pytest.raises(ValueError, match=r"tasks\.sandbox must be"):
        build("docker")
    sandbox = build("bwrap", root=ROOT, sealed=[TASK_FILE.parent])
    with pytest.raises(ValueError, match="would open"):
        sandbox.wrap(["true"], tmp_path, readable=[ROOT / "eval/tasks/toybox"])
    # copies made inside a sealed folder, in every sandbox mode (none included)
    for kind, work_root in (("none", TASK_FILE.parent / "w"), ("bwrap", tmp_path / "run/data")):
        params = {"tasks": {"sandbox": kind, "work_root": str(work_root)}}
        with pytest.raises(ValueError, match=r"^tasks\.work_root: "):
            from_params(params, ROOT, sealed=[tmp_path / "run/data"])


def cli(tmp_path: Path, env: dict[str, str], *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "agenteval", "tasks", "run", "--tasks", "explain-durations"]
    argv += ["--no-judge", "--no-track", "--out", str(tmp_path / "run"), *extra]
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_refused_before_any_work_where_bwrap_is_missing(tmp_path: Path) -> None:
    env = {**CLI_ENV, "PATH": str(Path(sys.executable).parent)}  # a PATH without bwrap
    done = cli(tmp_path, env)
    assert done.returncode == 2, done.stderr
    assert "tasks.sandbox: none" in done.stderr and "--set tasks.sandbox=none" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "run").exists()
    opted_out = cli(tmp_path, env, "--set", "tasks.sandbox=none")
    # The run goes ahead unsandboxed: its one question is graded by code (no judge needed).
    assert opted_out.returncode == 0, opted_out.stderr
    assert f"sandbox: {UNSANDBOXED}" in opted_out.stdout
    card = json.loads((tmp_path / "run/scorecard.json").read_text())
    assert card["sandbox"] == UNSANDBOXED


def test_refused_before_any_work_where_namespaces_cannot_be_made(tmp_path: Path) -> None:
    """The CLI inside a sandbox that forbids user namespaces: its own bwrap cannot start."""
    outer = [
        "bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        "--tmpfs", "/tmp", "--ro-bind", str(ROOT), str(ROOT),  # a clone under /tmp
        "--bind", str(tmp_path), str(tmp_path),
        "--unshare-user", "--unshare-pid", "--disable-userns", "--die-with-parent",
        "--chdir", str(ROOT), "--",
    ]  # fmt: skip
    argv = [*outer, sys.executable, "-m", "agenteval", "tasks", "run", "--no-track"]
    argv += ["--out", str(tmp_path / "run")]
    done = subprocess.run(argv, env=CLI_ENV, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert "cannot create its sandbox" in done.stderr and "tasks.sandbox=none" in done.stderr
    assert not (tmp_path / "run").exists()
