"""Stage `run` of pipelines/memory: every scenario through the memory under test ->
reports/results.json, report.md (worst first) and metrics.json."""

from __future__ import annotations

import sys
import time

from agenteval.benchmarks.memory.run import coverage, run_suite, write_outputs
from agenteval.benchmarks.memory.scenarios import ScenarioError
from agenteval.llm import QuotaExhausted
from agenteval.memory.base import MemoryServerError
from stages.common import coverage_status, root, run_stage, variant_dir, variant_params

NAME = "memory"


def main() -> int:
    params = variant_params(NAME)
    section = params["memory"]
    started = time.perf_counter()
    try:
        results = run_suite(params, root(), str(section["suite"]), section["ids"])
    except ScenarioError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        return 2
    except QuotaExhausted as exc:
        print(f"run: stopped: {exc}", file=sys.stderr)
        return 3
    except MemoryServerError as exc:
        print(f"run: the memory server failed: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"run: {exc}", file=sys.stderr)
        return 2
    write_outputs(results, variant_dir(NAME) / "reports")
    c = results.counts
    print(
        f"run: {c['passed']}/{c['checks']} checks passed, {c['failed']} failed, "
        f"{c['unmeasured']} unmeasured ({time.perf_counter() - started:.1f}s)"
    )
    return coverage_status("run", coverage(results))


if __name__ == "__main__":
    run_stage(main)
