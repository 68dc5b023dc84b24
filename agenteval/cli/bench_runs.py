"""`agenteval bench throughput` and `agenteval bench code-retrieval`.

Thin: the benchmarks package does the work, each step through agenteval.benchmarks.runner as
`python -m stages.benchmark` runs it. Exit codes: 0 done (or the gate holds); 1 the
gate fails; 2 invalid input, refused before any request; 3 stopped by the endpoint (quota,
credentials) or a baseline that is not comparable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.bench import SetOption, run_benchmark
from agenteval.cli.common import fail

group = typer.Typer(help="Endpoint throughput and code retrieval benchmarks.", no_args_is_help=True)

GateOption = Annotated[
    Path | None, typer.Option("--gate", help="Gate against this baseline results.json.")
]
ToleranceOption = Annotated[
    float | None, typer.Option(help="Gate: allowed change (default: the benchmark's own).")
]
TrackOption = Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow.")]
ParamsOption = Annotated[Path, typer.Option("--params")]


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
    options = _endpoint_options(endpoint_url, model, protocol, api_key_env, local)
    if concurrency is not None:
        options["throughput.concurrency"] = ("--concurrency", _levels(concurrency))
    if repeats is not None:
        options["throughput.repeats"] = ("--repeats", repeats)
    run_benchmark("throughput", ("run",), params_file, (list(set_ or []), options), out, track,
                  (baseline, tolerance))  # fmt: skip


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
    run_benchmark("code_retrieval", ("evaluate",), params_file, (list(set_ or []), None), out,
                  track, (baseline, tolerance))  # fmt: skip


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="bench")
