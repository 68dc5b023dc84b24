"""The benchmark gate: does a run hold its baseline? One entry for every benchmark kind.

A benchmark of the registry (agenteval.benchmarks.base) is gated by its own `gate`, with its
own default tolerance; a QA run folder (metrics.json + details/) by the rule below: a drop in
any `correct.*` figure larger than the tolerance fails (widened on small sets to 1.5 tasks,
agenteval.benchmarks.verdict.tolerance_for), every flipped task is listed, and a baseline
made with another k, on other tasks or graded by another judge is refused, not compared.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.base import REGISTRY, benchmark
from agenteval.benchmarks.verdict import (
    GateInputError,
    GateRefused,
    GateResult,
    allowed_change,
    check,
    tolerance_for,
)

__all__ = ["GateInputError", "GateRefused", "GateResult", "gate", "load_run"]

DEFAULT_TOLERANCE = 0.02
KINDS = ("qa",)  # gated here; a registered benchmark by its own `gate`


def load_run(path: Path) -> dict[str, Any]:
    """A retrieval results.json (file or the folder holding it) or a QA run folder."""
    candidates = [path] if path.is_file() else [path / "results.json", path / "metrics.json"]
    for candidate in candidates:
        if candidate.is_file():
            try:
                data = json.loads(candidate.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise GateInputError(f"{candidate}: not a JSON file ({exc})") from None
            if not isinstance(data, dict):
                raise GateInputError(f"{candidate}: not a benchmark result (not a JSON object)")
            if data.get("kind") == "qa":
                data["details"] = _qa_details(candidate.parent / "details")
            if data.get("kind") not in (*KINDS, *REGISTRY):
                raise GateInputError(
                    f"{candidate}: not a benchmark result (kind {data.get('kind')!r})"
                )
            return dict(data)
    raise GateInputError(f"{path}: no results.json or metrics.json")


def _qa_details(folder: Path) -> dict[str, Any]:
    details = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        data = json.loads(path.read_text(encoding="utf-8"))
        first = data["attempts"].get("0", {})
        details[data["task_id"]] = {
            "correct": first.get("metrics", {}).get("correct"),
            "judge": first.get("meta", {}).get("benchmark", {}).get("scoring", {}).get("judge"),
        }
    return details


def gate(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None = None
) -> GateResult:
    """`tolerance` None: the kind's own default."""
    if current.get("kind") != baseline.get("kind"):
        raise GateRefused(
            f"baseline is a {baseline.get('kind')} run, this is {current.get('kind')}"
        )
    if current["kind"] in REGISTRY:
        return benchmark(current["kind"]).gate(current, baseline, tolerance)
    allowed = allowed_change(tolerance, DEFAULT_TOLERANCE)
    return _gate_qa(current, baseline, allowed)


def _gate_qa(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float
) -> GateResult:
    if current.get("k") != baseline.get("k"):
        raise GateRefused(
            f"the baseline made {baseline.get('k')} attempt(s) per task, "
            f"this run {current.get('k')}"
        )
    now_d, then_d = current.get("details") or {}, baseline.get("details") or {}
    if sorted(now_d) != sorted(then_d):
        raise GateRefused("the baseline scored other tasks; replace it with a run on this set")
    judges = {
        json.dumps(d["judge"], sort_keys=True)
        for d in [*now_d.values(), *then_d.values()]
        if d.get("judge")
    }
    if len(judges) > 1:
        raise GateRefused(f"the runs were graded by different judges: {sorted(judges)}")
    allowed = tolerance_for(len(then_d), tolerance)
    result = GateResult(True, allowed)
    for name in sorted(k for k in baseline if k.startswith("correct.")):
        now = (current.get(name) or {}).get("value")
        result.checks.append(check(name, baseline[name].get("value"), now, allowed))
    for task, row in then_d.items():
        if row["correct"] != now_d[task]["correct"]:
            result.flipped.append(
                {
                    "question": task,
                    "what": "attempt 0 correct",
                    "from": row["correct"],
                    "to": now_d[task]["correct"],
                }
            )
    result.passed = all(c["ok"] for c in result.checks)
    return result
