"""Stage `infer`: run the agent under test on every scenario iteration -> data/transcripts/."""

from __future__ import annotations

import sys

from agenteval.pipeline import step_infer
from stages.common import layout, params, show_progress


def main() -> int:
    transcripts = step_infer(params(), layout(), progress=show_progress())
    completed = sum(t.status == "COMPLETED" for t in transcripts)
    print(f"infer: {completed}/{len(transcripts)} conversation(s) completed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
