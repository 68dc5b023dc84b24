"""The benchmark gate: does a run hold its baseline? One entry for every benchmark kind.

A run's results file is read with what its benchmark reads beside it (`beside`, QA's
details/), and gated by its benchmark's own `gate` through the registry
(agenteval.benchmarks.base), with that benchmark's own default tolerance. Runs of two
kinds are refused, not compared.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.base import REGISTRY, benchmark
from agenteval.benchmarks.verdict import GateInputError, GateRefused, GateResult

__all__ = ["GateInputError", "GateRefused", "GateResult", "gate", "load_run"]


def load_run(path: Path) -> dict[str, Any]:
    """A registered benchmark's results.json or metrics.json (the file, or the run folder
    holding it), with what its gate reads beside it."""
    candidates = [path] if path.is_file() else [path / "results.json", path / "metrics.json"]
    for candidate in candidates:
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise GateInputError(f"{candidate}: not a JSON file ({exc})") from None
            if not isinstance(data, dict):
                raise GateInputError(f"{candidate}: not a benchmark result (not a JSON object)")
            if data.get("kind") not in REGISTRY:
                raise GateInputError(
                    f"{candidate}: not a benchmark result (kind {data.get('kind')!r})"
                )
            # What a benchmark's gate reads beside its results file (QA: details/).
            beside = getattr(benchmark(data["kind"]), "beside", None)
            return dict(data) | (dict(beside(candidate.parent)) if beside else {})
    raise GateInputError(f"{path}: no results.json or metrics.json")


def gate(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None = None
) -> GateResult:
    """`tolerance` None: the kind's own default."""
    if current.get("kind") != baseline.get("kind"):
        raise GateRefused(
            f"baseline is a {baseline.get('kind')} run, this is {current.get('kind')}"
        )
    return benchmark(current["kind"]).gate(current, baseline, tolerance)
