"""Benchmark: the shipped suite (56 scenarios) x 20 iterations, tracking off and on.

Run from the repository root with the venv active:  python bench/inference.py
Options: --iterations 20  --concurrency 32  --latency 0.05

A copy of eval/ with its pinned corpora (fetched offline from the local mirrors) runs through
the `chat` harness against the loopback endpoint of bench/loopback.py (every user turn: one
query_documents call, then the answer; response cache off), once with `tracking.enabled`
false and once with MLflow tracking on into a sqlite store created beforehand. Each run is
a fresh worker process doing the steps of `agenteval run` (workload.timed_steps). Printed:
the inference span against its ideal (requests x latency / concurrency), the harness CPU
per conversation turn during inference (process CPU, so the journal's writer thread and
the agent's document tools count), every step's time, and the whole process wall of both
runs with their ratio.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback
import workload

SCRIPT = "python bench/inference.py"
TARGET_RATIO, TARGET_CPU_MS = 1.3, 2.0


def run_once(root: Path, port: int, tracking: bool, args: argparse.Namespace) -> dict[str, Any]:
    uri = f"sqlite:///{root.parent / 'mlflow.db'}"
    if tracking:
        workload.prepare_store(uri)
    config = {
        "root": str(root),
        "out": str(root.parent / f"run-{'on' if tracking else 'off'}"),
        "port": port,
        "concurrency": args.concurrency,
        "library": ["eval/corpus/documents"],
        "tracking": tracking,
        "uri": uri,
        "iterations": args.iterations,
    }
    before = loopback.fetch_stats(port)
    fig = workload.run_in_worker("steps", config, Path(workload.__file__))
    after = loopback.fetch_stats(port)
    fig["requests"] = after["served"] - before["served"]
    fig["server_cpu_s"] = after["cpu_s"] - before["cpu_s"]
    return fig


def show(name: str, fig: dict[str, Any], args: argparse.Namespace) -> None:
    ideal = fig["requests"] * args.latency / args.concurrency
    infer = fig["steps"]["infer"]
    cpu_turn = fig["cpu"]["infer"] / max(1, fig["turns"]) * 1000
    steps = ", ".join(f"{k} {v:.2f}" for k, v in fig["steps"].items())
    print(f"\n{name}: {fig['conversations']} conversations, {fig['turns']} turns, "
          f"{fig['requests']} requests, {fig['statuses']}")  # fmt: skip
    print(f"  inference span          {infer:8.2f} s  ideal {ideal:.2f} s  ratio "
          f"{infer / ideal:.2f}  (target <= {TARGET_RATIO})")  # fmt: skip
    print(f"  harness CPU per turn    {cpu_turn:8.2f} ms (target < {TARGET_CPU_MS}; "
          f"endpoint process {fig['server_cpu_s']:.2f} s)")  # fmt: skip
    print(f"  steps (s)               {steps}")
    print(f"  process wall            {fig['process_wall_s']:8.2f} s, peak RSS "
          f"{fig['rss_peak_mib']:.0f} MiB, traces {fig['traces']}, spans {fig['spans']}, "
          f"assessments {fig['assessments']}")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    print(f"{SCRIPT} --iterations {args.iterations} --concurrency {args.concurrency}   "
          f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
          f"{workload.load_average()})")  # fmt: skip
    workload.prepare_to_measure()
    server, port = loopback.start_server(args.latency, tools=True)
    jiffies = workload.cpu_jiffies()
    try:
        with tempfile.TemporaryDirectory(prefix="agenteval-inference-") as tmp:
            root = workload.shipped_root(Path(tmp))
            off = run_once(root, port, False, args)
            on = run_once(root, port, True, args)
    finally:
        loopback.stop_server(server)
    show("tracking off", off, args)
    show("tracking on", on, args)
    ratio = on["process_wall_s"] / off["process_wall_s"]
    print(f"\ntracking on / off, process wall: {ratio:.2f}x   ({workload.load_average()}, "
          f"{workload.steal_since(jiffies)})")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
