"""`agenteval bench throughput` and `agenteval bench code-retrieval`.

Thin: the benchmarks package does the work. Exit codes: 0 done (or the gate holds); 1 the
gate fails; 2 invalid input, refused before any request; 3 stopped by the endpoint (quota,
credentials) or a baseline that is not comparable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval.cli.bench import SetOption, _out, benchmark_gate, gate_baseline
from agenteval.cli.common import (
    EXIT_STOPPED,
    fail,
    load_params,
    say_coverage,
    writable_folder,
)

if TYPE_CHECKING:
    from agenteval.layout import Layout
    from agenteval.tracking.run import TrackResult

group = typer.Typer(help="Endpoint throughput and code retrieval benchmarks.", no_args_is_help=True)

GateOption = Annotated[
    Path | None, typer.Option("--gate", help="Gate against this baseline results.json.")
]
ToleranceOption = Annotated[
    float | None, typer.Option(help="Gate: allowed change (default: the benchmark's own).")
]
TrackOption = Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow.")]
ParamsOption = Annotated[Path, typer.Option("--params")]


def _report(
    summary: Iterable[str],
    layout: Layout,
    track: Callable[[], TrackResult | None] | None,
    baseline: Path | None,
    tolerance: float | None,
) -> None:
    """What both benchmarks say after a run: the summary, where the reports are, the MLflow
    run when `track` logs one, then the gate against `baseline` when one is given."""
    for line in summary:
        typer.echo(line)
    typer.echo(f"reports in {layout.reports}/ (results.json, metrics.json, summary.md)")
    if track is not None:
        result = track()
        if result is not None:
            typer.echo(f"MLflow: run {result.run_id} ({result.tracking_uri})")
    if baseline is not None:
        benchmark_gate(layout.reports, baseline, tolerance)


def _endpoint_options(
    url: str | None, model: str | None, protocol: str, key_env: str | None, local: bool
) -> dict[str, tuple[str, Any]]:
    """The endpoint the options name, as typed params values (never pasted into YAML)."""
    if local and url:
        fail(["--local and --endpoint-url name two endpoints; give one"])
    if local:
        return {"throughput.endpoints": ("--local", [{"name": "local", "kind": "local"}])}
    if url is None:
        if model:
            fail(["--model needs --endpoint-url"])
        return {}
    if not model:
        fail(["--endpoint-url needs --model"])
    spec: dict[str, Any] = {"name": model, "kind": "url", "model": model, "base_url": url,
                            "protocol": protocol}  # fmt: skip
    if key_env:
        spec["api_key_env"] = key_env
    return {"throughput.endpoints": ("--endpoint-url", [spec])}


def _levels(concurrency: str) -> list[int | str]:
    """--concurrency 1,4,16: each level an integer, or the text the params check names."""
    levels: list[int | str] = []
    for part in concurrency.split(","):
        text = part.strip()
        levels.append(int(text) if text.lstrip("-").isdigit() else text)
    return levels


@group.command()
def throughput(
    endpoint_url: Annotated[
        str | None, typer.Option(help="Measure this endpoint (with --model).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model name sent to --endpoint-url.")] = None,
    protocol: Annotated[str, typer.Option(help="openai | anthropic")] = "openai",
    api_key_env: Annotated[
        str | None, typer.Option(help="NAME of the variable holding the key.")
    ] = None,
    local: Annotated[bool, typer.Option("--local", help="Measure the local model.")] = False,
    concurrency: Annotated[
        str | None, typer.Option(help="Levels, comma-separated (default 1,4,16,64).")
    ] = None,
    repeats: Annotated[int | None, typer.Option(help="Repeats of each level.")] = None,
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default runs/throughput-<time>).")
    ] = None,
    params_file: ParamsOption = Path("pipelines/throughput/params.yaml"),
    baseline: GateOption = None,
    tolerance: ToleranceOption = None,
    track: TrackOption = True,
) -> None:
    """Email triage streamed at a sweep of concurrency levels: TTFT, latency p50/p95/p99,
    tokens/s and requests/s per level, errors, retries and triage accuracy."""
    from agenteval.benchmarks.throughput.steps import coverage, step_run, step_track, summary_lines
    from agenteval.benchmarks.throughput.workload import WorkloadError
    from agenteval.llm import LLMError

    options = _endpoint_options(endpoint_url, model, protocol, api_key_env, local)
    if concurrency is not None:
        options["throughput.concurrency"] = ("--concurrency", _levels(concurrency))
    if repeats is not None:
        options["throughput.repeats"] = ("--repeats", repeats)
    params = load_params(params_file, list(set_ or []), options)
    gate_baseline(baseline, "throughput")
    layout = _run_layout(out, "throughput")
    try:
        results = step_run(params, layout)
    except WorkloadError as exc:
        fail([str(p) for p in exc.problems])
    except LLMError as exc:
        fail([f"stopped: {exc}"], EXIT_STOPPED)
    except (ValueError, OSError, RuntimeError) as exc:
        fail([f"cannot run: {type(exc).__name__}: {exc}"])
    say_coverage(coverage(results), summary_lines(results))
    log_run = (lambda: step_track(params, layout, None)) if track else None
    _report([], layout, log_run, baseline, tolerance)


@group.command("code-retrieval")
def code_retrieval(
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default runs/code_retrieval-<time>).")
    ] = None,
    params_file: ParamsOption = Path("pipelines/code_retrieval/params.yaml"),
    baseline: GateOption = None,
    tolerance: ToleranceOption = None,
    track: TrackOption = True,
) -> None:
    """The code index over real fixes of pinned histories: file recall@1/5/10, function
    recall@5/10 and MRR against a git grep baseline, incremental replay, damaged indexes and
    hostile trees (pass / fail / not-run)."""
    from agenteval.benchmarks.code_retrieval.history import HistoryError
    from agenteval.benchmarks.code_retrieval.steps import (
        PinsError,
        coverage,
        step_evaluate,
        step_track,
        summary_lines,
    )

    params = load_params(params_file, list(set_ or []))
    gate_baseline(baseline, "code_retrieval")
    layout = _run_layout(out, "code_retrieval")
    try:
        results = step_evaluate(params, layout)
    except PinsError as exc:
        fail([str(p) for p in exc.problems])
    except HistoryError as exc:
        fail([f"{params['code_retrieval']['commits']}: {exc}"])
    except (ValueError, OSError) as exc:
        fail([f"cannot run: {type(exc).__name__}: {exc}"])
    say_coverage(coverage(results), summary_lines(results))
    log_run = (lambda: step_track(params, layout, None)) if track else None
    _report([], layout, log_run, baseline, tolerance)


def _run_layout(out: Path | None, kind: str) -> Layout:
    """The run folder of --out (or its default), refused before any work when unwritable."""
    from agenteval.layout import Layout

    folder = _out(out, kind)
    writable_folder("--out", folder)
    return Layout.run_dir(Path.cwd().resolve(), folder)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="bench")
