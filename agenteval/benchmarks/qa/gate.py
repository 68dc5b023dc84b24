"""The QA gate: does a run hold its baseline's `correct.*` figures?

A drop larger than the tolerance fails (widened on small sets to 1.5 tasks,
agenteval.benchmarks.verdict.tolerance_for); every task whose first attempt flipped is
listed. A baseline made with another k, on other tasks or graded by another judge is
refused, not compared. A run is its folder: metrics.json and details/ beside it (`beside`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.verdict import (
    GateRefused,
    GateResult,
    allowed_change,
    check,
    tolerance_for,
)

DEFAULT_TOLERANCE = 0.02


def beside(folder: Path) -> dict[str, Any]:
    """What the gate reads beside a run's metrics.json: each task's first attempt."""
    return {"details": _qa_details(folder / "details")}


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
    """`tolerance` None: 0.02 (widened on small sets)."""
    return _gate_qa(current, baseline, allowed_change(tolerance, DEFAULT_TOLERANCE))


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
