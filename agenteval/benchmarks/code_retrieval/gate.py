"""The code retrieval gate: exit 1 when a quality metric fell by more than the tolerance, the
incremental index drifted, or a robustness case that passed in the baseline does not pass.

Scale figures are shown beside the baseline's, never gated. A baseline that scored other
queries, or indexed with another configuration, is refused, not compared. Every query whose
bm25 file hit@5 flipped is listed, both ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval.benchmarks.verdict import GateRefused, GateResult, allowed_change

DEFAULT_TOLERANCE = 0.05
GATED = "bm25"  # the project's retriever; git grep is the yardstick, not the product


def _refuse(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
    if sorted(current["per_query"]) != sorted(baseline["per_query"]):
        raise GateRefused("the baseline scored other queries; replace it with a run on this set")
    now, then = current["meta"]["repositories"], baseline["meta"]["repositories"]
    for name, repo in then.items():
        if name in now and now[name]["config"] != repo["config"]:
            raise GateRefused(
                f"{name} was indexed with another configuration: baseline {repo['config']}, "
                f"current {now[name]['config']}"
            )


def gate(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None = None
) -> GateResult:
    allowed = allowed_change(tolerance, DEFAULT_TOLERANCE)
    _refuse(current, baseline)
    result = GateResult(True, allowed)
    now_scores = current["metrics"].get(GATED) or {}
    for metric, then in baseline["metrics"][GATED].items():
        now = now_scores.get(metric)
        ok = then is None or (now is not None and then - now <= allowed + 1e-12)
        dropped = then is not None and now is not None and now < then
        note = f"drop {then - now:.4f}" if dropped else ""
        result.checks.append(
            {"name": f"{GATED} {metric}", "baseline": then, "current": now, "ok": ok, "note": note}
        )
    for name, inc in (current.get("incremental") or {}).items():
        result.checks.append({"name": f"incremental {name}", "baseline": "-",
                              "current": "drift" if inc["drift"] else "no drift",
                              "ok": not inc["drift"]})  # fmt: skip
    now_cases = {(c["kind"], c["case"]): c["status"] for c in current.get("robustness") or []}
    for case in baseline.get("robustness") or []:
        if case["status"] == "pass":
            status = now_cases.get((case["kind"], case["case"]), "not-run")
            result.checks.append({"name": f"{case['kind']}: {case['case']}", "baseline": "pass",
                                  "current": status, "ok": status == "pass"})  # fmt: skip
    for name, repo in baseline["meta"]["repositories"].items():
        mine = current["meta"]["repositories"].get(name, {}).get("scale", {})
        for key in ("first_index_s", "resync_s_mean"):
            result.checks.append({"name": f"scale {name} {key}", "baseline": repo["scale"]
                                  .get(key), "current": mine.get(key), "ok": True,
                                  "note": "shown, not gated"})  # fmt: skip
    result.flipped = _flips(current, baseline)
    result.passed = all(c["ok"] for c in result.checks)
    return result


def _flips(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for q, row in baseline["per_query"].items():
        then = row[GATED]["file_rank"]
        now = current["per_query"][q][GATED]["file_rank"]
        if (then is not None and then <= 5) != (now is not None and now <= 5):
            out.append({"question": q, "what": f"{GATED} file hit@5", "from": then, "to": now})
    return out
