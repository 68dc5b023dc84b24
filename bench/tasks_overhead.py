"""Benchmark: what the tasks harness costs beside the agent's own time, and the offline suite.

Per task (the reference solution as the agent): copy + setup + snapshot, the diff against the
snapshot, the expect checks (each check is a real pytest run or probe command), and removing
the copy — wall time and CPU time (this process and its children), median of --repeat runs.
Then the whole offline suite (scripted harness, every task, checks included) end to end.
Target: under 1 s of overhead a task beside the agent's own time.

Run from the repository root with the venv active:
    python bench/tasks_overhead.py [--suite full] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenteval.benchmarks.tasks.boundary import agent_env  # noqa: E402
from agenteval.benchmarks.tasks.checks import run_checks  # noqa: E402
from agenteval.benchmarks.tasks.definitions import load_task_file, select  # noqa: E402
from agenteval.benchmarks.tasks.runner import RunSettings, TaskRunner  # noqa: E402
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


async def one(task: Task, toybox: Path, env: dict[str, str]) -> Clock:
    clock = Clock()
    w, c = time.perf_counter(), cpu()
    ws = prepare(toybox, task.setup)
    clock.measure("setup", w, c)
    w, c = time.perf_counter(), cpu()
    tools = WorkspaceTools(ws.work, env, 20, ToolRecord())
    for step in task.reference.steps:
        await tools.call(step.tool, step.args)
    clock.measure("agent", w, c)
    w, c = time.perf_counter(), cpu()
    ws.diff()
    if task.setup:
        ws.setup_diff()
    clock.measure("diff", w, c)
    w, c = time.perf_counter(), cpu()
    if task.expect is not None:
        await run_checks(task.expect, ws, env, 300)
    clock.measure("checks", w, c)
    w, c = time.perf_counter(), cpu()
    ws.close()
    clock.measure("cleanup", w, c)
    return clock


def per_task(
    tasks: list[Task], toybox: Path, repeat: int
) -> list[tuple[str, dict[str, float], dict[str, float]]]:
    env = agent_env()
    rows = []
    for task in tasks:
        clocks = [asyncio.run(one(task, toybox, env)) for _ in range(repeat)]
        names = clocks[0].wall
        wall = {n: statistics.median(c.wall[n] for c in clocks) for n in names}
        cpu_s = {n: statistics.median(c.cpu[n] for c in clocks) for n in names}
        rows.append((task.id, wall, cpu_s))
    return rows


def suite_wall(tasks: list[Task], toybox: Path) -> tuple[float, float]:
    settings = RunSettings(toybox=toybox, command_timeout_s=20, check_timeout_s=300)
    with tempfile.TemporaryDirectory() as tmp:
        runner = TaskRunner(ScriptedHarness(), settings, Path(tmp), SecretGuard())
        w, c = time.perf_counter(), cpu()
        asyncio.run(runner.run(tasks, 1))
        return time.perf_counter() - w, cpu() - c


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="full")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", default="", help="only these ids (a,b) in the per-task table")
    args = parser.parse_args()
    spec = load_task_file(ROOT / "eval/tasks/tasks.json")
    tasks = select(spec, args.suite, [t for t in args.tasks.split(",") if t])
    toybox = ROOT / spec.toybox
    overhead = ("setup", "diff", "checks", "cleanup")
    print(
        f"per task, median of {args.repeat} (wall s / CPU s); overhead = setup+diff+checks+cleanup"
    )
    print(
        f"{'task':18s} {'setup':>12s} {'diff':>12s} {'checks':>12s} {'overhead':>13s} "
        f"{'agent':>12s}"
    )
    totals_wall, totals_cpu = [], []
    for task_id, wall, cpu_s in per_task(tasks, toybox, args.repeat):
        ow, oc = sum(wall[n] for n in overhead), sum(cpu_s[n] for n in overhead)
        totals_wall.append(ow)
        totals_cpu.append(oc)
        cells = [f"{wall[n]:5.2f}/{cpu_s[n]:5.2f}" for n in ("setup", "diff", "checks")]
        print(f"{task_id:18s} {cells[0]:>12s} {cells[1]:>12s} {cells[2]:>12s} "
              f"{ow:6.2f}/{oc:5.2f} {wall['agent']:5.2f}/{cpu_s['agent']:5.2f}")  # fmt: skip
    print(f"overhead per task: median {statistics.median(totals_wall):.2f} s wall, "
          f"{statistics.median(totals_cpu):.2f} s CPU; max {max(totals_wall):.2f} s wall "
          f"(target: under 1 s a task)")  # fmt: skip
    for name in ("core", args.suite) if args.suite != "core" else ("core",):
        if args.tasks:
            break
        chosen = select(spec, name)
        wall, cpu_s = suite_wall(chosen, toybox)
        print(f"offline suite {name} ({len(chosen)} tasks, scripted harness, checks included): "
              f"{wall:.1f} s wall, {cpu_s:.1f} s CPU")  # fmt: skip
    only = f" --tasks {args.tasks}" if args.tasks else ""
    print(
        f"rerun: python bench/tasks_overhead.py --suite {args.suite} --repeat {args.repeat}{only}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
