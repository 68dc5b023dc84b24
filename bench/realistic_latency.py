"""Benchmark: a whole run against its physical limit, on an endpoint with realistic latency.

Run from the repository root with the venv active:  python bench/realistic_latency.py
Options: --conversations 500  --turns 3  --concurrency 32  --median 1  --p95 4
         --configs off,default,all

N generated multi-turn conversations (scripted user, `turns` turns, one request per turn)
through the `chat` target against the loopback endpoint of bench/loopback.py, whose every
latency is drawn from a lognormal distribution with the given median and 95th percentile
(1 s and 4 s: mean 1.43 s), seeded, so each configuration meets the same sequence of draws.
A request that asks to stream is answered as server-sent events (the chat target does not
ask: its replies arrive whole after the drawn latency). Each configuration is one
`python -m agenteval run` process timed from start to exit, against a fresh endpoint:

- off: tracking off (`tracking.enabled=false`);
- default: tracking on with the default trace policy (params.yaml's `tracking.traces`);
- all: tracking on with `tracking.traces=all`.

The physical limit is what the endpoint alone imposes, from the latencies it actually drew:
max(sum of latencies / concurrency, the longest conversation's latencies in sequence). The
table shows each run's wall time against it, its CPU (the process tree), the traces logged,
and CPU seconds per traced turn: (CPU with all - CPU with default) / (turns traced by all -
by default), so the fixed costs of tracking cancel out.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback
import workload
from peer_inspect import run_timed

ROOT = workload.ROOT
SCRIPT = "python bench/realistic_latency.py"
CONFIGS = {
    "off": ["--set", "tracking.enabled=false"],
    "default": [],
    "all": ["--set", "tracking.traces=all"],
}
HEAD = """id: {sid}
name: "Generated {turns}-turn conversation {i}"
category: bench{category}
persona: casual_user
setup:
  index_documents: []
turns:
"""
TURN = """  - turn: {turn}
    objective: "Ask the opening hours"
    user_message: "Conversation {i}, question {turn}: what are the opening hours on weekdays?"
    ground_truth:
      expected_answer: "9:00 to 17:00 on weekdays"
    success_criteria: "Gives the weekday opening hours, 9:00 to 17:00."
"""


def project(folder: Path, args: argparse.Namespace, port: int) -> Path:
    """A repository-shaped folder with the generated conversations and their params."""
    root = workload.generated_root(folder, 0, tools=False)
    width = len(str(args.conversations))
    for i in range(args.conversations):
        sid = f"c{i:0{width}d}"
        turns = "".join(TURN.format(i=i, turn=t) for t in range(1, args.turns + 1))
        text = HEAD.format(sid=sid, i=i, turns=args.turns, category=i % 6) + turns
        (root / "eval" / "scenarios" / f"{sid}.yaml").write_text(text, encoding="utf-8")
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    for section, values in workload.chat_overrides(port, args.concurrency, ["library"]).items():
        params[section] = {**params[section], **values}
    params["run"]["timeout_s"] = max(float(params["run"].get("timeout_s") or 0), 120.0)
    params["tracking"]["uri"] = f"sqlite:///{folder / 'mlflow.db'}"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    workload.prepare_store(params["tracking"]["uri"])
    return root


def run_config(name: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One configuration against a fresh endpoint (the same seeded draws)."""
    server, port = loopback.start_server(0.0, tools=False, lognormal=(args.median, args.p95))
    try:
        params_path = root / "params.yaml"
        params = yaml.safe_load(params_path.read_text(encoding="utf-8"))
        params["target"]["base_url"] = f"http://127.0.0.1:{port}/v1"
        params_path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
        out = root.parent / f"run-{name}"
        cmd = [sys.executable, "-m", "agenteval", "run", "--out", str(out), "--no-progress",
               "--set", f"tracking.experiment=bench-{name}", *CONFIGS[name]]  # fmt: skip
        env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=str(ROOT))
        load = workload.load_average()
        result = run_timed(cmd, root, env, port)
        stats = loopback.fetch_stats(port)
    finally:
        loopback.stop_server(server)
    record = out / "mlflow_run.json"  # the run directory is its reports folder
    tracked = json.loads(record.read_text()) if record.is_file() else {}
    limit = max(stats["latency_s"] / args.concurrency, stats["longest_conversation_s"])
    return {"wall_s": result["wall_s"], "cpu_s": result["cpu_s"], "requests": result["requests"],
            "latency_s": stats["latency_s"], "limit_s": limit, "ratio": result["wall_s"] / limit,
            "traces": int(tracked.get("traces_logged") or 0), "load": load}  # fmt: skip


def report(rows: dict[str, dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\n{args.conversations} conversations x {args.turns} turns, concurrency "
          f"{args.concurrency}, latency lognormal median {args.median} s, p95 {args.p95} s "
          f"({os.cpu_count()} CPUs)")  # fmt: skip
    print(f"{'configuration':12s}{'wall':>9s}{'limit':>9s}{'wall/limit':>12s}{'CPU':>9s}"
          f"{'requests':>10s}{'traces':>8s}   load at start")  # fmt: skip
    for name, row in rows.items():
        print(f"{name:12s}{row['wall_s']:8.1f}s{row['limit_s']:8.1f}s{row['ratio']:11.3f}x"
              f"{row['cpu_s']:8.1f}s{row['requests']:10d}{row['traces']:8d}"
              f"   {row['load']}")  # fmt: skip
    print("limit: max(sum of drawn latencies / concurrency, longest conversation), per run")
    if "all" in rows and "default" in rows:
        extra = rows["all"]["traces"] - rows["default"]["traces"]
        if extra > 0:
            cpu = (rows["all"]["cpu_s"] - rows["default"]["cpu_s"]) / extra
            print(f"CPU per traced turn (all - default) / {extra} traces: {cpu * 1000:.1f} ms")
    if "all" in rows:
        print(f"traces: all, wall / physical limit: {rows['all']['ratio']:.3f}x (target <= 1.10)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--median", type=float, default=1.0)
    parser.add_argument("--p95", type=float, default=4.0)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    args = parser.parse_args()
    names = [n for n in args.configs.split(",") if n]
    if unknown := [n for n in names if n not in CONFIGS]:
        parser.error(f"--configs: unknown {unknown}; known: {', '.join(CONFIGS)}")
    workload.prepare_to_measure()
    rows: dict[str, dict[str, Any]] = {}
    # SIGTERM unwinds like Ctrl-C, so the temporary project goes too (this script runs in a
    # peer's venv too, without agenteval.scratch).
    signal.signal(signal.SIGTERM, lambda signum, _frame: sys.exit(128 + signum))
    with tempfile.TemporaryDirectory(prefix="agenteval-realistic-") as tmp:
        root = project(Path(tmp), args, port=0)
        for name in names:
            rows[name] = run_config(name, root, args)
            row = rows[name]
            print(f"{name}: {row['wall_s']:.1f} s, limit {row['limit_s']:.1f} s "
                  f"({row['ratio']:.2f}x), CPU {row['cpu_s']:.1f} s, {row['traces']} traces "
                  f"({row['load']})", flush=True)  # fmt: skip
    report(rows, args)
    print(f"\nrerun: {SCRIPT} --conversations {args.conversations} --turns {args.turns} "
          f"--concurrency {args.concurrency} --median {args.median} --p95 {args.p95} "
          f"--configs {args.configs}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
