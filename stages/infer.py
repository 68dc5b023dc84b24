"""Stage `infer`: run the agent under test on every scenario iteration -> data/transcripts/."""

from __future__ import annotations

import sys

from agenteval.pipeline import step_infer
from agenteval.runlock import EvalLocked
from stages.common import layout, params, show_progress


def main() -> int:
    try:
        result = step_infer(params(), layout(), progress=show_progress())
    except EvalLocked as exc:
        print(f"infer: not started: {exc}", file=sys.stderr)
        return 3
    completed = sum(t.status == "COMPLETED" for t in result.transcripts)
    print(f"infer: {completed}/{len(result.transcripts)} conversation(s) completed")
    if result.execution is not None and result.execution.executor != "local":
        print(f"infer: {result.execution.line()}")
    if result.stop_reason:
        # Finished transcripts are kept (the stage output persists): rerunning resumes.
        print(f"infer: stopped early: {result.stop_reason}", file=sys.stderr)
        print("infer: resume with: dvc repro", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
