"""The throughput gate: does a run hold its baseline's speed without losing accuracy?

Per endpoint and concurrency level, p95 latency may rise and output tokens per second (or
requests per second where tokens could not be counted) may fall by at most `tolerance` of
the baseline's value; triage accuracy may not fall at all. A level either run measured while
its own client was the bottleneck (client-bound) is shown but not compared. A baseline from
another endpoint or model, another script, other emails or other request settings is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval.benchmarks.verdict import GateRefused, GateResult, allowed_change

# Relative: timing on a shared machine moves by tens of percent between runs (measured on a
# loaded 2-core machine: the loopback's p95 latency at concurrency 4 moved 30% run to run).
DEFAULT_TOLERANCE = 0.5
SETTINGS = ("max_tokens", "temperature", "concurrency", "repeats", "warmup")


def _refuse(current: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
    if current["meta"]["workload"]["digest"] != baseline["meta"]["workload"]["digest"]:
        raise GateRefused("the baseline triaged other emails or another prompt")
    for key in SETTINGS:
        now, then = current["meta"]["settings"][key], baseline["meta"]["settings"][key]
        if now != then:
            raise GateRefused(f"the baseline ran with {key} {then}, this run with {now}")
    for name, run in baseline["endpoints"].items():
        mine = current["endpoints"].get(name)
        if mine is None:
            raise GateRefused(f"this run did not measure endpoint {name!r}")
        if mine["identity"] != run["identity"]:
            raise GateRefused(
                f"endpoint {name!r} is another endpoint or model: baseline "
                f"{run['identity']}, current {mine['identity']}"
            )


def _speed(figures: Mapping[str, Any]) -> tuple[str, float | None]:
    tokens = figures["output_tokens_per_s"]["value"]
    if tokens is not None:
        return "output tokens/s", tokens
    return "requests/s", figures["requests_per_s"]["value"]


def _level_checks(name: str, level: str, now: Mapping[str, Any], then: Mapping[str, Any],
                  tolerance: float) -> list[dict[str, Any]]:  # fmt: skip
    label = f"{name} c{level}"
    if now["client_bound"] or then["client_bound"]:
        return [{"name": f"{label} speed", "baseline": "-", "current": "-", "ok": True,
                 "note": "not compared: client-bound in "
                 + ("this run" if now["client_bound"] else "the baseline")}]  # fmt: skip
    p95_then, p95_now = then["latency_ms.p95"]["value"], now["latency_ms.p95"]["value"]
    limit = p95_then * (1 + tolerance)
    checks = [{"name": f"{label} latency p95 ms", "baseline": p95_then, "current": p95_now,
               "ok": p95_now is not None and p95_now <= limit,
               "note": f"at most {limit:.1f}"}]  # fmt: skip
    what, speed_then = _speed(then)
    speed_now = _speed(now)[1]
    if speed_then is not None:
        floor = speed_then * (1 - tolerance)
        checks.append({"name": f"{label} {what}", "baseline": speed_then, "current": speed_now,
                       "ok": speed_now is not None and speed_now >= floor,
                       "note": f"at least {floor:.2f}"})  # fmt: skip
    return checks


def gate(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None = None
) -> GateResult:
    allowed = allowed_change(tolerance, DEFAULT_TOLERANCE)
    _refuse(current, baseline)
    result = GateResult(True, allowed)
    for name, run in baseline["endpoints"].items():
        mine = current["endpoints"][name]
        for level, then in run["levels"].items():
            now = mine["levels"].get(level)
            if now is None:
                result.checks.append({"name": f"{name} c{level}", "baseline": "measured",
                                      "current": "not run", "ok": False})  # fmt: skip
                continue
            result.checks += _level_checks(name, level, now, then, allowed)
        acc_then, acc_now = run["accuracy"]["value"], mine["accuracy"]["value"]
        result.checks.append({
            "name": f"{name} triage accuracy", "baseline": acc_then, "current": acc_now,
            "ok": acc_then is None or (acc_now is not None and acc_now >= acc_then - 1e-12),
            "note": "may not fall",
        })  # fmt: skip
    result.passed = all(c["ok"] for c in result.checks)
    return result
