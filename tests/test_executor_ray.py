"""`run.executor: ray` on a real local Ray instance: chaos, limits across workers, budgets.

The chaos test kills 20% of the Ray worker processes (a real SIGKILL of their PIDs) while
they run units, and the run still ends with every unit written exactly once and a
scorecard byte-identical to an undisturbed Ray run and to the same run in one process.
One Ray instance (WORKERS CPUs, so WORKERS worker processes) serves the whole module.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers.common import Reply
from servers.openai_server import OpenAIServer
from services import unavailable

from agenteval.layout import Layout
from agenteval.params import DEFAULTS, ParamsError, deep_merge, load_params
from agenteval.pipeline import InferResult, step_infer, step_judge, step_score, step_suite

ROOT = Path(__file__).resolve().parents[1]
WORKERS = 5  # a fifth of them is one process
TASK_TITLE = "ray::agenteval-unit"  # a worker's process title while it runs a unit


@pytest.fixture(scope="module")
def ray_instance() -> Iterator[Any]:
    try:
        import ray
    except ImportError:
        unavailable("ray not installed: pip install -e '.[ray]'")
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(address="local", num_cpus=WORKERS, include_dashboard=False, logging_level="WARNING")
    try:
        yield ray
    finally:
        ray.shutdown()


def params_for(executor: str, **sections: Any) -> dict[str, Any]:
    base = {"run": {"executor": executor}, "tracking": {"enabled": False}}
    return deep_merge(deep_merge(DEFAULTS, base), sections)


def evaluate(params: dict[str, Any], out: Path) -> tuple[InferResult, Layout]:
    layout = Layout.run_dir(ROOT, out)
    step_suite(params, layout)
    inferred = step_infer(params, layout)
    step_judge(params, layout)
    step_score(params, layout)
    return inferred, layout


# ----- the worker processes of this test's Ray instance -------------------------------------


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, process title) of a live process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
    except (OSError, UnicodeDecodeError):
        return None
    return int(stat.rsplit(")", 1)[1].split()[1]), title


def workers() -> dict[int, str]:
    """Ray worker processes started under this test process (never another user's Ray):
    idle or running a unit; the coordinator and limiter actors are not workers."""
    table = {int(p): _stat(int(p)) for p in os.listdir("/proc") if p.isdigit()}
    me = os.getpid()

    def mine(pid: int) -> bool:
        for _ in range(20):
            entry = table.get(pid)
            if entry is None or entry[0] <= 1:
                return False
            if entry[0] == me:
                return True
            pid = entry[0]
        return False

    return {
        pid: entry[1]
        for pid, entry in table.items()
        if entry and entry[1] in ("ray::IDLE", TASK_TITLE) and mine(pid)
    }


class Killer(threading.Thread):
    """Once `after` transcripts are in place, SIGKILLs a fifth of the workers, choosing
    processes seen running a unit on three polls in a row. Where in its attempt a unit is cut
    does not matter to the count: the retry carries Ray's attempt number (once CI killed a
    worker still unpacking a task's arguments, and a count of our own missed that attempt)."""

    def __init__(self, transcripts: Path, after: int) -> None:
        super().__init__(daemon=True)
        self.transcripts, self.after = transcripts, after
        self.killed: list[int] = []
        self.pool = 0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set() and self._done() < self.after:
            time.sleep(0.005)
        busy_before: set[int] = set()
        busy_twice: set[int] = set()
        while not self.stop.is_set():
            found = workers()
            busy = {pid for pid, title in found.items() if title == TASK_TITLE}
            victims = sorted(busy & busy_twice)
            want = max(1, round(0.2 * len(found)))
            if len(victims) >= want:
                self.pool = len(found)
                for pid in victims[:want]:
                    os.kill(pid, signal.SIGKILL)
                    self.killed.append(pid)
                return
            busy_twice, busy_before = busy & busy_before, busy
            time.sleep(0.01)

    def _done(self) -> int:
        return sum(1 for _ in self.transcripts.rglob("*.json")) if self.transcripts.is_dir() else 0


def test_killing_a_fifth_of_the_workers_changes_no_byte_of_the_scorecard(
    ray_instance: Any, tmp_path: Path
) -> None:
    suite = {"suite": {"iterations": 3}}  # 56 scenarios x 3 = 168 units
    local, local_layout = evaluate(params_for("local", **suite), tmp_path / "local")
    calm, calm_layout = evaluate(params_for("ray", **suite), tmp_path / "calm")
    units = {key for key in local.writes or {}}
    assert len(units) == 168

    killer = Killer(tmp_path / "chaos/data/transcripts", after=len(units) // 5)
    killer.start()
    try:
        chaos, chaos_layout = evaluate(params_for("ray", **suite), tmp_path / "chaos")
    finally:
        killer.stop.set()
        killer.join()

    print("CHAOS", killer.pool, killer.killed, chaos.execution)
    assert killer.killed and len(killer.killed) == max(1, round(0.2 * killer.pool)), killer.pool
    assert killer.pool >= WORKERS - 1  # the pool was (nearly) whole when the kill came
    assert all(not Path(f"/proc/{pid}").exists() for pid in killer.killed)
    # The killed workers' units ran again (Ray's task retries) ...
    assert chaos.execution is not None and chaos.execution.retried, chaos.execution
    # ... and nothing was lost or written twice: each unit's transcript once, none missing.
    for result in (local, calm, chaos):
        assert result.writes is not None and set(result.writes) == units
        assert set(result.writes.values()) == {1}
        assert result.stop_reason is None
    files = sorted(
        p.relative_to(chaos_layout.transcripts) for p in chaos_layout.transcripts.rglob("*")
    )
    assert len([f for f in files if f.suffix == ".json"]) == len(units) and all(
        not f.name.startswith(".") for f in files
    )
    reference = local_layout.scorecard.read_bytes()
    assert calm_layout.scorecard.read_bytes() == reference
    assert chaos_layout.scorecard.read_bytes() == reference
    for path in local_layout.transcripts.rglob("*.json"):
        rel = path.relative_to(local_layout.transcripts)
        assert (chaos_layout.transcripts / rel).read_bytes() == path.read_bytes(), rel
    assert calm.execution is not None and not calm.execution.retried
    assert calm.execution.workers == WORKERS


def test_endpoint_limit_holds_across_worker_processes(ray_instance: Any, tmp_path: Path) -> None:
    """run.concurrency: 2 with five workers: the server never sees a third request in
    flight, and does see two (so the units did run in several processes at once)."""
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents.", delay=0.15)) as server:
        params = params_for(
            "ray",
            suite={"categories": ["personality"]},
            target={"kind": "chat", "protocol": "openai", "base_url": server.base_url,
                    "model": "limited-model"},
            run={"concurrency": 2, "cache_dir": None, "max_attempts": 1},
        )  # fmt: skip
        result, _ = evaluate(params, tmp_path / "run")
        sent = server.request_count
    assert result.execution is not None and result.execution.workers >= 3
    assert sent >= 6 and all(t.status == "COMPLETED" for t in result.transcripts)
    assert server.max_in_flight == 2


def test_run_budget_is_one_total_for_every_worker(ray_instance: Any, tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents.", delay=0.05)) as server:
        params = params_for(
            "ray",
            suite={"categories": ["personality"], "iterations": 3},  # 18 units
            target={"kind": "chat", "protocol": "openai", "base_url": server.base_url,
                    "model": "priced-model"},
            run={"concurrency": 1, "cache_dir": None, "max_attempts": 1, "budget_usd_total": 0.05,
                 "prices": {"priced-model": {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0}}},
        )  # fmt: skip
        result, _ = evaluate(params, tmp_path / "run")
        sent = server.request_count
    statuses = [t.status for t in result.transcripts]
    assert result.stop_reason is not None and "run budget $0.05" in result.stop_reason
    assert "BUDGET_EXCEEDED" in statuses and "NOT_RUN" in statuses
    # $0.019 a call: the third crosses $0.05 in the shared total. Requests already waiting
    # for the endpoint's one slot when it did (one per other unit in flight) still go out.
    assert 3 <= sent <= 3 + WORKERS - 1, sent


def test_a_killed_workers_slot_returns_to_the_pool(ray_instance: Any, tmp_path: Path) -> None:
    from agenteval.executors.coordinator import RunCoordinator

    ray = ray_instance
    coordinator = ray.remote(num_cpus=0)(RunCoordinator).remote(1.0)  # 1 s leases
    key = ("openai", "http://127.0.0.1:9/v1", "m")
    marker = tmp_path / "holder.pid"

    def hold_a_slot(coordinator: Any, key: tuple[str, str, str], marker: str) -> None:
        # Nested, so Ray ships it by value (workers cannot import this test module).
        from agenteval.executors.coordinator import RaySlots

        async def hold() -> None:
            async with RaySlots(coordinator, renew_s=0.2).slot(key, 1):
                Path(marker).write_text(str(os.getpid()))
                await asyncio.sleep(120)

        asyncio.run(hold())

    held = ray.remote(hold_a_slot).options(max_retries=0).remote(coordinator, key, str(marker))
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marker.exists(), ray.get(held, timeout=1)
    limiter = ray.get(coordinator.limiter.remote(key, 1))
    time.sleep(1.6)  # longer than a lease: the live holder renews it
    assert ray.get(limiter.stats.remote())["held"] == 1
    os.kill(int(marker.read_text()), signal.SIGKILL)
    started = time.monotonic()
    lease = ray.get(limiter.acquire.remote(), timeout=10)
    waited = time.monotonic() - started
    stats = ray.get(limiter.stats.remote())
    assert lease and stats["reclaimed"] == 1 and stats["peak"] == 1, stats
    assert waited < 5, waited
    ray.kill(coordinator)


def test_an_attempt_killed_before_it_starts_is_counted(ray_instance: Any, tmp_path: Path) -> None:
    """A worker killed while it unpacks a unit's arguments never reaches the unit's code;
    the retry still counts it, from Ray's attempt number."""
    from agenteval.executors.coordinator import RunCoordinator

    ray = ray_instance
    coordinator = ray.remote(num_cpus=0)(RunCoordinator).remote()
    marker = tmp_path / "unpacked-once"

    def unpack(marker: str) -> str:
        if not Path(marker).exists():  # the first attempt dies here, inside Ray's unpickling
            Path(marker).touch()
            os.kill(os.getpid(), signal.SIGKILL)
        return marker

    class DiesOnFirstUnpack:  # local, so Ray ships it by value
        def __reduce__(self) -> tuple[Any, tuple[str]]:
            return unpack, (str(marker),)

    def start(coordinator: Any, _argument: str) -> int:
        import ray

        from agenteval.executors.ray_worker import ray_attempt

        return int(ray.get(coordinator.begin.remote("u/0/0", "n", os.getpid(), ray_attempt(ray))))

    task = ray.remote(start).options(max_retries=2)
    assert ray.get(task.remote(coordinator, DiesOnFirstUnpack()), timeout=120) == 2
    assert ray.get(coordinator.report.remote())["attempts"] == {"u/0/0": 2}
    ray.kill(coordinator)


def test_the_command_line_starts_its_own_ray_and_matches_a_local_run(
    ray_instance: Any, tmp_path: Path
) -> None:
    """`agenteval run --set run.executor=ray` in a fresh process starts (and stops) a Ray
    instance of its own; its reports equal the in-process run's."""

    def run(out: Path, *sets: str) -> str:
        args = [sys.executable, "-m", "agenteval", "run", "--no-progress", "--out", str(out),
                "--tier", "smoke", "--set", "tracking.enabled=false"]  # fmt: skip
        for item in sets:
            args += ["--set", item]
        env = dict(os.environ, PYTHONUTF8="1")
        done = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    shown = run(tmp_path / "ray", "run.executor=ray", "run.ray.num_cpus=2")
    run(tmp_path / "local")
    assert "ray: units ran in 2 worker process(es)" in shown
    for name in ("scorecard.json", "metrics.json", "summary.md"):
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()
    saved = json.loads((tmp_path / "ray/params.json").read_text())
    assert saved["run"]["executor"] == "ray"


def test_ray_missing_is_refused_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a)
    )
    with pytest.raises(ParamsError, match=r"--set run.executor: ray is not installed"):
        load_params(ROOT / "params.yaml", ["run.executor=ray"])
