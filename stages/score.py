"""Stage `score`: recompute every score -> reports/scorecard.json and reports/metrics.json."""

from __future__ import annotations

from agenteval.pipeline import step_score
from stages.common import layout, params, run_stage


def main() -> int:
    card = step_score(params(), layout())
    s = card.summary
    print(f"score: {s.passed}/{s.total} passed, judged pass rate {s.judged_pass_rate}")
    return 0


if __name__ == "__main__":
    run_stage(main)
