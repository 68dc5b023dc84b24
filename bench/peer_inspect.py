"""Benchmark: agenteval and inspect_ai side by side, same items, same loopback endpoint.

Run from the repository root with the venv active:  python bench/peer_inspect.py
Options: --items 500  --concurrency 32  --latency 0.05  --repeats 3  --workload both

inspect_ai is never a project dependency: the script creates its own virtual environment
(.cache/bench/inspect_ai-<version>/, reused by later runs) with inspect_ai and openai pinned
below, from the package registry. Both harnesses talk to one OpenAI-compatible loopback
endpoint (bench/loopback.py, its own process, `latency` per request) at the same
concurrency, on the same N items, each as its own command line process, timed from start
to exit. Each item is the same work for both, in one of two workloads:

- `tool` (tool call, then the answer: 2 requests per item): the agenteval scenario expects
  a `query_documents` call, and the inspect_ai task offers the same tool
  (`use_tools(query_documents())` then `generate()`, which runs the call and asks again).
- `plain` (the answer only: 1 request per item): no tool is expected, and the endpoint
  never calls one; the inspect_ai task is `generate()` alone.

The harnesses:

- agenteval: `python -m agenteval run` (the console script's code) on N generated single-
  turn scenarios with the `chat` target, the code judge, the reports, and MLflow tracking
  on (the default: params, metrics, artifacts, the verdict table and, with the default
  policy `tracking.traces: sample`, a trace with its spans, feedback and expectations for
  every item that did not pass and for `tracking.trace_sample` passing ones, through MLflow's
  public tracing API, counted back in the store), on without traces
  (`tracking.traces=none`) or off (`tracking.enabled=false`).
  The sqlite store exists before the clock starts.
- inspect_ai: `inspect eval` of a task with the same N questions and an `includes()`
  scorer, `--model openai/bench-model -M responses_api=false` (chat completions, as the
  endpoint speaks), `--max-connections` = concurrency, `--display plain`, writing its usual
  .eval log.

The endpoint's request count is checked: both harnesses must send the same number, or the
workload is not the same work and the script stops. Each repeat runs the four in turn;
the table shows medians. wall/ideal divides by requests x latency / concurrency, the time
the endpoint alone imposes. CPU is each harness's process tree (agenteval logs to MLflow
in its own process), endpoint the loopback's CPU during that run, and floor the least wall
any schedule could reach on this machine's cores: max(ideal, (CPU + endpoint) / cores). So
a ratio target can be checked against what the machine allows, not only against the last
run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback
import workload

ROOT = workload.ROOT
SCRIPT = "python bench/peer_inspect.py"
INSPECT_PINS = ("inspect_ai==0.3.285", "openai==3.57.0")
VENV = ROOT / ".cache" / "bench" / ("-".join(p.replace("==", "-") for p in INSPECT_PINS))
QUESTION = "Question {i}: what are the opening hours on weekdays?"  # as workload.SCENARIO

TASK = """
import os
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, use_tools
from inspect_ai.tool import tool


@tool
def query_documents():
    async def execute(query: str) -> str:
        \"\"\"Search the document library.

        Args:
            query: What to look for.
        \"\"\"
        return "Opening hours: 9:00 to 17:00 on weekdays."

    return execute


@task
def bench():
    n = int(os.environ["BENCH_ITEMS"])
    samples = [Sample(input={question!r}.format(i=i), target="9:00 to 17:00") for i in range(n)]
    solver = {solver}
    return Task(dataset=samples, solver=solver, scorer=includes())
"""


@dataclass(frozen=True)
class Workload:
    """One item's work, the same for both harnesses."""

    description: str
    solver: str  # the inspect_ai solver doing what one agenteval item does
    tools: bool  # the scenario expects query_documents and the endpoint calls it
    requests_per_item: int


WORKLOADS = {
    "tool": Workload("tool call, then the answer", "[use_tools(query_documents()), generate()]",
                     tools=True, requests_per_item=2),
    "plain": Workload("the answer only", "generate()", tools=False, requests_per_item=1),
}  # fmt: skip


def inspect_env() -> Path:
    """The pinned inspect_ai environment, created on first use; returns its `inspect`."""
    command = VENV / "bin" / "inspect"
    marker = VENV / "pins.txt"
    if command.exists() and marker.is_file() and marker.read_text() == "\n".join(INSPECT_PINS):
        return command
    print(f"creating {VENV} with {' '.join(INSPECT_PINS)} (once)", flush=True)
    venv.create(VENV, with_pip=True, clear=True)
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", *INSPECT_PINS]
    subprocess.run(pip, check=True)
    marker.write_text("\n".join(INSPECT_PINS))
    return command


def children_cpu() -> float:
    """CPU seconds of every finished, waited-for descendant: a harness's process tree."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_timed(cmd: list[str], cwd: Path, env: dict[str, str], port: int) -> dict[str, Any]:
    before, cpu_before = loopback.fetch_stats(port), children_cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        tail = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{tail}")
    after = loopback.fetch_stats(port)
    return {"wall_s": wall, "requests": after["served"] - before["served"],
            "cpu_s": children_cpu() - cpu_before,
            "endpoint_cpu_s": after["cpu_s"] - before["cpu_s"],
            "output": done.stdout + done.stderr}  # fmt: skip


def agenteval_project(folder: Path, items: int, port: int, concurrency: int, tools: bool) -> Path:
    root = workload.generated_root(folder, items, tools=tools)
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    for section, values in workload.chat_overrides(port, concurrency, ["library"]).items():
        params[section] = {**params[section], **values}
    params["tracking"]["uri"] = f"sqlite:///{folder / 'mlflow.db'}"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    workload.prepare_store(params["tracking"]["uri"])
    return root


# agenteval's three ways to run: tracking off, on without traces, on (the default trace
# policy, tracking.traces: sample; every item of this workload passes, so trace_sample of them
# are traced).
AGENTEVAL = {
    "agenteval, tracking off": ["--set", "tracking.enabled=false"],
    "agenteval, tracking on, no traces": ["--set", "tracking.traces=none"],
    "agenteval, tracking on": [],
}


def run_agenteval(root: Path, port: int, name: str, round_: int) -> dict[str, Any]:
    out = root.parent / f"run-{list(AGENTEVAL).index(name)}-{round_}"
    # `python -m agenteval` is the console script's code, from this source tree.
    cmd = [sys.executable, "-m", "agenteval", "run", "--out", str(out), "--no-progress"]
    cmd += AGENTEVAL[name]
    tracking = "tracking off" not in name
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=str(ROOT))
    result = run_timed(cmd, root, env, port)
    if tracking and "MLflow: logged run" not in result["output"]:
        raise SystemExit(f"agenteval did not log to MLflow:\n{result['output'][-2000:]}")
    return result


def run_inspect(
    inspect: Path, folder: Path, items: int, port: int, c: int, kind: str
) -> dict[str, Any]:
    task = TASK.format(question=QUESTION, solver=WORKLOADS[kind].solver)
    (folder / "task.py").write_text(task, encoding="utf-8")
    env = dict(os.environ, OPENAI_BASE_URL=f"http://127.0.0.1:{port}/v1",
               OPENAI_API_KEY="bench-not-a-key", BENCH_ITEMS=str(items),
               INSPECT_LOG_DIR=str(folder / "logs"))  # fmt: skip
    cmd = [
        str(inspect),
        "eval",
        "task.py",
        "--model",
        "openai/bench-model",
        "-M",
        "responses_api=false",
        "--max-connections",
        str(c),
        "--display",
        "plain",
    ]
    result = run_timed(cmd, folder, env, port)
    done = re.findall(r"Samples:\s*(\d+)/\s*(\d+)", result["output"])  # the display pads
    if not done or done[-1] != (str(items), str(items)):
        raise SystemExit(f"inspect did not finish every sample:\n{result['output'][-2000:]}")
    return result


def summarise(runs: list[dict[str, Any]], items: int, args: argparse.Namespace) -> dict[str, Any]:
    wall = statistics.median(r["wall_s"] for r in runs)
    requests = runs[0]["requests"]
    ideal = requests * args.latency / args.concurrency
    walls = [r["wall_s"] for r in runs]
    cpu = statistics.median(r["cpu_s"] for r in runs)
    endpoint = statistics.median(r["endpoint_cpu_s"] for r in runs)
    # No schedule on this machine's cores runs the harness and the endpoint in less wall
    # time than their CPU time shared out over the cores, nor in less than the ideal.
    floor = max(ideal, (cpu + endpoint) / (os.cpu_count() or 1))
    return {"wall_s": wall, "per_item_ms": wall / items * 1000, "requests": requests,
            "ideal_s": ideal, "ratio": wall / ideal, "walls": walls, "cpu_s": cpu,
            "endpoint_cpu_s": endpoint, "floor_s": floor}  # fmt: skip


def report(kind: str, rows: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    machine = f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, {workload.load_average()}"
    print(f"\nworkload {kind} ({WORKLOADS[kind].description}): {args.items} items, concurrency "
          f"{args.concurrency}, endpoint latency {args.latency * 1000:.0f} ms, median of "
          f"{args.repeats} ({machine})")  # fmt: skip
    print(f"{'harness':34s}{'wall':>9s}{'per item':>11s}{'requests':>10s}{'ideal':>8s}"
          f"{'wall/ideal':>12s}{'CPU':>8s}{'endpoint':>10s}{'floor':>8s}   walls")  # fmt: skip
    for name, row in rows.items():
        walls = " ".join(f"{w:.1f}" for w in row["walls"])
        print(f"{name:34s}{row['wall_s']:8.2f}s{row['per_item_ms']:9.1f}ms{row['requests']:10d}"
              f"{row['ideal_s']:7.2f}s{row['ratio']:11.2f}x{row['cpu_s']:7.2f}s"
              f"{row['endpoint_cpu_s']:9.2f}s{row['floor_s']:7.2f}s   {walls}")  # fmt: skip
    print(
        "CPU: the harness's process tree (parent and children), endpoint: the loopback's, "
        "floor: max(ideal, (CPU + endpoint) / cores), medians"
    )
    on, off, peer = rows["agenteval, tracking on"], rows["agenteval, tracking off"], rows[INSPECT]
    bare = rows["agenteval, tracking on, no traces"]
    print(f"agenteval tracking on / off, wall:      {on['wall_s'] / off['wall_s']:.2f}x "
          f"(target <= 2.0); without traces {bare['wall_s'] / off['wall_s']:.2f}x")  # fmt: skip
    print(
        f"inspect_ai / agenteval (tracking on), per item: "
        f"{peer['per_item_ms'] / on['per_item_ms']:.2f}x (target >= 4)"
    )
    print(f"  4x needs agenteval (tracking on) within {peer['wall_s'] / 4:.2f} s; "
          f"its CPU floor here is {on['floor_s']:.2f} s, "
          f"at most {peer['wall_s'] / on['floor_s']:.2f}x")  # fmt: skip


INSPECT = f"inspect_ai {INSPECT_PINS[0].split('==')[1]}"


def same_work(kind: str, runs: dict[str, list[dict[str, Any]]], items: int) -> None:
    """Stop unless every run sent the requests this workload's items make."""
    wanted = items * WORKLOADS[kind].requests_per_item
    sent = {name: [r["requests"] for r in rs] for name, rs in runs.items()}
    if any(n != wanted for counts in sent.values() for n in counts):
        raise SystemExit(f"workload {kind}: expected {wanted} requests per run, sent {sent}")


def measure(kind: str, inspect: Path, folder: Path, args: argparse.Namespace) -> None:
    """Every repeat of the three harness runs on one workload, then its table."""
    server, port = loopback.start_server(args.latency, tools=WORKLOADS[kind].tools)
    runs: dict[str, list[dict[str, Any]]] = {INSPECT: []} | {name: [] for name in AGENTEVAL}
    try:
        (folder / "inspect").mkdir()
        root = agenteval_project(
            folder / "agenteval", args.items, port, args.concurrency, WORKLOADS[kind].tools
        )
        for round_ in range(args.repeats):
            jiffies = workload.cpu_jiffies()
            runs[INSPECT].append(
                run_inspect(inspect, folder / "inspect", args.items, port, args.concurrency, kind)
            )
            for name in AGENTEVAL:
                runs[name].append(run_agenteval(root, port, name, round_))
            line = ", ".join(f"{k} {v[-1]['wall_s']:.1f} s" for k, v in runs.items())
            print(f"{kind} round {round_ + 1}: {line} ({workload.load_average()}, "
                  f"{workload.steal_since(jiffies)})", flush=True)  # fmt: skip
    finally:
        loopback.stop_server(server)
    same_work(kind, runs, args.items)
    report(kind, {name: summarise(r, args.items, args) for name, r in runs.items()}, args)
    print(json.dumps({name: [r["wall_s"] for r in r_] for name, r_ in runs.items()}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workload", choices=[*WORKLOADS, "both"], default="both")
    args = parser.parse_args()
    workload.prepare_to_measure()
    inspect = inspect_env()
    kinds = list(WORKLOADS) if args.workload == "both" else [args.workload]
    # SIGTERM unwinds like Ctrl-C, so the temporary project goes too (this script runs in a
    # peer's venv too, without agenteval.scratch).
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    with tempfile.TemporaryDirectory(prefix="agenteval-peer-") as tmp:
        for kind in kinds:
            (Path(tmp) / kind).mkdir()
            measure(kind, inspect, Path(tmp) / kind, args)
    print(f"\nrerun: {SCRIPT} --items {args.items} --concurrency {args.concurrency} "
          f"--repeats {args.repeats} --workload {args.workload}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
