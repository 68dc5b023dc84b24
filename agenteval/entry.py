"""The console script `agenteval` (and `python -m agenteval`).

For `agenteval run` it launches the MLflow child first (`tracking.background.prestart`),
before the command line's own modules load: the child's import of MLflow, the longest
step before it can write a trace, then overlaps them and the params (about 0.35 s of
the parent's start-up) instead of following them.
"""

from __future__ import annotations

import sys


def main() -> None:
    # The child claims its own process (agenteval.heap) and the command line claims this one.
    if sys.argv[1:2] == ["run"] and not {"--help", "-h"} & set(sys.argv[2:]):
        from agenteval.tracking.background import prestart

        prestart()
    from agenteval.cli import main as command_line

    command_line()
