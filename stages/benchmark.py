"""`python -m stages.benchmark NAME STEP`: one step of a registered benchmark's pipeline
(pipelines/NAME/dvc.yaml, run with the repository root as working directory), its params
read once from pipelines/NAME/params.yaml (agenteval.benchmarks.runner)."""

from __future__ import annotations

import sys

from stages.common import root, run_stage, variant_dir

USAGE = "usage: python -m stages.benchmark NAME STEP"


def main(argv: list[str] | None = None) -> int:
    from agenteval.benchmarks.runner import run_stage_step

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(USAGE, file=sys.stderr)
        return 2
    name, step = args
    try:
        return run_stage_step(name, step, variant_dir(name), root())
    except LookupError as exc:  # an unknown benchmark or step: said, never a traceback
        print(f"{USAGE}: {exc.args[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    run_stage(main)
