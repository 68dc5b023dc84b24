"""Stage `suite`: validate and resolve the selected scenarios into data/suite.json."""

from __future__ import annotations

import sys

from agenteval.pipeline import step_suite
from agenteval.suite.build import SuiteError, split_lines
from stages.common import layout, params, run_stage


def main() -> int:
    try:
        suite = step_suite(params(), layout())
    except SuiteError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 2
    print(f"suite: {len(suite.items)} scenario(s) x {suite.iterations} iteration(s)")
    for line in split_lines(suite.split):
        print(line)
    for entry in suite.invalid:
        # Skipped, not fatal: the report lists them too. suite.strict: true refuses instead.
        for error in entry.errors:
            print(error, file=sys.stderr)
    if suite.invalid:
        print(f"suite: {len(suite.invalid)} invalid scenario file(s) skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_stage(main)
