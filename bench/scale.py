"""Benchmark: how the cost of an evaluation grows with its size (100, 1,000, 10,000).

Run from the repository root with the venv active:  python bench/scale.py
Options: --sizes 100,1000,10000  --concurrency 32  --latency 0.05

For each size N a DVC project is generated in a temporary folder: this repository's
dvc.yaml, stages/, agenteval/ and agent config, N single-turn scenarios and a params.yaml
whose target is the `chat` harness on the loopback endpoint of bench/loopback.py (50 ms per
request, one tool call then the answer, so two requests per conversation; response cache
off; MLflow tracking on, into the project's own sqlite store, whose tables are created
before the clock starts). A fresh worker process runs the same steps as the stages (suite,
infer, judge, score, stats, report, track) and reports each step's wall time, its peak RSS
and the traces, spans and assessments the tracking edge counted back in the store. Then
`dvc commit -f --with-deps track` records dvc.lock as a repro would, and a no-op
`dvc repro track` is timed (the evaluation's chain, not the judge-controls stage; no stage
is always_changed, so none should run). Every figure is printed with the per-conversation
cost so that growth faster than linear is visible; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback
import workload

ROOT = workload.ROOT
SCRIPT = "python bench/scale.py"
STEPS = ("fetch", "suite", "infer", "judge", "score", "stats", "report", "track")
# Everything dvc.yaml's stages name as a dependency, besides what the workload generates.
PROJECT_FILES = ("dvc.yaml", "stages", "agenteval", "eval/sources.yaml", "eval/prompts",
                 "eval/judge_controls")  # fmt: skip


def make_project(folder: Path, n: int, port: int, concurrency: int) -> Path:
    """A git + DVC project with N generated scenarios and a loopback chat target."""
    root = workload.generated_root(folder, n)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in PROJECT_FILES:
        source, dest = ROOT / name, root / name
        if source.is_dir():
            shutil.copytree(source, dest, ignore=ignore)
        else:
            shutil.copy(source, dest)
    # The suite stage depends on the lanes file; generated scenarios all run in `full`.
    (root / "eval" / "tiers.yaml").write_text("smoke: {}\nfull: {}\nbacklog: {}\n")
    # infer's declared response cache is off here (run.cache_dir): DVC records an empty
    # folder as missing and would rerun infer, so one marker file stands in for the replies.
    cache = root / ".cache" / "agenteval" / "llm"
    cache.mkdir(parents=True)
    (cache / "README").write_text("response cache off in this benchmark\n")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    overrides = workload.chat_overrides(port, concurrency, ["library"])
    for section, values in overrides.items():
        params[section] = {**params[section], **values}
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    quiet = {"capture_output": True, "check": True, "cwd": root}
    subprocess.run(["git", "init", "-q"], **quiet)  # type: ignore[call-overload]
    subprocess.run(["dvc", "init", "-q"], **quiet)  # type: ignore[call-overload]
    subprocess.run(["dvc", "config", "core.analytics", "false"], **quiet)  # type: ignore[call-overload]
    return root


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds, done.stdout + done.stderr


def files_under(root: Path) -> int:
    skip = {".git", ".dvc", "eval", "stages", "agenteval", "library"}
    return sum(
        1
        for top in root.iterdir()
        if top.name not in skip
        for p in ([top] if top.is_file() else top.rglob("*"))
        if p.is_file()
    )


def measure(n: int, port: int, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"agenteval-scale-{n}-") as tmp:
        root = make_project(Path(tmp), n, port, args.concurrency)
        uri = f"sqlite:///{root / 'mlflow.db'}"
        workload.prepare_store(uri)
        before = files_under(root)
        requests0 = loopback.fetch_stats(port)["served"]
        config = {
            "root": str(root),
            "repository": True,
            "port": port,
            "concurrency": args.concurrency,
            "library": ["library"],
            "tracking": True,
            "uri": uri,
            "experiment": "agenteval",
        }
        fig = workload.run_in_worker("steps", config, Path(workload.__file__))
        fig["requests"] = loopback.fetch_stats(port)["served"] - requests0
        fig["files_written"] = files_under(root) - before
        commit = ["dvc", "commit", "-f", "-q", "--with-deps", "track"]
        fig["dvc_commit_s"], _ = timed(commit, root)
        fig["noop_repro_s"], output = timed(["dvc", "repro", "track"], root)
        ran = [line for line in output.splitlines() if line.startswith("Running stage")]
        fig["noop_stages_run"] = [line.split("'")[1] for line in ran]
    return fig


def print_table(results: dict[int, dict[str, Any]], args: argparse.Namespace) -> None:
    sizes = sorted(results)
    header = f"{'':28s}" + "".join(f"{n:>14,d}" for n in sizes)
    print("\n" + header)

    def row(name: str, values: list[str]) -> None:
        print(f"{name:28s}" + "".join(f"{v:>14s}" for v in values))

    row("conversations / requests", [f"{results[n]['conversations']}/{results[n]['requests']}"
                                     for n in sizes])  # fmt: skip
    row("wall, all steps (s)", [f"{results[n]['wall_s']:.2f}" for n in sizes])
    row("  per conversation (ms)", [f"{results[n]['wall_s'] / n * 1000:.2f}" for n in sizes])
    for step in STEPS:
        row(f"  {step} (s)", [f"{results[n]['steps'][step]:.2f}" for n in sizes])
        row("    per conversation (ms)", [f"{results[n]['steps'][step] / n * 1000:.2f}"
                                          for n in sizes])  # fmt: skip
    ideal = {n: results[n]["requests"] * args.latency / args.concurrency for n in sizes}
    row("  infer / ideal", [f"{results[n]['steps']['infer'] / ideal[n]:.2f}" for n in sizes])
    row("mlflow import (s)", [f"{results[n]['mlflow_import_s']:.2f}" for n in sizes])
    for kind in ("traces", "spans", "assessments"):
        row(f"{kind} counted in the store", [f"{results[n][kind]:,d}" for n in sizes])
    row("peak RSS (MiB)", [f"{results[n]['rss_peak_mib']:.0f}" for n in sizes])
    row("files written", [f"{results[n]['files_written']:,d}" for n in sizes])
    row("dvc commit -f (s)", [f"{results[n]['dvc_commit_s']:.2f}" for n in sizes])
    row("no-op dvc repro (s)", [f"{results[n]['noop_repro_s']:.2f}" for n in sizes])
    row("  stages it ran", [str(len(results[n]["noop_stages_run"])) for n in sizes])
    for n in sizes:  # named below the table: three names overflow a column
        print(f"    at {n:,d}: {', '.join(results[n]['noop_stages_run']) or 'none'}")


def print_growth(results: dict[int, dict[str, Any]]) -> None:
    """Per-conversation cost at the largest size over the one at the middle size: 1.0 is
    linear growth, above 1 grows faster than linear."""
    sizes = sorted(results)
    if len(sizes) < 2:
        return
    small, large = sizes[-2], sizes[-1]
    print(f"\ngrowth of cost per conversation from {small:,d} to {large:,d} (1.00 = linear):")
    costs = {step: results[large]["steps"][step] for step in STEPS}
    for step in STEPS:
        a = results[small]["steps"][step] / small
        b = results[large]["steps"][step] / large
        print(f"  {step:8s} {b / a if a else float('nan'):5.2f}")
    a = results[small]["noop_repro_s"] / small
    b = results[large]["noop_repro_s"] / large
    print(f"  {'no-op repro':8s} {b / a:5.2f}  (its fixed start-up dominates small sizes)")
    top = max(costs, key=lambda s: costs[s])
    print(f"largest cost at {large:,d}: {top} ({costs[top]:.1f} s of "
          f"{results[large]['wall_s']:.1f} s)")  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    workload.prepare_to_measure()
    server, port = loopback.start_server(args.latency, tools=True)
    results: dict[int, dict[str, Any]] = {}
    try:
        print(f"{SCRIPT} --sizes {args.sizes} --concurrency {args.concurrency}   "
              f"(python {sys.version.split()[0]}, {os.cpu_count()} CPUs, "
              f"{workload.load_average()})")  # fmt: skip
        for n in sizes:
            jiffies = workload.cpu_jiffies()
            results[n] = measure(n, port, args)
            fig = results[n]
            print(f"  {n:,d}: wall {fig['wall_s']:.1f} s, track {fig['steps']['track']:.2f} s, "
                  f"no-op repro {fig['noop_repro_s']:.2f} s, {workload.load_average()}, "
                  f"{workload.steal_since(jiffies)}",
                  flush=True)  # fmt: skip
    finally:
        loopback.stop_server(server)
    print_table(results, args)
    print_growth(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
