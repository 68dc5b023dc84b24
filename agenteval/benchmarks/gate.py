"""The benchmark gate: does a run hold its baseline's recall@5, MRR and accuracy?

A drop larger than the tolerance fails; on small sets the tolerance widens to 1.5 questions
(1.5 / n), so one flipped question passes and two fail. Every flipped question is listed, in
both directions. A hard case that passed in the baseline must pass again. A baseline is
refused, not compared, when it was measured with another retriever or embedder (any
difference in a pipeline's description), on other questions, or for another benchmark kind.
Works on retrieval `results.json` files and on QA run folders (metrics.json + details/); a
benchmark of the registry (agenteval.benchmarks.base) is gated by its own `gate`, with its
own default tolerance.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.base import REGISTRY, benchmark
from agenteval.benchmarks.verdict import GateInputError, GateRefused, GateResult, allowed_change

__all__ = ["GateInputError", "GateRefused", "GateResult", "gate", "load_run"]

DEFAULT_TOLERANCE = 0.02
SMALL_SET_QUESTIONS = 1.5
KINDS = ("retrieval", "qa")  # gated here; a registered benchmark by its own `gate`


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


def tolerance_for(questions: int, tolerance: float) -> float:
    return max(tolerance, SMALL_SET_QUESTIONS / questions) if questions else tolerance


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
    if current["kind"] == "qa":
        return _gate_qa(current, baseline, allowed)
    return _gate_retrieval(current, baseline, allowed)


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


def _check(name: str, base: float | None, now: float | None, allowed: float) -> dict[str, Any]:
    if base is None:
        return {"name": name, "baseline": None, "current": now, "ok": True, "note": "no baseline"}
    if now is None:
        return {"name": name, "baseline": base, "current": None, "ok": False, "note": "not run"}
    drop = base - now
    return {
        "name": name,
        "baseline": base,
        "current": now,
        "ok": drop <= allowed + 1e-12,
        "note": f"drop {drop:.4f}" if drop > 0 else "",
    }


def _gate_retrieval(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float
) -> GateResult:
    _refuse_other_instrument(current, baseline)
    allowed = tolerance_for(len(baseline["per_question"]), tolerance)
    result = GateResult(True, allowed)
    for name, scores in baseline["metrics"].items():
        now = current["metrics"].get(name) or {}
        for metric in ("recall@5", "mrr"):
            result.checks.append(
                _check(f"{name} {metric}", scores[metric], now.get(metric), allowed)
            )
        result.flipped += _flips(current, baseline, name)
    base_acc = (baseline.get("answers") or {}).get("accuracy")
    now_acc = (current.get("answers") or {}).get("accuracy")
    result.checks.append(_check("answer accuracy", base_acc, now_acc, allowed))
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
        result.checks.append(_check(name, baseline[name].get("value"), now, allowed))
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
