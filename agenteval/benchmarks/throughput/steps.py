"""The throughput benchmark as one step: sweep every endpoint -> results.json, metrics.json,
summary.md (reports) and every request's record (data/requests.jsonl)."""

from __future__ import annotations

import asyncio
import json
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.throughput import metrics
from agenteval.benchmarks.throughput.run import Settings, SweepRun, open_target, sweep
from agenteval.benchmarks.throughput.settings import ThroughputParams
from agenteval.benchmarks.throughput.tokens import resolve_tokenizer
from agenteval.benchmarks.throughput.workload import load_workload
from agenteval.fileio import write_json, write_text
from agenteval.layout import Layout
from agenteval.measured import Coverage, first_reason

KIND = "throughput"
TIMING = (
    "TTFT and latency run from the request handed to the client (retries included) to the "
    "first text token and the end of the stream; output tokens/s per request is (tokens - 1) "
    "/ (latency - TTFT); requests/s and tokens/s per level are over its wall time."
)


def results_path(layout: Layout) -> Path:
    return layout.reports / "results.json"


def settings_of(section: ThroughputParams) -> Settings:
    """The sweep's settings: the section's fields of the same names."""
    return Settings(**section.model_dump(include=set(Settings.__dataclass_fields__)))


def step_run(section: ThroughputParams, layout: Layout) -> dict[str, Any]:
    from agenteval.benchmarks.throughput.report import write_summary

    workload = load_workload(layout.root, section.workload, section.prompt, list(section.ids))
    settings = settings_of(section)
    endpoints: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for spec in section.endpoints:
        with open_target(spec, settings) as target:
            tokenizer, how = resolve_tokenizer(section.tokenizer, spec.kind, layout.root)
            run = asyncio.run(sweep(target, workload, settings, tokenizer))
        endpoints[target.name] = _endpoint_results(target.identity, how, run)
        rows += [_row(r) for r in run.records]
    results = {
        "kind": KIND,
        "meta": {
            "machine": f"{platform.node()} ({platform.machine()}, {platform.system()})",
            "workload": {"file": section.workload, "prompt": section.prompt,
                         "emails": len(workload.emails), "digest": workload.digest},
            "settings": {k: getattr(settings, k) for k in settings.__dataclass_fields__},
            "timing": TIMING,
        },
        "endpoints": endpoints,
    }  # fmt: skip
    write_json(results_path(layout), results)
    write_json(layout.metrics, flat_metrics(results))
    write_text(layout.data / "requests.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    write_summary(layout, results)
    return results


def _endpoint_results(identity: dict[str, Any], tokenizer: str, run: SweepRun) -> dict[str, Any]:
    records = run.records
    levels: dict[str, Any] = {}
    for level in dict.fromkeys(r.level for r in records):
        mine = [r for r in records if r.level == level]
        repeats = sorted({r.repeat for r in mine})
        per_repeat = [
            metrics.summarize_repeat([r for r in mine if r.repeat == k], run.loop_lag_ms[level, k])
            for k in repeats
        ]
        levels[str(level)] = metrics.summarize_level(per_repeat)
    answered = [r for r in records if r.answered]
    return {
        "identity": identity,
        "tokenizer": tokenizer,
        "token_counts": metrics.token_sources(records),
        "warmup_excluded": run.warmed,
        "levels": levels,
        "accuracy": metrics.accuracy(sum(r.label == r.expected for r in answered), len(answered)),
        "errors": [r.error for r in records if r.error][:5],
    }


def _row(r: metrics.RequestRecord) -> dict[str, Any]:
    return {
        "endpoint": r.endpoint, "level": r.level, "repeat": r.repeat, "email": r.email,
        "expected": r.expected, "label": r.label, "ttft_ms": r.ttft_ms,
        "latency_ms": r.latency_ms, "output_tokens": r.output_tokens,
        "token_source": r.token_source, "tokens_per_s": r.tokens_per_s,
        "attempts": r.attempts, "error": r.error, "reply": r.reply,
    }  # fmt: skip


def flat_metrics(results: Mapping[str, Any]) -> dict[str, Any]:
    """{endpoint: {level: {figure: mean}}, accuracy}: what DVC and MLflow show."""
    flat: dict[str, Any] = {"kind": KIND}
    for name, run in results["endpoints"].items():
        block: dict[str, Any] = {"accuracy": run["accuracy"]["value"]}
        for level, figures in run["levels"].items():
            block[f"c{level}"] = {f: figures[f]["value"] for f in metrics.FIGURES} | {
                "errors": figures["errors"], "retries": figures["retries"],
                "accuracy": figures["accuracy"]["value"], "client_bound": figures["client_bound"],
            }  # fmt: skip
        flat[name] = block
    return flat


def summary_lines(results: Mapping[str, Any]) -> list[str]:
    """One line per endpoint and level, for the terminal."""
    lines = []
    for name, run in results["endpoints"].items():
        for level, f in run["levels"].items():
            tokens = f["output_tokens_per_s"]["value"]
            shown = f"{tokens:.0f} output tok/s" if tokens is not None else "output tok/s n/a"
            mark = " (client-bound)" if f["client_bound"] else ""
            lines.append(
                f"{name} c{level}{mark}: TTFT p50 {_ms(f['ttft_ms.p50'])}, latency p95 "
                f"{_ms(f['latency_ms.p95'])}, {shown}, {f['requests_per_s']['value'] or 0:.1f} "
                f"req/s, accuracy {_ratio(f['accuracy']['value'])}, {f['errors']} error(s), "
                f"{f['retries']} retr{'y' if f['retries'] == 1 else 'ies'}"
            )
    return lines


def coverage(results: Mapping[str, Any]) -> Coverage:
    """Failed requests are the endpoint's fault, never a figure: `N of M requests unmeasured:
    <first error>`; every request failed: the run exits 3 (agenteval.measured)."""
    levels = [f for run in results["endpoints"].values() for f in run["levels"].values()]
    total, failed = sum(f["requests"] for f in levels), sum(f["errors"] for f in levels)
    errors = (e for run in results["endpoints"].values() for e in run["errors"])
    return Coverage(failed, total, first_reason(errors, "unknown"), "requests")


def _ms(figure: Mapping[str, Any]) -> str:
    return "n/a" if figure["value"] is None else f"{figure['value']:.0f} ms"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def tracked(layout: Layout) -> tuple[dict[str, Any], list[Path]]:
    """The MLflow run's config (the first endpoint's kind and model) and files logged."""
    results = json.loads(results_path(layout).read_text(encoding="utf-8"))
    first = next(iter(results["endpoints"].values()))["identity"]
    config = {"target": {"kind": first["kind"], "model": first["model"]}}
    return config, [results_path(layout), layout.reports / "summary.md"]
