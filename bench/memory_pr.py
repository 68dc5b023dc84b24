"""The memory benchmark's pr suite: how long it takes, in process and as users run it.

Prints (never asserts; the machine is shared, so a figure is evidence, not a test):
- the pr suite in this process, `--repeats` times after one warm-up (median and max);
- `agenteval memory run` in a fresh process (start-up included), `--repeats` times;
- with `--repro`, `dvc repro pipelines/memory/dvc.yaml` in a temporary copy of the
  repository (run, gate and track, a fresh MLflow store), then a no-op repro.

    python bench/memory_pr.py [--repeats 5] [--repro]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agenteval.benchmarks.memory.run import run_suite  # noqa: E402
from agenteval.params import load_params  # noqa: E402

IGNORE = shutil.ignore_patterns(
    ".venv",
    ".ci-venv",
    "data",
    "runs",
    "mlflow.db*",
    "mlartifacts",
    ".git",
    ".*cache*",
    "__pycache__",
    "reports",
)


def timed(step: object) -> float:
    started = time.perf_counter()
    step()  # type: ignore[operator]
    return time.perf_counter() - started


def show(name: str, times: list[float]) -> None:
    print(
        f"{name}: median {statistics.median(times):.2f}s, max {max(times):.2f}s over {len(times)}"
    )


def env_for(root: Path) -> dict[str, str]:
    env = dict(
        os.environ, PYTHONPATH=str(root), DVC_NO_ANALYTICS="1", MLFLOW_DISABLE_TELEMETRY="true"
    )
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def repro() -> None:
    with tempfile.TemporaryDirectory(prefix="memory-repro-") as folder:
        repo = Path(folder) / "repo"
        shutil.copytree(ROOT, repo, ignore=IGNORE)
        git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
        for cmd in (["git", "init", "-q"], [*git, "add", "-A"], [*git, "commit", "-qm", "copy"]):
            subprocess.run(cmd, cwd=repo, check=True, capture_output=True)
        for label in ("dvc repro (fresh copy, fresh MLflow store)", "dvc repro (nothing changed)"):
            started = time.perf_counter()
            done = subprocess.run(
                ["dvc", "repro", "pipelines/memory/dvc.yaml"],
                cwd=repo,
                env=env_for(repo),
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - started
            gate = next((ln for ln in done.stdout.splitlines() if ln.startswith("gate:")), "")
            print(f"{label}: {wall:.1f}s, exit {done.returncode} {gate}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--repro", action="store_true")
    args = parser.parse_args()
    os.chdir(ROOT)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    params = load_params(ROOT / "pipelines/memory/params.yaml", ["tracking.enabled=false"])
    results = run_suite(params, ROOT, "pr")
    c = results.counts
    print(
        f"pr suite: {c['scenarios']} scenarios, {c['chats']} chats, {c['probes']} probes, "
        f"{c['checks']} checks ({c['passed']} passed)"
    )
    show(
        "pr suite in process",
        [timed(lambda: run_suite(params, ROOT, "pr")) for _ in range(args.repeats)],
    )
    with tempfile.TemporaryDirectory() as out:
        command = [sys.executable, "-m", "agenteval", "memory", "run", "--out", out]
        runs = [
            timed(
                lambda: subprocess.run(
                    command, cwd=ROOT, env=env_for(ROOT), check=True, capture_output=True
                )
            )
            for _ in range(args.repeats)
        ]
    show("agenteval memory run (fresh process)", runs)
    if args.repro:
        repro()
    print("rerun: python bench/memory_pr.py" + (" --repro" if args.repro else ""))


if __name__ == "__main__":
    main()
