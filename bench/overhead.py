"""Benchmark: framework overhead of the chat target against a local 50 ms endpoint.

Run from the repository root with the venv active:  python bench/overhead.py
Options:
  --samples N        single-turn samples (default 2000)
  --concurrency L    run.concurrency levels, comma list or 'none' (default 1,8,32; level 1
                     takes N x 50 ms, i.e. >= 100 s at 2000 samples)
  --latency S        server delay per request (default 0.05)
  --profile          cProfile each level: own time per package, then the top functions
  --what-if W        comma list of costs to remove or swap, to price each one:
                     nofsync,noscrub,nohttp,httpx2,aiohttp (see `apply_what_ifs`)
  --bare-clients     also time httpx, httpx2 and aiohttp alone with the same request body:
                     the floor of each client library
  --no-startup       skip the start-up timings

The OpenAI-compatible endpoint of bench/loopback.py (asyncio protocol, fixed JSON reply with
usage, no tool calls) runs in its own process, so its CPU is not counted. The synthetic
suite (N scenario files, one turn each) is built once in a temporary folder and its build is
not timed. Each concurrency level runs `pipeline.step_infer` in a fresh worker process with
the response cache off (`run.cache_dir: null`); the worker reports wall time, process CPU
time and peak RSS.
Nothing reaches the network beyond 127.0.0.1; the workspace is untouched.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = "python bench/overhead.py"
sys.path.insert(0, str(Path(__file__).resolve().parent))
import loopback  # noqa: E402  (the shared endpoint)

MODEL = loopback.MODEL
STARTUP_RUNS = 5
PROFILE_LINES = 25
TARGET_RATIO, TARGET_CPU_MS, TARGET_START_S = 1.3, 2.0, 1.0


# -- the endpoint: bench/loopback.py in its own process, plain text replies -----------------
def start_server(latency: float) -> tuple[subprocess.Popen[str], int]:
    return loopback.start_server(latency, tools=False)


fetch_stats = loopback.fetch_stats


# -- the synthetic suite ------------------------------------------------------------------
SCENARIO = """id: {sid}
name: "Synthetic single-turn sample {i}"
category: bench
persona: casual_user
setup:
  index_documents: []
turns:
  - turn: 1
    objective: "Ask the opening hours"
    user_message: "Question {i}: what are the opening hours on weekdays?"
    success_criteria: "Any reply."
"""


def make_root(tmp: Path, samples: int) -> Path:
    """A repository-shaped folder: agent config, empty library, N scenarios, empty manifest."""
    root = tmp / "repo"
    shutil.copytree(ROOT / "eval" / "agents" / "default", root / "eval" / "agents" / "default")
    (root / "library").mkdir()
    (root / "manifest.json").write_text(json.dumps({"documents": []}), encoding="utf-8")
    folder = root / "scenarios"
    folder.mkdir()
    width = len(str(samples))
    for i in range(samples):
        sid = f"s{i:0{width}d}"
        (folder / f"{sid}.yaml").write_text(SCENARIO.format(sid=sid, i=i), encoding="utf-8")
    return root


def bench_params(port: int, concurrency: int) -> dict[str, Any]:
    from agenteval.params import DEFAULTS, deep_merge

    override = {
        "suite": {"scenarios": "scenarios", "manifest": "manifest.json", "iterations": 1},
        "target": {
            "kind": "chat",
            "protocol": "openai",
            "model": MODEL,
            "base_url": f"http://127.0.0.1:{port}/v1",
            "agent": "eval/agents/default",
            "library": ["library"],
            "tool_mode": "native",
        },
        # The per-endpoint client bound is run.concurrency too, so it is never below it.
        "run": {"concurrency": concurrency, "cache_dir": None, "max_attempts": 1},
    }
    return deep_merge(DEFAULTS, override)


def build_suite(config: dict[str, Any]) -> dict[str, Any]:
    """Worker mode: `step_suite` once (validation of N files); its time is reported apart."""
    from agenteval.layout import Layout
    from agenteval.pipeline import step_suite

    root = Path(config["root"])
    layout = Layout.run_dir(root, root / "suite-build")
    start = time.perf_counter()
    suite = step_suite(bench_params(config["port"], 1), layout)
    seconds = time.perf_counter() - start
    return {"suite": str(layout.suite), "items": len(suite.items), "build_s": seconds}


def in_worker(mode: str, config: dict[str, Any]) -> dict[str, Any]:
    """Run a worker mode in a fresh process: its CPU and peak RSS are its own.

    The parent imports nothing from agenteval, so the RSS high-water mark a child inherits
    across fork/exec stays small.
    """
    cmd = [sys.executable, __file__, f"--{mode}", json.dumps(config)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{mode} worker failed ({done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- what-if variants (worker process; they patch this process only, never the files) -----
WHAT_IFS = ("nofsync", "noscrub", "nohttp", "httpx2", "aiohttp")


def apply_what_ifs(names: list[str], latency: float) -> None:
    """Remove one cost at a time to measure it: the difference to a plain run is its price.

    nofsync: transcripts written without os.fsync; noscrub: no scrubber on written files;
    nohttp: the client's HTTP attempt replaced by `sleep(latency)` + the same parsed reply;
    httpx2: the OpenAI-compatible client on httpx2 (installed with openai/anthropic/mcp);
    aiohttp: its HTTP attempt on an aiohttp session (installed with mlflow), same parsing.
    """
    import agenteval.llm.openai_compat as compat
    from agenteval import fileio

    if "nofsync" in names:
        os.fsync = lambda fd: None
    if "noscrub" in names:
        fileio.install_scrubber = lambda scrubber: None
    if "httpx2" in names:
        import httpx2

        compat.httpx = httpx2  # type: ignore[attr-defined]
    if "aiohttp" in names:
        patch_aiohttp(compat)
    if "nohttp" in names:
        payload = json.loads(loopback.TEXT_REPLY.split(b"\r\n\r\n", 1)[1])

        async def send(self: Any, body: dict[str, Any]) -> Any:
            await asyncio.sleep(latency)
            return compat.parse_response(payload, where="what-if")

        compat.OpenAICompatClient.send = send  # type: ignore[method-assign]


def patch_aiohttp(compat: Any) -> None:
    import aiohttp

    sessions: dict[int, aiohttp.ClientSession] = {}

    async def send(self: Any, body: dict[str, Any]) -> Any:
        if id(self) not in sessions:
            sessions[id(self)] = aiohttp.ClientSession()
        url = f"{self.endpoint.effective_base_url}/chat/completions"
        async with sessions[id(self)].post(url, json=body) as response:
            data = await response.json()
        return compat.parse_response(data, where="what-if")

    async def aclose(self: Any) -> None:
        await self._http.aclose()
        if id(self) in sessions:
            await sessions.pop(id(self)).close()

    compat.OpenAICompatClient.send = send
    compat.OpenAICompatClient.aclose = aclose


# -- one concurrency level (worker process) -----------------------------------------------
def worker(config: dict[str, Any]) -> dict[str, Any]:
    """Run step_infer once; report wall, CPU and RSS. Imports happen before the clock starts."""
    import agenteval.llm.openai_compat  # noqa: F401  (imported lazily by the client factory)
    from agenteval.layout import Layout
    from agenteval.pipeline import step_infer

    root, out = Path(config["root"]), Path(config["out"])
    layout = Layout.run_dir(root, out)
    layout.suite.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(config["suite"], layout.suite)
    params = bench_params(config["port"], config["concurrency"])
    apply_what_ifs(config["what_if"], config["latency"])
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    profiler = None
    if config.get("profile"):
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    result = step_infer(params, layout)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    sys_s = resource.getrusage(resource.RUSAGE_SELF).ru_stime - usage0.ru_stime
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(config["profile"])
    statuses: dict[str, int] = {}
    for transcript in result.transcripts:
        statuses[transcript.status] = statuses.get(transcript.status, 0) + 1
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "sys_s": sys_s,
        "rss_before_kib": rss_before,
        "rss_peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "samples": len(result.transcripts),
        "statuses": statuses,
        "errors": sorted({t.error for t in result.transcripts if t.error})[:3],
    }


def run_level(
    args: argparse.Namespace, root: Path, suite: Path, port: int, concurrency: int
) -> dict[str, Any]:
    profile = root.parent / f"c{concurrency}.prof" if args.profile else None
    config = {
        "root": str(root),
        "out": str(root / f"run-c{concurrency}"),
        "suite": str(suite),
        "port": port,
        "concurrency": concurrency,
        "profile": str(profile) if profile else None,
        "what_if": args.what_if,
        "latency": args.latency,
    }
    before = fetch_stats(port)
    figures = in_worker("worker", config)
    after = fetch_stats(port)
    figures["model_calls"] = after["served"] - before["served"]
    figures["server_cpu_s"] = after["cpu_s"] - before["cpu_s"]
    figures["connections"] = after["connections_made"] - before["connections_made"]
    figures["concurrency"] = concurrency
    figures["profile"] = str(profile) if profile else None
    return figures


# -- bare HTTP clients (worker process): the floor a framework built on each one pays ----
CLIENTS = ("httpx", "httpx2", "aiohttp")


def request_body() -> dict[str, Any]:
    """The body the chat target sends for one sample: system prompt, tools, user message."""
    from agenteval.llm import Message, SystemMessage, UserMessage
    from agenteval.llm.openai_compat import wire_message, wire_tool
    from agenteval.targets.chat import load_tool_specs

    agent = ROOT / "eval" / "agents" / "default"
    system = (agent / "system_prompt.md").read_text(encoding="utf-8")
    messages: list[Message] = [
        SystemMessage(content=system),
        UserMessage(content="Question 1: opening hours?"),
    ]
    return {
        "model": MODEL,
        "messages": [wire_message(m) for m in messages],
        "tools": [wire_tool(t) for t in load_tool_specs(agent)],
    }


def bare_poster(name: str, url: str) -> tuple[Any, Any]:
    """(post(body) coroutine function, close coroutine function) on a client's defaults."""
    if name == "aiohttp":
        import aiohttp

        session = aiohttp.ClientSession()

        async def post_aiohttp(body: dict[str, Any]) -> Any:
            async with session.post(url, json=body) as response:
                return await response.json()

        return post_aiohttp, session.close
    import importlib

    client = importlib.import_module(name).AsyncClient(timeout=60)

    async def post_httpx(body: dict[str, Any]) -> Any:
        response = await client.post(url, json=body)
        return response.json()

    return post_httpx, client.aclose


async def bare_run(config: dict[str, Any]) -> dict[str, Any]:
    url = f"http://127.0.0.1:{config['port']}/v1/chat/completions"
    post, close = bare_poster(config["client"], url)
    body = request_body()
    semaphore = asyncio.Semaphore(config["concurrency"])

    async def one() -> None:
        async with semaphore:
            await post(body)

    await post(body)  # first connection and lazy imports, outside the clock
    wall0, cpu0 = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one() for _ in range(config["samples"])))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await close()
    return {"wall_s": wall, "cpu_s": cpu}


def bare_client(config: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(bare_run(config))


def run_bare_clients(args: argparse.Namespace, port: int, wanted: list[int]) -> None:
    for c in wanted:
        for name in CLIENTS:
            config = {"client": name, "port": port, "concurrency": c, "samples": args.samples}
            before = fetch_stats(port)
            fig = in_worker("bare", config)
            opened = fetch_stats(port)["connections_made"] - before["connections_made"]
            ratio = fig["wall_s"] / (args.samples * args.latency / c)
            print(f"bare {name:8s} c={c:<3d} wall/ideal {ratio:5.2f}, CPU/request "
                  f"{fig['cpu_s'] / args.samples * 1000:6.3f} ms, "
                  f"{opened} TCP connections")  # fmt: skip
    print(f"  rerun: {SCRIPT} --samples {args.samples} --concurrency "
          f"{','.join(map(str, wanted))} --bare-clients --no-startup")  # fmt: skip


# -- start-up -----------------------------------------------------------------------------
IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import agenteval.engine, agenteval.targets.chat; "
    "print(time.perf_counter() - t)"
)


def startup_figures() -> dict[str, float]:
    """Medians: `agenteval --help` wall time, and importing the engine + chat target."""
    agenteval = shutil.which("agenteval") or str(Path(sys.executable).parent / "agenteval")
    helps, imports, processes = [], [], []
    for _ in range(STARTUP_RUNS):
        start = time.perf_counter()
        subprocess.run([agenteval, "--help"], check=True, capture_output=True, cwd=ROOT)
        helps.append(time.perf_counter() - start)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-c", IMPORT_SNIPPET],
            check=True,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        processes.append(time.perf_counter() - start)
        imports.append(float(done.stdout.strip()))
    return {
        "help_s": statistics.median(helps),
        "help_max_s": max(helps),
        "import_s": statistics.median(imports),
        "import_process_s": statistics.median(processes),
    }


# -- report -------------------------------------------------------------------------------
def print_level(fig: dict[str, Any], args: argparse.Namespace) -> bool:
    n, c = fig["samples"], fig["concurrency"]
    ideal = n * args.latency / c
    ratio = fig["wall_s"] / ideal
    cpu_ms = fig["cpu_s"] / n * 1000
    calls = 0 if "nohttp" in args.what_if else n
    ok = bool(fig["statuses"] == {"COMPLETED": n} and fig["model_calls"] == calls)
    what_if = f" [what-if: {','.join(args.what_if)}]" if args.what_if else ""
    print(f"\nconcurrency {c}{what_if}: {n} samples, {fig['model_calls']} model calls "
          f"to the server, {fig['statuses']}")  # fmt: skip
    if not ok:
        print(f"  WARNING: not every sample completed with one model call: {fig['errors']}")
    ratio_note = f"target <= {TARGET_RATIO}" if c == 32 else "target applies at 32"
    print(f"  wall (inference)       {fig['wall_s']:8.2f} s")
    print(f"  ideal N*lat/conc       {ideal:8.2f} s")
    print(f"  ratio wall/ideal       {ratio:8.2f}     ({ratio_note})")
    sys_ms = fig["sys_s"] / n * 1000
    print(f"  framework CPU/sample   {cpu_ms:8.3f} ms  (target < {TARGET_CPU_MS} ms; "
          f"of which system {sys_ms:.3f} ms)")  # fmt: skip
    print(f"  peak RSS               {fig['rss_peak_kib'] / 1024:8.1f} MiB "
          f"(after imports {fig['rss_before_kib'] / 1024:.1f} MiB)")  # fmt: skip
    print(f"  server CPU             {fig['server_cpu_s']:8.2f} s, "
          f"{fig['connections']} TCP connections opened")  # fmt: skip
    flag = f" --what-if {','.join(args.what_if)}" if args.what_if else ""
    print(f"  rerun: {SCRIPT} --samples {n} --concurrency {c} --no-startup{flag}")
    return ok


def print_startup(fig: dict[str, float]) -> None:
    print(f"\nagenteval --help        {fig['help_s']:8.3f} s median, max {fig['help_max_s']:.3f} s "
          f"over {STARTUP_RUNS} runs (target < {TARGET_START_S} s)")  # fmt: skip
    print(f"import engine + chat    {fig['import_s']:8.3f} s median in-process; "
          f"{fig['import_process_s']:.3f} s with interpreter start")  # fmt: skip
    print(f"  rerun: {SCRIPT} --concurrency none")


def package_of(filename: str, function: str) -> str:
    if filename == "~":
        idle = "select.epoll" in function or "select.select" in function
        return "idle: event loop waiting for I/O" if idle else f"builtin {function}"
    parts = Path(filename).parts
    for anchor in ("site-packages", "agenteval"):
        if anchor in parts:
            rest = parts[parts.index(anchor) + 1 :]
            return f"agenteval/{'/'.join(rest)}" if anchor == "agenteval" else rest[0]
    return f"stdlib {parts[-1]}" if "python3" in filename else filename


def print_profile(path: Path) -> None:
    """Own time (tottime) summed per package or agenteval module, then the top functions."""
    import pstats

    stats = pstats.Stats(str(path))
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    by_package: dict[str, float] = {}
    for (filename, _line, function), (_cc, _nc, tottime, _ct, _callers) in raw.items():
        key = package_of(filename, function)
        by_package[key] = by_package.get(key, 0.0) + tottime
    total = sum(by_package.values())
    print(f"\n  cProfile own time by package ({path.name}, {total:.2f} s under the profiler):")
    for key, seconds in sorted(by_package.items(), key=lambda kv: -kv[1])[:PROFILE_LINES]:
        print(f"    {seconds:7.2f} s {100 * seconds / total:5.1f} %  {key}")
    stats.strip_dirs()
    for key in ("tottime", "cumulative"):
        print(f"\n  cProfile top {PROFILE_LINES} by {key} ({path.name}):")
        stats.sort_stats(key).print_stats(PROFILE_LINES)


# -- main ---------------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2000)
    parser.add_argument("--concurrency", default="1,8,32", help="comma list, or 'none'")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument(
        "--what-if",
        type=lambda v: [w for w in v.split(",") if w],
        default=[],
        help=f"comma list of costs to remove, to price them: {', '.join(WHAT_IFS)}",
    )
    parser.add_argument("--no-startup", action="store_true")
    parser.add_argument(
        "--bare-clients",
        action="store_true",
        help=f"also time {', '.join(CLIENTS)} alone (same body, no framework) at each level",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--build", help=argparse.SUPPRESS)
    parser.add_argument("--bare", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def levels(spec: str) -> list[int]:
    if spec.strip().lower() in ("", "none", "0"):
        return []
    return [int(part) for part in spec.split(",") if part.strip()]


def run_levels(args: argparse.Namespace, wanted: list[int]) -> bool:
    ok = True
    server, port = start_server(args.latency)
    try:
        with tempfile.TemporaryDirectory(prefix="agenteval-overhead-") as tmp:
            root = make_root(Path(tmp), args.samples)
            built = in_worker("build", {"root": str(root), "port": port})
            print(f"suite of {built['items']} scenarios built in {built['build_s']:.2f} s "
                  f"(not timed below); server latency {args.latency * 1000:.0f} ms, "
                  f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")  # fmt: skip
            if args.bare_clients:
                print(f"\nbare clients, {args.samples} requests each, no framework:")
                run_bare_clients(args, port, wanted)
            for c in wanted:
                fig = run_level(args, root, Path(built["suite"]), port, c)
                ok = print_level(fig, args) and ok
                if fig["profile"]:
                    print_profile(Path(fig["profile"]))
    finally:
        server.terminate()
        server.wait()
    return ok


def run_benchmark(args: argparse.Namespace) -> bool:
    unknown = set(args.what_if) - set(WHAT_IFS)
    if unknown:
        raise SystemExit(f"--what-if: unknown {sorted(unknown)}; choose from {WHAT_IFS}")
    wanted = levels(args.concurrency)
    ok = run_levels(args, wanted) if wanted else True
    if not args.no_startup:
        print_startup(startup_figures())
    return ok


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    modes = {"worker": worker, "build": build_suite, "bare": bare_client}
    for name, mode in modes.items():
        if getattr(args, name):
            sys.path.insert(0, str(ROOT))
            print(json.dumps(mode(json.loads(getattr(args, name)))))
            return 0
    return 0 if run_benchmark(args) else 1


if __name__ == "__main__":
    sys.exit(main())
