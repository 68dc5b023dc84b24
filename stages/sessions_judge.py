"""Stage `judge` of pipelines/sessions: stored answers and the session controls graded
(no agent call); reports/judged.json records outcomes and grades only."""

from __future__ import annotations

import sys
from collections import Counter

from agenteval.benchmarks.sessions.variant import NAME, stage_judge
from agenteval.llm import QuotaExhausted
from stages.common import root, run_stage, variant_dir, variant_params


def main() -> int:
    try:
        results = stage_judge(
            variant_params(NAME), root(), variant_dir(NAME) / "reports/judged.json"
        )
    except QuotaExhausted as exc:
        print(f"judge: stopped: {exc}; resume with: dvc repro pipelines/sessions/dvc.yaml",
              file=sys.stderr)  # fmt: skip
        return 3
    except (ValueError, OSError) as exc:
        print(f"judge: {exc}", file=sys.stderr)
        return 2
    outcomes = Counter(r.outcome for r in results.results)
    print("judge: " + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
    return 0


if __name__ == "__main__":
    run_stage(main)
