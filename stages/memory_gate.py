"""Stage `gate` of pipelines/memory: reports/results.json against memory.baseline, check by
check -> reports/gate.json; exits 1 when a check that passed in the baseline fails now."""

from __future__ import annotations

import sys

from agenteval.benchmarks.memory.gate import GateRefused, gate
from agenteval.benchmarks.memory.run import load_results
from agenteval.fileio import write_json
from stages.common import root, run_stage, variant_dir, variant_params

NAME = "memory"


def main() -> int:
    params = variant_params(NAME)
    reports = variant_dir(NAME) / "reports"
    baseline = params["memory"].get("baseline")
    if not baseline:
        write_json(reports / "gate.json", {"gated": False})
        print("gate: memory.baseline is null; nothing gated")
        return 0
    try:
        current = load_results(reports / "results.json")
        verdict = gate(current, load_results(root() / str(baseline)))
    except GateRefused as exc:
        print(f"gate: refused: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"gate: {exc}", file=sys.stderr)
        return 2
    write_json(
        reports / "gate.json", {"gated": True, "baseline": str(baseline), **verdict.record()}
    )
    for line in verdict.lines(current):
        print(line)
    return 0 if verdict.passed else 1


if __name__ == "__main__":
    run_stage(main)
