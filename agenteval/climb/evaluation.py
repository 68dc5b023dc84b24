"""One climb evaluation: the agent as the working tree has it, on one split, same seeds.

Every evaluation is a full pipeline run (suite -> infer -> judge -> score) into its own
folder, with `suite.ids` set to the split's scenarios and `suite.iterations` to the climb's.
The seeds follow from `suite.seed` and the iteration, so parent and candidate see the same
ones. Two evaluations compare only when the measuring instrument (judge, simulator, corpus)
and the scenarios are the same: anything else stops the session (exit 3 at the command line).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.suite import Suite


class NotComparable(Exception):
    """Parent and candidate were measured with different instruments or scenarios."""


@dataclass(frozen=True)
class Evaluation:
    split: str
    card: Scorecard
    folder: Path

    @property
    def cost_usd(self) -> float | None:
        value = self.card.usage.get("cost_usd")
        return float(value) if value is not None else None


def session_params(root: Path, overrides: Sequence[str]) -> dict[str, Any]:
    """params.yaml as the working tree has it now, with the session's overrides."""
    return load_params(root / "params.yaml", list(overrides))


def evaluate(
    root: Path,
    overrides: Sequence[str],
    split: str,
    ids: Sequence[str],
    iterations: int,
    folder: Path,
) -> Evaluation:
    """Run the pipeline for `ids` into `folder` (params re-read: the edit is on disk)."""
    from agenteval.pipeline import step_infer, step_judge, step_score, step_suite

    params = copy.deepcopy(session_params(root, overrides))
    params["suite"]["ids"] = list(ids)
    params["suite"]["categories"] = []
    params["suite"]["tier"] = None
    params["suite"]["iterations"] = int(iterations)
    layout = Layout.run_dir(root, folder)
    step_suite(params, layout)
    inferred = step_infer(params, layout)
    if inferred.stop_reason:
        raise RuntimeError(f"{split} evaluation stopped early: {inferred.stop_reason}")
    step_judge(params, layout)
    return Evaluation(split, step_score(params, layout), folder)


def check_comparable(parent: Evaluation, candidate: Evaluation) -> None:
    from agenteval.gate.runs import instrument_differences

    a, b = parent.card.config, candidate.card.config
    diffs = instrument_differences(a, b)
    if a.get("scenarios") != b.get("scenarios") or a.get("ground_truth") != b.get("ground_truth"):
        diffs.append("the scenarios or their ground truth differ")
    if a.get("seeds") != b.get("seeds"):
        diffs.append(f"seeds differ: {a.get('seeds')} -> {b.get('seeds')}")
    if diffs:
        raise NotComparable(
            f"{candidate.split}: not comparable with the parent: " + "; ".join(diffs)
        )


def full_suite(root: Path, overrides: Sequence[str]) -> Suite:
    """Every scenario with its split (no selection), for the split ids and the guard."""
    from agenteval.suite.build import build_suite

    params = copy.deepcopy(session_params(root, overrides))
    params["suite"].update(ids=[], categories=[], tier=None)
    return build_suite(params, root)
