"""Throughput figures from timed requests: pure functions over the records of a sweep.

Per request: time to first token (TTFT) and end-to-end latency are measured from the moment
the request was handed to the client, retries and their back-off included, to the first text
token and to the end of the stream; its output speed is vLLM's definition, (output tokens -
1) / (latency - TTFT), the pace after the first token. Per repeat of a concurrency level:
TTFT p50/p95, latency p50/p95/p99, the median output speed, and the level's requests and
output tokens per second over its wall time (first request sent to last one done). Over the
repeats each figure is a mean with a t interval; accuracy is pooled over every answered
request with a Wilson interval. A figure that needs token counts is None (n/a) when any
answered request has none: a partial sum would understate it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval.stats import mean_ci, percentile, wilson_interval

PERCENTILES = {"ttft_ms": (50, 95), "latency_ms": (50, 95, 99)}
CONF = 0.95
# When the measuring client's event loop wakes this late (p95 over a level) it reads tokens
# late too, and a level's figures say more about the client than the endpoint: they are
# shown, marked, and not gated.
CLIENT_BOUND_LAG_MS = 10.0


@dataclass(frozen=True)
class RequestRecord:
    endpoint: str
    level: int
    repeat: int
    email: str
    expected: str
    sent_at: float  # seconds, perf_counter
    done_at: float
    ttft_ms: float | None
    latency_ms: float
    output_tokens: int | None
    token_source: str  # usage | tokenizer | none
    attempts: int
    error: str | None
    label: str | None
    reply: str

    @property
    def answered(self) -> bool:
        return self.error is None

    @property
    def tokens_per_s(self) -> float | None:
        if self.output_tokens is None or self.output_tokens < 2 or self.ttft_ms is None:
            return None
        decode_s = (self.latency_ms - self.ttft_ms) / 1000.0
        return (self.output_tokens - 1) / decode_s if decode_s > 0 else None


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


def summarize_repeat(records: Sequence[RequestRecord], lags_ms: Sequence[float]) -> dict[str, Any]:
    """The figures of one repeat of one concurrency level."""
    answered = [r for r in records if r.answered]
    wall = max(r.done_at for r in records) - min(r.sent_at for r in records) if records else 0.0
    out: dict[str, Any] = {
        "requests": len(records),
        "answered": len(answered),
        "errors": len(records) - len(answered),
        "retries": sum(r.attempts - 1 for r in records),
        "correct": sum(r.label == r.expected for r in answered),
        "wall_s": round(wall, 6),
        "loop_lag_ms.p95": percentile(lags_ms, 95) if lags_ms else 0.0,
    }
    ttfts = [r.ttft_ms for r in answered if r.ttft_ms is not None]
    for q in PERCENTILES["ttft_ms"]:
        out[f"ttft_ms.p{q}"] = percentile(ttfts, q) if len(ttfts) == len(answered) else None
    for q in PERCENTILES["latency_ms"]:
        out[f"latency_ms.p{q}"] = percentile([r.latency_ms for r in answered], q)
    speeds = [r.tokens_per_s for r in answered]
    known = [s for s in speeds if s is not None]
    out["request_tokens_per_s.median"] = median(known) if len(known) == len(speeds) else None
    out["requests_per_s"] = len(answered) / wall if wall > 0 else None
    counts = [r.output_tokens for r in answered]
    complete = all(c is not None for c in counts) and answered
    out["output_tokens_per_s"] = (
        sum(c for c in counts if c is not None) / wall if complete and wall > 0 else None
    )
    return out


FIGURES = (
    "ttft_ms.p50",
    "ttft_ms.p95",
    "latency_ms.p50",
    "latency_ms.p95",
    "latency_ms.p99",
    "request_tokens_per_s.median",
    "requests_per_s",
    "output_tokens_per_s",
    "loop_lag_ms.p95",
)


def interval(values: Sequence[float | None]) -> dict[str, Any]:
    """Mean over repeats with a t interval (None when a repeat had no value)."""
    if not values or any(v is None for v in values):
        return {"value": None, "low": None, "high": None, "repeats": list(values)}
    numbers = [float(v) for v in values if v is not None]
    mean = sum(numbers) / len(numbers)
    if len(numbers) < 2:
        return {"value": mean, "low": None, "high": None, "repeats": numbers}
    ci = mean_ci(numbers, conf=CONF)
    if not math.isfinite(ci.low):
        return {"value": mean, "low": None, "high": None, "repeats": numbers}
    # Every figure here is a time or a rate: an interval reaching below zero is cut at zero.
    return {"value": mean, "low": max(0.0, ci.low), "high": ci.high, "repeats": numbers}


def summarize_level(repeats: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {name: interval([r[name] for r in repeats]) for name in FIGURES}
    for name in ("requests", "answered", "errors", "retries", "correct"):
        out[name] = sum(int(r[name]) for r in repeats)
    out["accuracy"] = accuracy(out["correct"], out["answered"])
    out["client_bound"] = any(r["loop_lag_ms.p95"] > CLIENT_BOUND_LAG_MS for r in repeats)
    return out


def accuracy(correct: int, answered: int) -> dict[str, Any]:
    if not answered:
        return {"value": None, "low": None, "high": None, "correct": 0, "answered": 0}
    low, high = wilson_interval(correct, answered, CONF)
    return {
        "value": correct / answered,
        "low": low,
        "high": high,
        "correct": correct,
        "answered": answered,
    }


def token_sources(records: Sequence[RequestRecord]) -> dict[str, int]:
    found: dict[str, int] = {}
    for r in records:
        if r.answered:
            found[r.token_source] = found.get(r.token_source, 0) + 1
    return dict(sorted(found.items()))
