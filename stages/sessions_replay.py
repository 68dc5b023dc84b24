"""Stage `replay` of pipelines/sessions: the pinned dataset's cases sent to the agent.

Transcripts go to the private folder (sessions.out); reports/replay.json records statuses
and digests only.
"""

from __future__ import annotations

import sys

from agenteval.benchmarks.sessions.variant import NAME, stage_replay
from agenteval.llm import QuotaExhausted
from stages.common import root, run_stage, variant_dir, variant_params


def main() -> int:
    try:
        found = stage_replay(
            variant_params(NAME), root(), variant_dir(NAME) / "reports/replay.json"
        )
    except QuotaExhausted as exc:
        print(f"replay: stopped: {exc}; resume with: dvc repro pipelines/sessions/dvc.yaml",
              file=sys.stderr)  # fmt: skip
        return 3
    except (ValueError, OSError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    statuses = [c["status"] for c in found["cases"].values()]
    print("replay: " + ", ".join(f"{s} {statuses.count(s)}" for s in sorted(set(statuses))))
    return 3 if found["stop_reason"] else 0


if __name__ == "__main__":
    run_stage(main)
