"""Benchmark: `dvc repro` on the offline default — full run at 1 and 3 iterations, and a no-op.

Run from the repository root with the venv active:  python bench/repro.py
It copies the repository to a temporary folder so the workspace is untouched.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
IGNORE = shutil.ignore_patterns(
    ".venv", ".ci-venv", "data", "runs", "mlflow.db*", ".git", ".*cache*", "__pycache__", ".cache"
)


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - start


def set_iterations(repo: Path, n: int) -> None:
    path = repo / "params.yaml"
    params = yaml.safe_load(path.read_text())
    params["suite"]["iterations"] = n
    path.write_text(yaml.safe_dump(params, sort_keys=False))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(ROOT, repo, ignore=IGNORE)
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        rows = []
        rows.append(("full dvc repro, iterations=1", timed(["dvc", "repro", "-f"], repo)))
        rows.append(("no-op dvc repro", timed(["dvc", "repro"], repo)))
        set_iterations(repo, 3)
        rows.append(("dvc repro after iterations=3", timed(["dvc", "repro"], repo)))
    for name, seconds in rows:
        print(f"{name:32s} {seconds:7.2f} s")
    print(f"rerun: python bench/repro.py   (python {sys.version.split()[0]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
