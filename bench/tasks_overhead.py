"""Benchmark: what the tasks harness costs beside the agent's own time, and the offline suite.

Per task (the reference solution as the agent): copy + setup + snapshot, the diff against the
snapshot, the expect checks (each check is a real pytest run or probe command), and removing
the copy — wall time and CPU time (this process and its children), median of --repeat runs.
Then the whole offline suite (scripted harness, every task, checks included) end to end.
Target: under 1 s of overhead a task beside the agent's own time.

The sandbox (tasks.sandbox: bwrap) is measured against none, interleaved (each repeat runs
both, in alternating order, so drift on a shared machine hits both alike): one trivial
command (`true`, --commands times each), and per task the agent's commands and the checks.
Medians throughout. CPU time of sandboxed commands is not seen here (the processes inside
bwrap's namespaces are not reaped into this one's children times): wall time only for them.

Run from the repository root with the venv active:
    python bench/tasks_overhead.py [--suite full] [--repeat 3] [--commands 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenteval.benchmarks.tasks import bytecode, stream  # noqa: E402
from agenteval.benchmarks.tasks.boundary import agent_env  # noqa: E402
from agenteval.benchmarks.tasks.checks import CHECK_ENV, PYTEST_OPTIONS, run_checks  # noqa: E402
from agenteval.benchmarks.tasks.commands import run_command  # noqa: E402
from agenteval.benchmarks.tasks.definitions import load_task_file, select  # noqa: E402
from agenteval.benchmarks.tasks.runner import RunSettings, TaskRunner  # noqa: E402
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox, build  # noqa: E402
from agenteval.benchmarks.tasks.scripted import ScriptedHarness  # noqa: E402
from agenteval.benchmarks.tasks.secrets import SecretGuard  # noqa: E402
from agenteval.benchmarks.tasks.tools import ToolRecord, WorkspaceTools  # noqa: E402
from agenteval.benchmarks.tasks.workspace import prepare  # noqa: E402
from agenteval.schema.tasks import Task  # noqa: E402


def cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


class Clock:
    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    def measure(self, name: str, start_wall: float, start_cpu: float) -> None:
        self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - start_wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu() - start_cpu


async def one(task: Task, toybox: Path, env: dict[str, str], sandbox: Sandbox) -> Clock:
    clock = Clock()
    w, c = time.perf_counter(), cpu()
    ws = prepare(toybox, task.setup)
    clock.measure("setup", w, c)
    w, c = time.perf_counter(), cpu()
    tools = WorkspaceTools(ws.work, env, 20, ToolRecord(), sandbox)
    for step in task.reference.steps:
        await tools.call(step.tool, step.args)
    clock.measure("agent", w, c)
    w, c = time.perf_counter(), cpu()
    tests_pass = task.expect.tests_pass if task.expect is not None else None
    grading = ws.grade(tests_pass.editable if tests_pass is not None else None)
    if task.setup:
        ws.setup_diff()
    clock.measure("diff", w, c)  # the pristine graded tree is built here
    w, c = time.perf_counter(), cpu()
    if task.expect is not None:
        await run_checks(task.expect, ws, env, 300, sandbox, grading)
    clock.measure("checks", w, c)
    w, c = time.perf_counter(), cpu()
    ws.close()
    clock.measure("cleanup", w, c)
    return clock


Row = tuple[str, dict[str, float], dict[str, float]]


def per_task(
    tasks: list[Task], toybox: Path, repeat: int, sandboxes: dict[str, Sandbox]
) -> dict[str, list[Row]]:
    """{sandbox name: rows}, the sandboxes interleaved within each repeat."""
    env = agent_env()
    rows: dict[str, list[Row]] = {name: [] for name in sandboxes}
    for task in tasks:
        clocks: dict[str, list[Clock]] = {name: [] for name in sandboxes}
        for index in range(repeat):
            order = list(sandboxes) if index % 2 == 0 else list(reversed(sandboxes))
            for name in order:
                clocks[name].append(asyncio.run(one(task, toybox, env, sandboxes[name])))
        for name, done in clocks.items():
            names = done[0].wall
            wall = {n: statistics.median(c.wall[n] for c in done) for n in names}
            cpu_s = {n: statistics.median(c.cpu[n] for c in done) for n in names}
            rows[name].append((task.id, wall, cpu_s))
    return rows


COMMANDS = ("true", "python -c pass")  # the sandbox's own cost; an interpreter's start in it


def per_command(sandboxes: dict[str, Sandbox], command: str, times: int) -> dict[str, float]:
    """Median wall seconds of `command` in each sandbox, interleaved."""
    env = agent_env()
    seen: dict[str, list[float]] = {name: [] for name in sandboxes}
    with tempfile.TemporaryDirectory(prefix="agenteval-bench-") as tmp:
        for index in range(times):
            order = list(sandboxes) if index % 2 == 0 else list(reversed(sandboxes))
            for name in order:
                start = time.perf_counter()
                asyncio.run(run_command(command, Path(tmp), env, 20, sandbox=sandboxes[name]))
                seen[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in seen.items()}


def per_pytest(toybox: Path, sealed: Sandbox, times: int) -> dict[str, float]:
    """Median wall seconds of one check's pytest run of the toybox suite in the sandbox,
    without and with the evaluator's bytecode folder (tasks.bytecode), interleaved."""
    env = {**agent_env(), **CHECK_ENV}
    prefix = bytecode.toolchain_prefix(env)
    if prefix is None:
        return {}
    ways = {
        "plain": (sealed, env),
        "bytecode": (
            replace(sealed, exposed=(*sealed.exposed, prefix)),
            {**env, bytecode.PREFIX: str(prefix)},
        ),
    }
    seen: dict[str, list[float]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory(prefix="agenteval-bench-") as tmp:
        project = Path(tmp) / "project"
        shutil.copytree(toybox, project)
        for index in range(times):
            for name in list(ways) if index % 2 == 0 else list(reversed(ways)):
                sandbox, run_env = ways[name]
                read_end, write_end = os.pipe()
                argv = ["python", *stream.launcher(write_end), *PYTEST_OPTIONS]
                start = time.perf_counter()
                asyncio.run(
                    run_command(argv, project, run_env, 60, sandbox=sandbox, pass_fds=[write_end])
                )
                seen[name].append(time.perf_counter() - start)
                os.close(write_end)
                os.close(read_end)
    return {name: statistics.median(values) for name, values in seen.items()}


def suite_wall(tasks: list[Task], toybox: Path, sandbox: Sandbox) -> tuple[float, float]:
    settings = RunSettings(
        toybox=toybox, command_timeout_s=20, check_timeout_s=300, sandbox=sandbox
    )
    with tempfile.TemporaryDirectory() as tmp:
        runner = TaskRunner(ScriptedHarness(), settings, Path(tmp), SecretGuard())
        w, c = time.perf_counter(), cpu()
        asyncio.run(runner.run(tasks, 1))
        return time.perf_counter() - w, cpu() - c


OVERHEAD = ("setup", "diff", "checks", "cleanup")


def _cell(wall: float, cpu_s: float | None, width: int = 5) -> str:
    return f"{wall:{width}.2f}/{'n/a' if cpu_s is None else f'{cpu_s:5.2f}':>5s}"


def table(name: str, rows: list[Row], repeat: int) -> tuple[float, float]:
    """Print one sandbox's per-task table; (median overhead wall, median agent wall)."""
    seen = name == "none"  # the CPU of bwrap's processes is not counted by os.times
    print(f"\nsandbox {name}: per task, median of {repeat} (wall s / CPU s); "
          "overhead = setup+diff+checks+cleanup")  # fmt: skip
    print(f"{'task':18s} {'setup':>12s} {'diff':>12s} {'checks':>12s} {'overhead':>13s} "
          f"{'agent':>12s}")  # fmt: skip
    totals_wall, totals_cpu = [], []
    for task_id, wall, cpu_s in rows:
        ow, oc = sum(wall[n] for n in OVERHEAD), sum(cpu_s[n] for n in OVERHEAD)
        totals_wall.append(ow)
        totals_cpu.append(oc)
        cells = [_cell(wall[n], cpu_s[n] if seen else None) for n in ("setup", "diff", "checks")]
        print(f"{task_id:18s} {cells[0]:>12s} {cells[1]:>12s} {cells[2]:>12s} "
              f"{_cell(ow, oc if seen else None, 6):>13s} "
              f"{_cell(wall['agent'], cpu_s['agent'] if seen else None):>12s}")  # fmt: skip
    cpu_text = f"{statistics.median(totals_cpu):.2f} s CPU" if seen else "CPU n/a"
    print(f"overhead per task: median {statistics.median(totals_wall):.2f} s wall, {cpu_text}; "
          f"max {max(totals_wall):.2f} s wall (target: under 1 s a task)")  # fmt: skip
    agent = statistics.median(wall["agent"] for _id, wall, _cpu in rows)
    return statistics.median(totals_wall), agent


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="full")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--commands", type=int, default=40, help="runs of one trivial command")
    parser.add_argument("--tasks", default="", help="only these ids (a,b) in the per-task table")
    args = parser.parse_args()
    spec = load_task_file(ROOT / "eval/tasks/tasks.json")
    tasks = select(spec, args.suite, [t for t in args.tasks.split(",") if t])
    toybox = ROOT / spec.toybox
    sealed = build("bwrap", root=ROOT, sealed=[ROOT / "eval/tasks"]).check()
    sandboxes = {"none": NO_SANDBOX, "bwrap": sealed}
    for text in COMMANDS:
        took = per_command(sandboxes, text, args.commands)
        extra_ms = (took["bwrap"] - took["none"]) * 1000
        print(f"one command (`{text}`), median of {args.commands}, interleaved: "
              f"none {took['none'] * 1000:.1f} ms, bwrap {took['bwrap'] * 1000:.1f} ms "
              f"({extra_ms:+.1f} ms a command)")  # fmt: skip
    took = per_pytest(toybox, sealed, args.commands)
    if took:
        print(f"one check's pytest run of the toybox suite (bwrap), median of {args.commands}, "
              f"interleaved: {took['plain']:.2f} s wall compiling the toolchain, "
              f"{took['bytecode']:.2f} s with the evaluator's bytecode folder")  # fmt: skip
    medians = {
        name: table(name, rows, args.repeat)
        for name, rows in per_task(tasks, toybox, args.repeat, sandboxes).items()
    }
    (none_over, none_agent), (bwrap_over, bwrap_agent) = medians["none"], medians["bwrap"]
    print(f"\nsandbox cost per task (medians): overhead {bwrap_over - none_over:+.2f} s wall "
          f"({bwrap_over / none_over:.2f}x), the reference agent's commands "
          f"{bwrap_agent - none_agent:+.2f} s wall")  # fmt: skip
    for name in ("core", args.suite) if args.suite != "core" else ("core",):
        if args.tasks:
            break
        chosen = select(spec, name)
        runs: dict[str, list[tuple[float, float]]] = {label: [] for label in sandboxes}
        for label in [*sandboxes, *reversed(sandboxes)]:  # A B B A: drift hits both alike
            runs[label].append(suite_wall(chosen, toybox, sandboxes[label]))
        for label, done in runs.items():
            wall = statistics.median(w for w, _c in done)
            cpu_text = f"{statistics.median(c for _w, c in done):.1f} s CPU"
            print(f"offline suite {name} ({len(chosen)} tasks, scripted harness, checks "
                  f"included), sandbox {label}, median of {len(done)}: {wall:.1f} s wall, "
                  f"{cpu_text if label == 'none' else 'CPU n/a'}")  # fmt: skip
    only = f" --tasks {args.tasks}" if args.tasks else ""
    print(
        f"rerun: python bench/tasks_overhead.py --suite {args.suite} --repeat {args.repeat} "
        f"--commands {args.commands}{only}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
