"""Benchmark: how long `agenteval --help` takes to answer (heavy modules are imported lazily).

Run from the repository root with the venv active:  python bench/cli_startup.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

RUNS = 10


def main() -> int:
    samples = []
    for _ in range(RUNS):
        start = time.perf_counter()
        subprocess.run(["agenteval", "--help"], check=True, capture_output=True)
        samples.append(time.perf_counter() - start)
    print(f"agenteval --help: median {statistics.median(samples):.3f} s, "
          f"max {max(samples):.3f} s over {RUNS} runs (target < 0.5 s)")  # fmt: skip
    print("rerun: python bench/cli_startup.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
