"""The agent reaches only its copy: the path boundary, the environment without keys, the
command timeout, the snapshot outside its reach, and a cap that keeps the record."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks.boundary import OutsideWorkspace, agent_env, confine
from agenteval.benchmarks.tasks.commands import run_command
from agenteval.benchmarks.tasks.definitions import load_task_file
from agenteval.benchmarks.tasks.harness import AttemptContext
from agenteval.benchmarks.tasks.runner import RunSettings, TaskRunner, attempt_dir
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX
from agenteval.benchmarks.tasks.secrets import SecretGuard, SecretSurvived
from agenteval.benchmarks.tasks.tools import ToolRecord, WorkspaceTools
from agenteval.benchmarks.tasks.workspace import SnapshotTampered, prepare
from agenteval.llm.scrub import Scrubber
from agenteval.schema.tasks import Task
from agenteval.schema.transcript import Participant

ROOT = Path(__file__).resolve().parents[1]
TOYBOX = ROOT / "eval/tasks/toybox"
SPEC = load_task_file(ROOT / "eval/tasks/tasks.json")
KEY = "sk-live-" + "Zq8" * 10


def task(task_id: str) -> Task:
    return next(t for t in SPEC.tasks if t.id == task_id)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg/a.py").write_text("x = 1\n")
    (tmp_path / "secret.txt").write_text("the answer key\n")
    (root / "link_out").symlink_to(tmp_path / "secret.txt")
    (root / "dir_out").symlink_to(tmp_path)
    (root / "link_in").symlink_to(root / "pkg/a.py")
    return root


def test_confine_refuses_every_way_out(project: Path) -> None:
    assert confine(project, "pkg/a.py") == (project / "pkg/a.py").resolve()
    assert confine(project, str(project / "pkg")) == (project / "pkg").resolve()
    assert confine(project, "link_in") == (project / "pkg/a.py").resolve()
    for way_out in (
        "../secret.txt",
        "/etc/passwd",
        "link_out",
        "dir_out/secret.txt",
        "pkg/../..",
        "",
    ):
        with pytest.raises(OutsideWorkspace):
            confine(project, way_out)


def test_tools_refuse_outside_paths_and_record_the_refusal(project: Path) -> None:
    record = ToolRecord()
    tools = WorkspaceTools(project, agent_env(), 10, record)

    async def calls() -> None:
        await tools.call("read_file", {"path": "link_out"})
        await tools.call("write_file", {"path": "dir_out/planted.txt", "content": "x"})
        await tools.call("edit_file", {"path": "../secret.txt", "old": "the", "new": "a"})
        await tools.call("list_files", {})
        await tools.call("search", {"pattern": "answer"})
        await tools.call("read_file", {"path": "pkg/a.py"})

    asyncio.run(calls())
    read_out, write_out, edit_out, listing, search, read_in = record.calls
    assert not read_out.ok and "outside the project" in read_out.output
    assert not write_out.ok and not (project.parent / "planted.txt").exists()
    assert not edit_out.ok and (project.parent / "secret.txt").read_text() == "the answer key\n"
    assert "link_out" not in listing.output and "pkg/a.py" in listing.output
    assert search.output.startswith("0 matching")  # the link out is not followed
    assert read_in.ok and read_in.output == "x = 1\n"
    assert [c.index for c in record.calls] == list(range(6))


def test_agent_environment_holds_no_key(tmp_path: Path) -> None:
    base = {
        "PATH": os.environ["PATH"],
        "MY_PROVIDER_KEY_VAR": KEY,  # named in params as a key variable
        "ANTHROPIC_API_KEY": "anthropic-value-123456",  # secret-looking name
        "HARMLESS_LOOKING": "ghp_" + "a1B2" * 9,  # a value shaped like a key
        "PYTHONPATH": "/work/main",
        "MLFLOW_TRACKING_URI": "sqlite:////store.db",
        "LANG": "C.UTF-8",
    }
    env = agent_env(["MY_PROVIDER_KEY_VAR"], base=base)
    assert set(env) >= {"PATH", "LANG", "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    assert not {"MY_PROVIDER_KEY_VAR", "ANTHROPIC_API_KEY", "HARMLESS_LOOKING"} & set(env)
    assert not {"PYTHONPATH", "MLFLOW_TRACKING_URI"} & set(env)
    done = asyncio.run(run_command("env", tmp_path, env, 10))
    assert KEY not in done.output and "anthropic-value" not in done.output


def test_command_timeout_kills_the_whole_group_and_keeps_output(tmp_path: Path) -> None:
    marker = tmp_path / "child-alive"
    script = f"echo started; (sleep 3; touch {marker}) & sleep 60"
    start = time.perf_counter()
    done = asyncio.run(run_command(script, tmp_path, agent_env(), 1.0))
    assert done.timed_out and done.exit_code is None
    assert "started" in done.output
    assert time.perf_counter() - start < 30
    time.sleep(3.5)
    assert not marker.exists()  # the background child died with its group


def test_long_output_keeps_head_and_tail(tmp_path: Path) -> None:
    done = asyncio.run(
        run_command("seq 1 100000; echo '3 passed in 0.01s'", tmp_path, agent_env(), 30)
    )
    assert done.output.startswith("1\n2\n") and done.output.endswith("3 passed in 0.01s\n")
    assert "characters cut" in done.output and len(done.output) < 20_000


def test_an_output_flood_is_cut_as_it_arrives(tmp_path: Path) -> None:
    """64 MB printed: the result keeps the head and the tail, the middle only counted (it is
    never held whole, so a command printing forever costs the evaluator no memory)."""
    flood = "head -c 64000000 /dev/zero | tr '\\0' x; echo; echo '3 passed in 0.01s'"
    done = asyncio.run(run_command(flood, tmp_path, agent_env(), 60))
    assert done.exit_code == 0 and len(done.output) < 17_000
    assert " cut ...]" in done.output and done.output.rstrip().endswith("3 passed in 0.01s")


def test_snapshot_lives_outside_the_copy_and_tampering_is_caught() -> None:
    ws = prepare(TOYBOX, "red_neighbour")
    try:
        assert not ws.snapshot.resolve().is_relative_to(ws.work.resolve())
        with pytest.raises(OutsideWorkspace):
            confine(ws.work, str(ws.snapshot / "README.md"))
        assert (ws.snapshot / "README.md").stat().st_mode & 0o222 == 0  # read-only
        (ws.work / "toybox/new.py").write_text("y = 2\n")
        (ws.work / "tests/test_legacy.py").unlink()
        diff, changed = ws.diff()
        assert changed == ["tests/test_legacy.py", "toybox/new.py"]
        assert "+++ b/toybox/new.py" in diff and "+++ /dev/null" in diff
        assert "+++ b/tests/test_legacy.py" in ws.setup_diff()
        target = ws.snapshot / "tests/test_legacy.py"
        target.chmod(0o644)
        target.write_text("# the agent found the snapshot\n")
        with pytest.raises(SnapshotTampered):
            ws.diff()
    finally:
        ws.close()
    assert not ws.work.exists() and not ws.snapshot.exists()


class _SlowHarness:
    """Makes two real tool calls, then works past any cap."""

    in_process = False
    participant = Participant(kind="test-slow", model="slow", config_digest="1")

    def key_env_names(self) -> list[str]:
        return []

    def preflight(self) -> None:
        return None

    async def attempt(self, task: Task, ctx: AttemptContext) -> None:
        await ctx.tools.call("write_file", {"path": "toybox/started.py", "content": "x = 1\n"})
        await ctx.tools.call("run", {"command": "echo working"})
        await asyncio.sleep(60)


def test_a_task_cut_off_at_the_cap_keeps_its_record(tmp_path: Path) -> None:
    settings = RunSettings(toybox=TOYBOX, run_timeout_s=2.0, check_timeout_s=60)
    runner = TaskRunner(_SlowHarness(), settings, tmp_path, SecretGuard())
    attempt = asyncio.run(runner.attempt(task("bugfix-durations"), 0))
    assert attempt.status == "TIMEOUT" and "cap" in (attempt.error or "")
    assert [c.name for c in attempt.calls] == ["write_file", "run"]
    assert attempt.changed_files == ["toybox/started.py"]
    assert attempt.checks  # the finished project was still checked
    folder = attempt_dir(tmp_path, "bugfix-durations", 0)
    assert "+x = 1" in (folder / "workspace.diff").read_text()


def test_secrets_are_scrubbed_and_a_survivor_fails_the_write(tmp_path: Path) -> None:
    env = {"TESTS_API_TOKEN": KEY}
    guard = SecretGuard(env=env)
    guard.write_text(tmp_path / "a.diff", f"+api = '{KEY}'\n")
    assert KEY not in (tmp_path / "a.diff").read_text()
    # A scrubber that was never told the value, and a value of no known shape: only the
    # guard's own look at the environment catches it, and then nothing is written.
    plain = "live-" + "q" * 30
    blind = SecretGuard(env={"TESTS_API_TOKEN": plain}, scrubber=Scrubber())
    with pytest.raises(SecretSurvived, match="env:TESTS_API_TOKEN"):
        blind.write_text(tmp_path / "b.diff", f"value {plain}\n")
    assert not (tmp_path / "b.diff").exists()


def test_a_machine_without_pytest_is_a_setup_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reference agent was once blamed ("claims passing tests") for a pytest this
    machine lacked: now the coding tasks are SETUP_ERROR naming the tool, the agent never
    starts, and a question task (no tests to run) still runs."""
    bare = tmp_path / "bin"
    bare.mkdir()
    (bare / "python").symlink_to("/usr/bin/python3")  # Debian's Python: no pytest in it
    if not Path("/usr/bin/python3").exists():
        pytest.skip("no /usr/bin/python3 to stand for a Python without pytest")
    monkeypatch.setenv("PATH", f"{bare}{os.pathsep}{os.environ['PATH']}")
    # Unsandboxed: the sandbox hides /tmp, where this stand-in Python lives.
    settings = RunSettings(toybox=TOYBOX, run_timeout_s=2.0, sandbox=NO_SANDBOX)
    runner = TaskRunner(_SlowHarness(), settings, tmp_path / "data", SecretGuard())
    coding = task("bugfix-durations")
    question = next(t for t in SPEC.tasks if t.kind == "question")
    done = asyncio.run(runner.run([coding, question], 1))
    by_kind = {SPEC_KIND[a.task_id]: a for a in done}
    assert by_kind["coding"].status == "SETUP_ERROR"
    assert "pytest" in (by_kind["coding"].error or "") and not by_kind["coding"].calls
    assert by_kind["question"].status == "TIMEOUT"  # it ran: the slow harness hit the cap


SPEC_KIND = {t.id: t.kind for t in SPEC.tasks}
