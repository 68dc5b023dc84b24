"""What the end-to-end benchmarks share: a generated suite, its params, and a timed run.

A *workload* is a repository-shaped folder (agent config, empty library, manifest, N
single-turn scenario files, or the shipped scenarios) whose target is the `chat` harness on
the loopback endpoint of `bench/loopback.py`. `run_in_worker` runs the same steps as
`agenteval run` (suite, infer, judge, score, stats, report, then the MLflow track) in a fresh
process and reports each step's wall time, the process CPU and peak RSS, the files written
and the trace counts the tracking edge verified; imports happen before the clock starts.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = "bench-model"

SCENARIO = """id: {sid}
name: "Generated single-turn scenario {i}"
category: bench{category}
persona: casual_user
setup:
  index_documents: []
turns:
  - turn: 1
    objective: "Ask the opening hours"
    user_message: "Question {i}: what are the opening hours on weekdays?"
{tools}    ground_truth:
      expected_answer: "9:00 to 17:00 on weekdays"
    success_criteria: "Gives the weekday opening hours, 9:00 to 17:00."
"""


def generated_root(folder: Path, n: int, tools: bool = True) -> Path:
    """A repository-shaped folder with `n` generated single-turn scenarios (6 categories),
    each expecting one `query_documents` call unless `tools` is false."""
    root = folder / "repo"
    shutil.copytree(ROOT / "eval" / "agents" / "default", root / "eval" / "agents" / "default")
    (root / "library").mkdir(parents=True)
    (root / "eval" / "corpus").mkdir(parents=True)
    manifest = {"documents": []}
    (root / "eval" / "corpus" / "manifest.json").write_text(json.dumps(manifest))
    scenarios = root / "eval" / "scenarios"
    scenarios.mkdir(parents=True)
    width = len(str(n))
    expected = "    expected_tools: [query_documents]\n" if tools else ""
    for i in range(n):
        sid = f"s{i:0{width}d}"
        text = SCENARIO.format(sid=sid, i=i, category=i % 6, tools=expected)
        (scenarios / f"{sid}.yaml").write_text(text, encoding="utf-8")
    return root


def shipped_root(folder: Path) -> Path:
    """A copy of the repository's eval/ (56 scenarios, corpus, agent) with its pinned corpora
    fetched offline from the local mirrors (data/corpora), as `dvc repro` would lay it out."""
    from agenteval.corpus.fetch import fetch_sources

    root = folder / "repo"
    shutil.copytree(ROOT / "eval", root / "eval")
    fetch_sources(
        root / "eval" / "sources.yaml", root / "data" / "corpora", offline=True, progress=False
    )
    return root


def chat_overrides(port: int, concurrency: int, library: list[str]) -> dict[str, Any]:
    """params overrides: the chat target on the loopback endpoint, response cache off."""
    return {
        "target": {
            "kind": "chat",
            "protocol": "openai",
            "model": MODEL,
            "base_url": f"http://127.0.0.1:{port}/v1",
            "agent": "eval/agents/default",
            "library": library,
            "tool_mode": "native",
        },
        "run": {"concurrency": concurrency, "cache_dir": None, "max_attempts": 1},
    }


def workload_params(config: dict[str, Any]) -> dict[str, Any]:
    from agenteval.params import DEFAULTS, deep_merge

    override = chat_overrides(config["port"], config["concurrency"], config["library"])
    override["suite"] = {"iterations": config.get("iterations", 1)}
    override["tracking"] = {
        "enabled": bool(config["tracking"]),
        "uri": config.get("uri"),
        "experiment": config.get("experiment") or "bench",
    }
    return deep_merge(DEFAULTS, override)


def count_files(*folders: Path) -> int:
    return sum(1 for f in folders if f.is_dir() for p in f.rglob("*") if p.is_file())


def timed_steps(config: dict[str, Any]) -> dict[str, Any]:
    """Worker mode: every step of `agenteval run` timed apart, then the MLflow track."""
    import agenteval.llm.openai_compat  # noqa: F401  (imported lazily by the client factory)
    import agenteval.tracking.run as tracking_run
    from agenteval import pipeline
    from agenteval.corpus.retrieval import load_backend
    from agenteval.layout import Layout

    load_backend()  # bm25s and scipy.sparse, which the chat target imports as it is made

    root = Path(config["root"])
    layout = (
        Layout.repository(root)
        if config.get("repository")
        else Layout.run_dir(root, Path(config["out"]))
    )
    params = workload_params(config)
    steps: dict[str, float] = {}
    cpu: dict[str, float] = {}
    cpu0, wall0 = time.process_time(), time.perf_counter()

    def step(name: str, fn: Any, *args: Any) -> Any:
        start, start_cpu = time.perf_counter(), time.process_time()
        value = fn(*args)
        steps[name] = time.perf_counter() - start
        cpu[name] = time.process_time() - start_cpu
        return value

    if config.get("repository"):  # the DVC project's first stage, as `dvc repro` runs it
        from agenteval.corpus.fetch import fetch_sources

        sources, corpora = root / "eval" / "sources.yaml", root / "data" / "corpora"
        missing_ok = bool(params["fetch"]["allow_missing"])
        step("fetch", lambda: fetch_sources(sources, corpora, allow_missing=missing_ok,
                                            progress=False))  # fmt: skip
    step("suite", pipeline.step_suite, params, layout)
    inferred = step("infer", pipeline.step_infer, params, layout)
    step("judge", pipeline.step_judge, params, layout)
    step("score", pipeline.step_score, params, layout)
    step("stats", pipeline.step_stats, params, layout)
    step("report", pipeline.step_report, layout)
    tracked = step("track", tracking_run.log_evaluation, layout, params)
    if config.get("repository"):  # the track stage's DVC output, for `dvc commit`
        from stages.common import write_tracked

        write_tracked(layout.reports, params, tracked)
    statuses: dict[str, int] = {}
    for transcript in inferred.transcripts:
        statuses[transcript.status] = statuses.get(transcript.status, 0) + 1
    return {
        "steps": steps,
        "cpu": cpu,
        "wall_s": time.perf_counter() - wall0,
        "cpu_s": time.process_time() - cpu0,
        "rss_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "conversations": len(inferred.transcripts),
        "turns": sum(len(t.turns) for t in inferred.transcripts),
        "statuses": statuses,
        "files": count_files(layout.data, layout.reports),
        "traces": tracked.traces_logged if tracked else 0,
        "spans": tracked.spans_logged if tracked else 0,
        "assessments": tracked.assessments_logged if tracked else 0,
    }


def run_in_worker(mode: str, config: dict[str, Any], script: Path) -> dict[str, Any]:
    """Run `script --<mode> CONFIG` in a fresh process; its last stdout line is the result."""
    cmd = [sys.executable, str(script), f"--{mode}", json.dumps(config)]
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=config.get("root"), env=env)
    if done.returncode != 0:
        raise SystemExit(f"{mode} worker failed ({done.returncode}):\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["process_wall_s"] = time.perf_counter() - start
    return result


def prepare_store(uri: str) -> None:
    """Create the MLflow store's tables once, outside any timing (a user's store exists)."""
    code = (
        "import sys; from agenteval.tracking.store import mlflow_client, ensure_experiment\n"
        "with mlflow_client(sys.argv[1]) as c: ensure_experiment(c, 'bench', sys.argv[1])\n"
    )
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=str(ROOT))
    subprocess.run([sys.executable, "-c", code, uri], check=True, env=env, capture_output=True)


def compile_package() -> str:
    """Byte-compile agenteval's sources, and the installed modules its MLflow tracking imports,
    before anything is timed, as pip does for every package it installs (inspect_ai's
    environment got its bytecode that way). An editable install writes bytecode on first
    import, unless PYTHONDONTWRITEBYTECODE is set, as it is on this project's machines: then
    every timed process compiled the ~190 modules again, about 0.7 CPU-s per process. uv,
    which made this project's environments, installs without bytecode unless asked
    (`--compile-bytecode`), so with tracking on every timed process also compiled MLflow,
    pandas and SQLAlchemy from source: 4.4 of the 9.2 CPU-s a 500-item run's tracking took
    (cProfile, issue 45), a cost no pip-installed environment pays.
    Returns the line the benchmarks print about it."""
    import compileall

    compileall.compile_dir(ROOT / "agenteval", quiet=1)
    installed = tracking_modules()
    for path in installed:
        compileall.compile_file(path, quiet=2)
    unset = "" if os.environ.get("PYTHONDONTWRITEBYTECODE") else "un"
    return (
        f"bytecode: agenteval/ and the {len(installed)} installed modules tracking imports "
        f"compiled before timing (PYTHONDONTWRITEBYTECODE {unset}set)"
    )


def tracking_modules() -> list[str]:
    """Source files of the installed modules a tracked run imports (MLflow, its dataset API
    and SQL store, and what they pull in), listed by a child process that imports them."""
    code = (
        "import sys, mlflow, mlflow.genai.datasets, mlflow.store.tracking.sqlalchemy_store\n"
        "import agenteval.tracking.run\n"
        "print('\\n'.join(getattr(m, '__file__', None) or '' for m in list(sys.modules.values())))"
    )
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=str(ROOT))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    site = {str(Path(p).resolve()) for p in sys.path if p.endswith("-packages")}
    return sorted(
        path
        for path in set(done.stdout.split())
        if path.endswith(".py") and any(path.startswith(s) for s in site)
    )


def cpu_jiffies() -> tuple[int, int] | None:
    """(stolen, total) CPU time of the machine so far from /proc/stat; None off Linux."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    values = [int(v) for v in fields[:8]]  # user nice system idle iowait irq softirq steal
    return values[7], sum(values)


def steal_since(start: tuple[int, int] | None) -> str:
    """The share of the machine's CPU time its hypervisor took since `start`: on a shared
    host it slows every harness alike, and explains walls that differ run to run."""
    end = cpu_jiffies()
    if start is None or end is None or end[1] == start[1]:
        return "steal n/a"
    return f"steal {100 * (end[0] - start[0]) / (end[1] - start[1]):.0f}%"


def cpu_probe() -> str:
    """How fast this machine runs Python right now: the best of three runs of a fixed loop.
    The same code's figures move with it on a shared host; printed so runs compare."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        total = 0
        for i in range(2_000_000):
            total += i
        best = min(best, time.process_time() - start)
    return f"probe {best * 1000:.0f} ms per 2M-step loop"


def prepare_to_measure() -> None:
    """What every benchmark does before its first timing: compile agenteval's bytecode and
    print the machine's current speed, both on their own lines."""
    print(compile_package())
    print(f"machine: {cpu_probe()}", flush=True)


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} / {five:.2f}"


def main() -> int:
    """Worker mode: `python bench/workload.py --steps CONFIG` prints timed_steps' JSON.

    MLflow's cold import (when tracking) is timed apart, before the steps, so the track
    step measures logging; `agenteval run` overlaps that import with the run itself.
    """
    if len(sys.argv) != 3 or sys.argv[1] != "--steps":
        raise SystemExit(f"usage: {sys.argv[0]} --steps CONFIG_JSON (a worker mode)")
    from agenteval import heap

    config = json.loads(sys.argv[2])
    start = time.perf_counter()
    # The collector as `agenteval run` and the DVC stages set it (agenteval.heap).
    heap.claim()
    with heap.importing():
        if config["tracking"]:
            import mlflow  # noqa: F401
    imported = time.perf_counter() - start
    print(json.dumps(timed_steps(config) | {"mlflow_import_s": imported}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
