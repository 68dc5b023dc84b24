"""Stage `gate` of pipelines/code_retrieval: the run against the committed baseline
(eval/baselines/code_retrieval/pr.json); exit 1 when the gate fails, 3 when not comparable."""

from __future__ import annotations

import sys

from stages.common import root, run_stage, variant_layout

BASELINE = "eval/baselines/code_retrieval/pr.json"


def main() -> int:
    from agenteval.benchmarks import gate as gating

    layout = variant_layout("code_retrieval")
    try:
        result = gating.gate(
            gating.load_run(layout.reports / "results.json"), gating.load_run(root() / BASELINE)
        )
    except gating.GateRefused as exc:
        print(f"gate: not comparable: {exc}", file=sys.stderr)
        return 3
    for line in result.lines():
        print(f"gate: {line}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    run_stage(main)
