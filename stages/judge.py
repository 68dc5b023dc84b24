"""Stage `judge`: grade the stored transcripts -> data/verdicts/ (never calls the agent)."""

from __future__ import annotations

import sys

from agenteval.controls.load import ControlsError
from agenteval.judging import JudgingStopped
from agenteval.pipeline import step_judge
from stages.common import layout, params, run_stage, show_progress


def main() -> int:
    try:
        count = step_judge(params(), layout(), progress=show_progress())
    except ControlsError as exc:  # judge.controls_per_run reads them
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    except JudgingStopped as exc:
        print(f"judge: {exc}; verdicts so far are kept: resume with `dvc repro`", file=sys.stderr)
        return 3
    print(f"judge: {count} verdict(s)")
    return 0


if __name__ == "__main__":
    run_stage(main)
