"""The retrieval gate: does a run hold its baseline's recall@5, MRR and answer accuracy?

A drop larger than the tolerance fails; on small sets the tolerance widens to 1.5 questions
(agenteval.benchmarks.verdict.tolerance_for). Every flipped question is listed, in both
directions. A hard case that passed in the baseline must pass again. A baseline is refused,
not compared, when it was measured with another retriever or embedder (any difference in a
pipeline's description) or on other questions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval.benchmarks import verdict
from agenteval.benchmarks.verdict import GateRefused, GateResult

DEFAULT_TOLERANCE = 0.02


def gate(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None = None
) -> GateResult:
    """`tolerance` None: 0.02 (widened on small sets)."""
    return _gate_retrieval(current, baseline, verdict.allowed_change(tolerance, DEFAULT_TOLERANCE))


def _refuse_other_instrument(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
    now, then = current["meta"]["pipelines"], baseline["meta"]["pipelines"]
    for name, described in then.items():
        if name in now and now[name] != described:
            raise GateRefused(
                f"pipeline {name!r} was measured with another retriever or "
                f"embedder: baseline {described}, current {now[name]}"
            )
    if sorted(current["per_question"]) != sorted(baseline["per_question"]):
        raise GateRefused("the baseline scored other questions; replace it with a run on this set")


def _gate_retrieval(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float
) -> GateResult:
    _refuse_other_instrument(current, baseline)
    allowed = verdict.tolerance_for(len(baseline["per_question"]), tolerance)
    result = GateResult(True, allowed)
    for name, scores in baseline["metrics"].items():
        now = current["metrics"].get(name) or {}
        for metric in ("recall@5", "mrr"):
            result.checks.append(
                verdict.check(f"{name} {metric}", scores[metric], now.get(metric), allowed)
            )
        result.flipped += _flips(current, baseline, name)
    base_acc = (baseline.get("answers") or {}).get("accuracy")
    now_acc = (current.get("answers") or {}).get("accuracy")
    result.checks.append(verdict.check("answer accuracy", base_acc, now_acc, allowed))
    result.flipped += _answer_flips(current, baseline)
    now_cases = {c["case"]: c["status"] for c in current.get("hard_cases") or []}
    for case in baseline.get("hard_cases") or []:
        if case["status"] == "pass":
            status = now_cases.get(case["case"], "not run")
            result.checks.append(
                {
                    "name": f"hard case {case['case']}",
                    "baseline": "pass",
                    "current": status,
                    "ok": status == "pass",
                }
            )
    result.passed = all(c["ok"] for c in result.checks)
    return result


def _flips(
    current: Mapping[str, Any], baseline: Mapping[str, Any], pipeline: str
) -> list[dict[str, Any]]:
    out = []
    for q, row in baseline["per_question"].items():
        then = (row["pipelines"].get(pipeline) or {}).get("hit_rank")
        now = ((current["per_question"].get(q) or {}).get("pipelines", {}).get(pipeline) or {}).get(
            "hit_rank"
        )
        hit_then, hit_now = then is not None and then <= 5, now is not None and now <= 5
        if hit_then != hit_now:
            out.append({"question": q, "what": f"{pipeline} hit@5", "from": then, "to": now})
    return out


def _answer_flips(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for q, row in baseline["per_question"].items():
        then = (row.get("answer") or {}).get("outcome")
        now = ((current["per_question"].get(q) or {}).get("answer") or {}).get("outcome")
        if then != now and "correct" in (then, now):
            out.append({"question": q, "what": "answer", "from": then, "to": now})
    return out
