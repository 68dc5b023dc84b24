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

from agenteval.climb.artifacts import ClimbError
from agenteval.fileio import digest_of, write_json
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.suite import Suite
from agenteval.split import narrow_overlap


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


def split_suite(suite: Suite, ids: Sequence[str], iterations: int) -> Suite:
    """The suite of one split: the scenario files cannot change in a session (the guard keeps
    edits to the agent), so it is resolved once and written into every evaluation."""
    wanted = set(ids)
    items = [item for item in suite.items if item.scenario.id in wanted]
    digest = digest_of(sorted((i.scenario.id, i.digest) for i in items))
    split = dict(suite.split or {})
    if split.get("overlap"):  # the split's own ids only: held and test stay unnamed in train
        narrowed = [narrow_overlap(o, wanted) for o in split["overlap"]]
        split["overlap"] = [o for o in narrowed if o["splits"]]
    update = {"items": items, "iterations": int(iterations), "scenario_set_digest": digest}
    return suite.model_copy(update=update | {"split": split or suite.split})


def evaluate(
    root: Path, overrides: Sequence[str], suite: Suite, split: str, folder: Path
) -> Evaluation:
    """Run the pipeline on `suite` into `folder` (params re-read: the edit is on disk)."""
    from agenteval.pipeline import step_infer, step_judge, step_score

    params = copy.deepcopy(session_params(root, overrides))
    params["suite"].update(ids=[i.scenario.id for i in suite.items], iterations=suite.iterations)
    layout = Layout.run_dir(root, folder)
    write_json(layout.suite, suite)
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


def suites(root: Path, overrides: Sequence[str]) -> tuple[Suite, Suite]:
    """(the session's scenarios: params' selection, every scenario file). Splits are dealt
    over every file either way; the guard reads the second, so no scenario can be quoted."""
    from agenteval.suite.build import SuiteError, build_suite

    params = copy.deepcopy(session_params(root, overrides))
    try:
        chosen = build_suite(params, root)
        params["suite"].update(ids=[], categories=[], tier=None)
        return chosen, build_suite(params, root)
    except SuiteError as exc:  # a selection or a scenario file the session cannot run
        raise ClimbError("\n".join(str(p) for p in exc.problems)) from None
