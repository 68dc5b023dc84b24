"""summary.md of a throughput run: per endpoint, one row per concurrency level."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval.benchmarks.throughput.metrics import CLIENT_BOUND_LAG_MS
from agenteval.fileio import write_text
from agenteval.layout import Layout

COLUMNS = (
    ("TTFT p50 ms", "ttft_ms.p50", 1),
    ("TTFT p95 ms", "ttft_ms.p95", 1),
    ("latency p50 ms", "latency_ms.p50", 1),
    ("latency p95 ms", "latency_ms.p95", 1),
    ("latency p99 ms", "latency_ms.p99", 1),
    ("tok/s per request", "request_tokens_per_s.median", 1),
    ("requests/s", "requests_per_s", 2),
    ("output tok/s", "output_tokens_per_s", 1),
    ("client loop lag p95 ms", "loop_lag_ms.p95", 1),
)


def cell(figure: Mapping[str, Any], digits: int) -> str:
    value = figure.get("value")
    if value is None:
        return "n/a"
    if figure.get("low") is None:
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{figure['low']:.{digits}f}, {figure['high']:.{digits}f}]"


def accuracy_cell(acc: Mapping[str, Any]) -> str:
    if acc.get("value") is None:
        return "n/a"
    return (
        f"{acc['value']:.3f} [{acc['low']:.3f}, {acc['high']:.3f}] "
        f"({acc['correct']}/{acc['answered']})"
    )


def level_lines(run: Mapping[str, Any]) -> list[str]:
    head = " | ".join(name for name, _, _ in COLUMNS)
    lines = [
        f"| concurrency | {head} | accuracy | errors | retries |",
        "|---:|" + "---:|" * (len(COLUMNS) + 3),
    ]
    for level, figures in run["levels"].items():
        cells = " | ".join(cell(figures[key], digits) for _, key, digits in COLUMNS)
        mark = " (client-bound)" if figures["client_bound"] else ""
        lines.append(
            f"| {level}{mark} | {cells} | {accuracy_cell(figures['accuracy'])} | "
            f"{figures['errors']} | {figures['retries']} |"
        )
    return lines


def write_summary(layout: Layout, results: Mapping[str, Any]) -> None:
    meta = results["meta"]
    settings = meta["settings"]
    lines = [
        "# Endpoint throughput: email triage",
        "",
        f"{meta['workload']['emails']} emails ({meta['workload']['file']}), streamed at "
        f"concurrency {', '.join(map(str, settings['concurrency']))}, {settings['repeats']} "
        f"repeat(s) per level; max_tokens {settings['max_tokens']}, temperature "
        f"{settings['temperature']}. Means over repeats with 95% t intervals; accuracy pooled "
        "over every answered request (Wilson). Measured on "
        f"{meta['machine']}.",
        "",
        meta["timing"],
        "",
        "A level marked client-bound had the measuring client's event loop waking more "
        f"than {CLIENT_BOUND_LAG_MS:.0f} ms late (p95): it read tokens late, so its figures are "
        "bounded by this client, not the endpoint, and the gate does not compare them.",
    ]
    for name, run in results["endpoints"].items():
        identity = ", ".join(f"{k}={v}" for k, v in run["identity"].items())
        counts = ", ".join(f"{k}: {v}" for k, v in run["token_counts"].items()) or "none"
        lines += [
            "",
            f"## {name}",
            "",
            f"Endpoint: {identity}.",
            f"Warm-up: {run['warmup_excluded']} request(s) sent first and excluded from every "
            "figure.",
            f"Output tokens counted from: {counts} (tokenizer: {run['tokenizer']}); n/a where "
            "no count could be had.",
            f"Triage accuracy over all levels: {accuracy_cell(run['accuracy'])}.",
            "",
            *level_lines(run),
        ]
        lines += [f"- error: {e}" for e in run["errors"]]
    write_text(layout.reports / "summary.md", "\n".join(lines).rstrip() + "\n")
