"""What of held and test leaves a session: aggregates, never which scenarios changed.

Thresholdout's guarantee holds only if whoever proposes edits learns no more of the held split
than the mechanism's answers. So held and test are evaluated into a folder outside the
repository (`sealed_folder`, removed when the session or `climb evaluate` ends), and what a
round, climb.json, the console, the plot and MLflow carry of them is `aggregate`: the mean
paired gain, its bound, the pass shares and the number of scenarios — never the lists of
scenarios that improved or worsened, never a transcript or a per-scenario scorecard. Train is
the proposer's to read and keeps its per-scenario figures. Which scenario is in which split
is not a result (anyone can deal it from the salt) and stays in climb.json.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agenteval.scratch import temporary_folder

SEALED = ("held", "test")
PER_SCENARIO = ("improved", "worsened")


def aggregate(delta: Mapping[str, Any]) -> dict[str, Any]:
    """A split's paired figures without the scenarios behind them."""
    return {k: v for k, v in delta.items() if k not in PER_SCENARIO}


@contextmanager
def sealed_folder() -> Iterator[Path]:
    """A private folder outside the repository for held and test evaluations."""
    with temporary_folder("agenteval-climb-sealed-") as folder:
        yield Path(folder)
