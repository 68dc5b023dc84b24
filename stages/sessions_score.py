"""Stage `score` of pipelines/sessions: scorecard.json (a DVC metric: no text) and the
private report.md."""

from __future__ import annotations

import sys

from agenteval.benchmarks.sessions.steps import step_coverage
from agenteval.benchmarks.sessions.variant import NAME, private_out, stage_score
from stages.common import coverage_status, root, run_stage, variant_dir, variant_params


def main() -> int:
    settings = variant_params(NAME)
    try:
        card = stage_score(settings, root(), variant_dir(NAME) / "reports/scorecard.json")
        coverage = step_coverage(private_out(settings, root()))
    except (ValueError, OSError) as exc:
        print(f"score: {exc}", file=sys.stderr)
        return 2
    print(f"score: mean grade {card.mean_grade.value}, pass rate {card.pass_rate.value}, "
          f"controls {'passed' if card.controls.passed else 'FAILED'}")  # fmt: skip
    return coverage_status("score", coverage)


if __name__ == "__main__":
    run_stage(main)
