"""`run.executor: local` against `run.executor: ray` on the same suite, printed side by side.

    python bench/ray.py [--workload builtin,chat] [--iterations 3] [--scenarios 200]
                        [--latency 0.2] [--concurrency 16] [--cpus 2]

Two workloads, each run by both executors in this process (suite then infer; the judge and
the rest are the same code whichever executor ran the units):

* `builtin`: the shipped suite (56 scenarios) x `--iterations` with the offline default
  agent: CPU-bound Python, so Ray's worker processes can use cores one event loop cannot.
* `chat`: `--scenarios` generated single-turn scenarios through the `chat` target on the
  loopback endpoint of `bench/loopback.py` (`--latency` s a request, two requests a unit,
  `run.concurrency` = `--concurrency` held across workers by the limiter actor): I/O-bound,
  so the figure is Ray's cost per unit against an event loop that already overlaps waits.

Ray is a local instance of `--cpus` CPUs started before the clock (its start-up is printed
apart); units reserve `run.ray.cpus_per_unit` = cpus / concurrency for `chat` (as many
units in flight as the local run) and 1 for `builtin`. Each pair's transcripts are compared
as stored (without wall-clock fields). Prints wall, units per second and ray/local for each
workload, for new worker processes and again for warm ones.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# This file is bench/ray.py: with its folder first on sys.path `import ray` would find it.
sys.path = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
import ray  # noqa: E402

sys.path.append(str(ROOT / "bench"))

from loopback import start_server, stop_server  # noqa: E402
from workload import chat_overrides, generated_root, load_average  # noqa: E402

from agenteval.engine import untimed  # noqa: E402
from agenteval.fileio import read_json  # noqa: E402
from agenteval.layout import Layout  # noqa: E402
from agenteval.params import DEFAULTS, deep_merge  # noqa: E402
from agenteval.pipeline import step_infer, step_suite  # noqa: E402
from agenteval.schema.transcript import Transcript  # noqa: E402


def timed_infer(root: Path, out: Path, params: dict[str, Any]) -> dict[str, Any]:
    layout = Layout.run_dir(root, out)
    step_suite(params, layout)
    started = time.perf_counter()
    result = step_infer(params, layout)
    wall = time.perf_counter() - started
    completed = sum(t.status == "COMPLETED" for t in result.transcripts)
    execution = result.execution.line() if result.execution else "?"
    return {
        "wall": wall,
        "units": len(result.transcripts),
        "completed": completed,
        "execution": execution,
        "files": {
            p.relative_to(layout.transcripts): comparable(p)
            for p in layout.transcripts.rglob("*.json")
        },
    }


def comparable(path: Path) -> str:
    """A transcript without its wall-clock fields (a remote agent's latencies are timed)."""
    transcript = Transcript.model_validate(read_json(path))
    untimed(transcript)
    return transcript.model_dump_json()


def run_pair(
    name: str, root: Path, params: dict[str, Any], cpus_per_unit: float, folder: Path
) -> None:
    local = timed_infer(root, folder / f"{name}-local", deep_merge(params, {}))
    ray_params = deep_merge(
        params, {"run": {"executor": "ray", "ray": {"cpus_per_unit": cpus_per_unit}}}
    )
    cold = timed_infer(root, folder / f"{name}-ray", ray_params)
    # The same run again on the same instance: its worker processes exist and have imported
    # agenteval (what a long-lived cluster looks like); the agent is built afresh.
    remote = timed_infer(root, folder / f"{name}-ray-warm", ray_params)
    same = local["files"] == cold["files"] == remote["files"]
    print(f"\n[{name}] {local['units']} units, {load_average()}")
    for label, fig in (("local", local), ("ray, new workers", cold), ("ray, warm", remote)):
        rate = fig["units"] / fig["wall"]
        print(
            f"  {label:16}  wall {fig['wall']:7.2f} s  {rate:7.1f} units/s  "
            f"completed {fig['completed']}/{fig['units']}  ({fig['execution']})"
        )
    print(
        f"  ray/local wall: {cold['wall'] / local['wall']:.2f} x (new workers), "
        f"{remote['wall'] / local['wall']:.2f} x (warm); transcripts identical: {same}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workload", default="builtin,chat")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--scenarios", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    chosen = args.workload.split(",")
    print(f"rerun: python bench/ray.py {' '.join(sys.argv[1:])}".rstrip())

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    started = time.perf_counter()
    ray.init(address="local", num_cpus=args.cpus, include_dashboard=False, logging_level="ERROR")
    print(f"ray.init(num_cpus={args.cpus}): {time.perf_counter() - started:.2f} s (not counted)")
    base = deep_merge(DEFAULTS, {"tracking": {"enabled": False}})
    try:
        with tempfile.TemporaryDirectory(prefix="agenteval-bench-ray-") as tmp:
            folder = Path(tmp)
            if "builtin" in chosen:
                params = deep_merge(base, {"suite": {"iterations": args.iterations}})
                run_pair("builtin", ROOT, params, 1.0, folder)
            if "chat" in chosen:
                proc, port = start_server(args.latency, tools=True)
                try:
                    root = generated_root(folder, args.scenarios)
                    params = deep_merge(base, chat_overrides(port, args.concurrency, []))
                    per_unit = args.cpus / args.concurrency
                    run_pair("chat", root, params, per_unit, folder)
                finally:
                    stop_server(proc)
    finally:
        ray.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
