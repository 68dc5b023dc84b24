"""Benchmark commands: `agenteval qa`, `agenteval retrieval`, `agenteval gate RUN --baseline`.

Thin: the benchmarks package does the work (`agenteval.benchmarks.*`). Exit codes: 0 done
(or the gate holds); 1 the gate fails; 2 invalid input; 3 stopped early and resumable
or nothing measured (qa), or the baseline is not comparable (gate).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval.cli.common import (
    EXIT_INVALID,
    default_params_name,
    fail,
    readable_file,
    writable_folder,
)

if TYPE_CHECKING:
    from agenteval.layout import Layout

EXIT_GATE_FAILED = 1
EXIT_NOT_COMPARABLE = 3

SetOption = Annotated[
    list[str] | None, typer.Option("--set", help="Override a params value: key=value.")
]


def _out(out: Path | None, kind: str) -> Path:
    return out or Path("runs") / f"{kind}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def _problems(exc: Exception) -> list[str]:
    return [str(p) for p in getattr(exc, "problems", [])] or [str(exc)]


def qa(
    k: Annotated[int | None, typer.Option("--k", help="Attempts per task (qa.k).")] = None,
    set_: SetOption = None,
    out: Annotated[Path | None, typer.Option(help="Run folder (default runs/qa-<time>).")] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("pipelines/qa/params.yaml"),
    track: Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow.")] = True,
) -> None:
    """Two-stage QA benchmark: the agent answers, then the pre-check and A/B/C judge grade."""
    options = {"qa.k": ("--k", k)} if k is not None else None
    run_benchmark("qa", ("tasks", "infer", "judge", "score"), params_file,
                  (list(set_ or []), options), out, track, (None, None))  # fmt: skip


def retrieval(
    set_: SetOption = None,
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default runs/retrieval-<time>).")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path(
        "pipelines/retrieval/params.yaml"
    ),
    baseline: Annotated[
        Path | None, typer.Option("--gate", help="Gate against this results.json.")
    ] = None,
    tolerance: Annotated[
        float | None, typer.Option(help="Allowed drop (default 0.02, widened on small sets).")
    ] = None,
) -> None:
    """Retrieval benchmark: recall@k, MRR, answers and misses, hard cases (and the gate)."""
    run_benchmark("retrieval", ("answer", "evaluate"), params_file, (list(set_ or []), None),
                  out, False, (baseline, tolerance))  # fmt: skip


def run_benchmark(
    name: str,
    steps: tuple[str, ...],
    params_file: Path,
    load: tuple[list[str], dict[str, tuple[str, Any]] | None],
    out: Path | None,
    track: bool,
    gate: tuple[Path | None, float | None],
    after: tuple[str, ...] = (),
) -> None:
    """A registered benchmark's run from the command line: its params loaded and checked,
    then its `steps`, with `track` its `track` step, then the `after` steps (a benchmark's
    own gate step), each through the runner the stages use (one mapping of failures to
    statuses); then the gate against the --gate baseline."""
    from agenteval.benchmarks import base, runner
    from agenteval.params import ParamsError

    bench = base.benchmark(name)
    if not default_params_name(params_file) and not params_file.is_file():
        fail([f"--params {params_file}: no such file"])
    try:
        params = runner.load(bench, params_file, *load)
    except ParamsError as exc:
        fail(str(exc).splitlines())
    baseline, tolerance = gate
    gate_baseline(baseline, name)
    layout = _run_layout(out, name)
    settings, ctx = (
        base.settings_of(bench, params),
        base.context(params, layout.root, None, sys.stderr.isatty()),
    )
    for chosen in (*steps, *(("track",) if track else ()), *after):
        status = runner.execute(base.step_of(bench, chosen), settings, ctx, layout)
        if status:
            raise typer.Exit(status)
        if chosen == steps[-1]:
            typer.echo(f"reports in {layout.reports}/ ({_written(layout.reports)})")
    if baseline is not None:
        benchmark_gate(layout.reports, baseline, tolerance)


def _written(reports: Path) -> str:
    """The report files a run wrote, in the order a reader opens them."""
    names = ("results.json", "metrics.json", "summary.md", "report.md", "details/")
    return ", ".join(n for n in names if (reports / n.rstrip("/")).exists())


def _run_layout(out: Path | None, kind: str) -> Layout:
    """The run folder of --out (or its default), refused before any work when unwritable."""
    from agenteval.layout import Layout

    folder = _out(out, kind)
    writable_folder("--out", folder)
    return Layout.run_dir(Path.cwd().resolve(), folder)


def gate_baseline(baseline: Path | None, kind: str) -> None:
    """The --gate file read and checked before any work (a 230 s run then refused for a file
    that was never a baseline): exit 2 naming the option, the file and what it is."""
    if baseline is None:
        return
    from agenteval.benchmarks import gate as gating

    readable_file("--gate", baseline)
    try:
        found = gating.load_run(baseline).get("kind")
    except gating.GateInputError as exc:
        fail([f"--gate {baseline}: {exc}"])
    if found != kind:
        fail([f"--gate {baseline}: a {found} result, not a {kind} baseline"])


def benchmark_gate(run: Path, baseline: Path, tolerance: float | None) -> None:
    """`agenteval gate RUN --baseline FILE`: exit 1 when the run fell beyond the tolerance
    (None: the benchmark kind's own default), 3 when the baseline is not comparable."""
    from agenteval.benchmarks import gate as gating

    try:
        result = gating.gate(gating.load_run(run), gating.load_run(baseline), tolerance)
    except gating.GateInputError as exc:
        fail([str(exc)], EXIT_INVALID)
    except gating.GateRefused as exc:
        fail([f"not comparable: {exc}"], EXIT_NOT_COMPARABLE)
    except ValueError as exc:
        fail([str(exc)], EXIT_INVALID)
    for line in result.lines():
        typer.echo(line)
    if not result.passed:
        raise typer.Exit(EXIT_GATE_FAILED)


def register(app: typer.Typer) -> None:
    app.command()(qa)
    app.command()(retrieval)
    # `gate RUN --baseline FILE` is the benchmark branch of the one `gate` command
    # (agenteval.cli.expectations).
