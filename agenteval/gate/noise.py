"""The run-to-run noise floor: one configuration run R times with other seeds."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from agenteval.fileio import write_json
from agenteval.layout import Layout
from agenteval.pipeline import step_infer, step_judge, step_score, step_suite
from agenteval.uncertainty import noise_floor


def measure_noise(
    params: dict[str, Any], runs: int, out_dir: Path, root: Path, progress: bool = False
) -> dict[str, Any]:
    """Run one configuration ``runs`` times with suite seeds seed, seed+1, ...; write the floor.

    Iteration seeds are suite.seed * 1000 + iteration, so consecutive suite seeds give disjoint
    iteration seeds (for fewer than 1000 iterations); stored transcripts and the response cache
    are both keyed by the seed, so no run replays another's answers. Each run lives in
    ``out_dir/run-<r>/``.
    """
    if runs < 2:
        raise ValueError(f"--runs must be at least 2 to measure run-to-run noise, got {runs}")
    base_seed = int(params["suite"].get("seed", 0))
    cards = []
    for r in range(runs):
        run_params = copy.deepcopy(params)
        run_params["suite"]["seed"] = base_seed + r
        run_dir = out_dir / f"run-{r + 1}"
        write_json(run_dir / "params.json", run_params)
        layout = Layout.run_dir(root, run_dir)
        step_suite(run_params, layout)
        step_infer(run_params, layout, progress)
        step_judge(run_params, layout, progress)
        cards.append(step_score(run_params, layout))
    floor = noise_floor(cards)
    write_json(out_dir / "noise_floor.json", floor)
    return floor
