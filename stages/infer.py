"""Stage `infer`: run the agent under test on every scenario iteration -> data/transcripts/."""

from __future__ import annotations

import sys

from agenteval.llm.cache import tag_cache_dir
from agenteval.llm.config import DEFAULT_CACHE_DIR
from agenteval.pipeline import step_infer
from agenteval.runlock import EvalLocked
from agenteval.targets.base import AgentFilesMissing
from stages.common import layout, params, root, run_stage, show_progress


def main() -> int:
    # The default response cache is a (persisted) output of this stage in dvc.yaml, so that
    # `dvc push` carries it. It must exist even when nothing called a model (the builtin
    # agent, `run.cache: false`, or a `run.cache_dir` elsewhere), tagged, so that DVC does
    # not warn of an empty output.
    tag_cache_dir(root() / DEFAULT_CACHE_DIR)
    try:
        result = step_infer(params(), layout(), progress=show_progress())
    except EvalLocked as exc:
        print(f"infer: not started: {exc}", file=sys.stderr)
        return 3
    except AgentFilesMissing as exc:  # target.agent names no agent here: before any unit
        print(f"infer: {exc}", file=sys.stderr)
        return 2
    completed = sum(t.status == "COMPLETED" for t in result.transcripts)
    print(f"infer: {completed}/{len(result.transcripts)} conversation(s) completed")
    if result.retry and not result.stop_reason:
        # The stage runs only when its inputs change: retrying is asked for by name.
        print(f"infer: {result.retry}: send again with: agenteval retry")
    if result.execution is not None and result.execution.executor != "local":
        print(f"infer: {result.execution.line()}")
    if result.stop_reason:
        # Finished transcripts are kept (the stage output persists): rerunning resumes.
        print(f"infer: stopped early: {result.stop_reason}", file=sys.stderr)
        print("infer: resume with: dvc repro", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    run_stage(main)
