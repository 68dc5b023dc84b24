"""Benchmark: one `agenteval run` from two source trees, interleaved, to price one change.

Run from the repository root with the venv active:
    python bench/ab_run.py --a PATH --b PATH [--pairs 5] [--items 500]
        [--tracking [--no-traces | --traces MODE]]

A and B are two checkouts of agenteval (e.g. `git worktree add /tmp/a <commit>`): the commit
that removes a device and its parent. Both run `python -m agenteval run` (with PYTHONPATH set
to their tree) on the same generated project of N single-turn scenarios (the `chat` target
against the loopback endpoint of bench/loopback.py, 50 ms, concurrency 32, a tool call then
the answer: the `tool` workload of bench/peer_inspect.py; `--documents` puts three of
eval/corpus's documents in its library for the tool to search), in the order A, B, A, B, ...
so the machine's load falls on both alike. With `--tracking`, every conversation is traced
unless `--no-traces` (none) or `--traces MODE` (a `tracking.traces` mode, e.g. `sample`).
Prints each run, then the median and range of wall and CPU (the process tree) per tree, and
B/A of the medians.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback
import workload

ROOT = workload.ROOT


def project(
    folder: Path, items: int, port: int, tracking: tuple[bool, bool | str], documents: bool
) -> Path:
    """The generated project; `tracking`: (enabled, `tracking.traces`)."""
    root = workload.generated_root(folder, items, tools=True)
    if documents:  # the agent's query_documents then searches them (bm25s, chunking)
        for source in sorted((ROOT / "eval" / "corpus" / "documents").glob("*.md"))[:3]:
            (root / "library" / source.name).write_bytes(source.read_bytes())
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    for section, values in workload.chat_overrides(port, 32, ["library"]).items():
        params[section] = {**params[section], **values}
    params["tracking"]["enabled"], params["tracking"]["traces"] = tracking
    params["tracking"]["uri"] = f"sqlite:///{folder / 'mlflow.db'}"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    if tracking[0]:
        workload.prepare_store(params["tracking"]["uri"])
    return root


def run(tree: Path, root: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) of one `python -m agenteval run` from `tree`."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu0 = usage.ru_utime + usage.ru_stime
    env = dict(os.environ, PYTHONPATH=str(tree), MLFLOW_DISABLE_TELEMETRY="true")
    cmd = [sys.executable, "-m", "agenteval", "run", "--out", str(out), "--no-progress"]
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{tree}: exit {done.returncode}\n{done.stderr[-3000:]}")
    if "MLflow: already" in done.stdout:  # nothing was logged: not the work being priced
        raise SystemExit(f"{tree}: the run was found logged already, not logged again")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, usage.ru_utime + usage.ru_stime - cpu0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--a", type=Path, required=True)
    parser.add_argument("--b", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--tracking", action="store_true", help="tracking on (default off)")
    parser.add_argument("--no-traces", action="store_true", help="with --tracking: no traces")
    parser.add_argument("--traces", help="with --tracking: a tracking.traces mode (sample, ...)")
    parser.add_argument("--documents", action="store_true", help="3 documents in the library")
    args = parser.parse_args()
    workload.prepare_to_measure()
    server, port = loopback.start_server(0.05, tools=True)
    found: dict[str, list[tuple[float, float]]] = {"A": [], "B": []}
    try:
        with tempfile.TemporaryDirectory(prefix="agenteval-ab-") as tmp:
            tracking = (args.tracking, args.traces or not args.no_traces)
            root = project(Path(tmp), args.items, port, tracking, args.documents)
            for pair in range(args.pairs):
                for name, tree in (("A", args.a), ("B", args.b)):
                    wall, cpu = run(tree.resolve(), root, Path(tmp) / f"{name}{pair}")
                    found[name].append((wall, cpu))
                    print(f"pair {pair + 1} {name}: wall {wall:.2f} s, CPU {cpu:.2f} s "
                          f"({workload.load_average()})", flush=True)  # fmt: skip
    finally:
        loopback.stop_server(server)
    medians = {}
    for name, runs in found.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        medians[name] = (statistics.median(walls), statistics.median(cpus))
        print(f"{name} ({getattr(args, name.lower())}): wall median {medians[name][0]:.2f} s "
              f"[{min(walls):.2f}-{max(walls):.2f}], CPU median {medians[name][1]:.2f} s "
              f"[{min(cpus):.2f}-{max(cpus):.2f}]")  # fmt: skip
    print(f"B/A: wall {medians['B'][0] / medians['A'][0]:.3f}, "
          f"CPU {medians['B'][1] / medians['A'][1]:.3f}")  # fmt: skip
    flag = (" --tracking" if args.tracking else "") + (" --no-traces" if args.no_traces else "")
    flag += f" --traces {args.traces}" if args.traces else ""
    flag += " --documents" if args.documents else ""
    print(f"rerun: python bench/ab_run.py --a {args.a} --b {args.b} --pairs {args.pairs} "
          f"--items {args.items}{flag}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
