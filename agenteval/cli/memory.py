"""`agenteval memory`: does an agent's memory keep up with a person over months of chats?

Thin: agenteval.benchmarks.memory does the work. `run` exits 0 when done (and the gate, if
asked, passed), 1 when the gate found a regression or the memory server failed (nothing is
written then), 2 on invalid input or an incomparable baseline, 3 when the model endpoint
ran out of quota.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval.cli.common import (
    EXIT_FAILED,
    EXIT_STOPPED,
    fail,
    load_params,
    say_coverage,
    writable_folder,
)

if TYPE_CHECKING:
    from agenteval.benchmarks.memory.gate import MemoryGate
    from agenteval.schema.memory import MemoryResults

EXIT_REGRESSED = 1
DEFAULT_PARAMS = Path("pipelines/memory/params.yaml")
app = typer.Typer(
    help="Memory benchmark: chats over months, probes at points in time.", no_args_is_help=True
)


def _params(
    params_file: Path, sets: list[str] | None, suite: str | None, ids: list[str] | None
) -> dict[str, Any]:
    if suite is not None and suite not in ("pr", "full"):
        fail([f"--suite: must be pr or full, got {suite!r}"])
    params = load_params(
        params_file, list(sets or []), {"memory.suite": ("--suite", suite)} if suite else {}
    )
    if ids:
        params["memory"]["ids"] = list(ids)
    return params


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _summary(results: Any) -> None:
    for s in results.scenarios:
        shares = ", ".join(
            f"{k.replace('_', ' ')} {_pct(v)}" for k, v in s.metrics.items() if v is not None
        )
        typer.echo(
            f"{s.id}: {s.passed}/{s.passed + s.failed + s.unmeasured} checks passed ({shares})"
        )
    c = results.counts
    typer.echo(
        f"all: {c['passed']}/{c['checks']} checks passed, {c['failed']} failed, "
        f"{c['unmeasured']} unmeasured over {c['probes']} probes and {c['chats']} chats"
    )


def _say_verdict(verdict: MemoryGate, current: MemoryResults) -> None:
    """The gate's lines; a regression ends the command with EXIT_REGRESSED."""
    for line in verdict.lines(current):
        typer.echo(line)
    if not verdict.passed:
        raise typer.Exit(EXIT_REGRESSED)


@app.command("run")
def run(
    suite: Annotated[
        str | None, typer.Option(help="pr (scripted, offline) or full (the model).")
    ] = None,
    scenario: Annotated[
        list[str] | None, typer.Option(help="Only this scenario id (repeatable).")
    ] = None,
    gate: Annotated[
        Path | None, typer.Option(help="Compare check by check with this results.json.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default runs/memory-<suite>-<time>).")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = DEFAULT_PARAMS,
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value override.")] = None,
    track: Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow.")] = False,
) -> None:
    """Run every scenario through the memory under test; write results.json and report.md."""
    import time

    from agenteval.benchmarks.memory.gate import GateRefused
    from agenteval.benchmarks.memory.gate import gate as compare
    from agenteval.benchmarks.memory.run import coverage, load_results, run_suite, write_outputs
    from agenteval.benchmarks.memory.scenarios import ScenarioError
    from agenteval.llm import QuotaExhausted
    from agenteval.memory.base import MemoryServerError

    params = _params(params_file, set_, suite, scenario)
    chosen = str(params["memory"]["suite"])
    baseline = None
    if gate is not None:
        try:
            baseline = load_results(gate)
        except ValueError as exc:
            fail([f"--gate: {exc}"])
    folder = out or Path("runs") / f"memory-{chosen}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"
    writable_folder("--out", folder)
    started = time.perf_counter()
    try:
        results = run_suite(params, Path.cwd().resolve(), chosen, params["memory"]["ids"])
    except ScenarioError as exc:
        fail([str(p) for p in exc.problems])
    except QuotaExhausted as exc:
        fail([f"stopped: {exc}"], EXIT_STOPPED)
    except MemoryServerError as exc:
        fail([f"the memory server failed, nothing was written: {exc}"], EXIT_FAILED)
    except (ValueError, OSError) as exc:
        fail(str(exc).splitlines())
    paths = write_outputs(results, folder)
    _summary(results)
    typer.echo(
        f"wall time {time.perf_counter() - started:.1f}s; outputs in {folder}/ "
        "(results.json, report.md, metrics.json)"
    )
    say_coverage(coverage(results))
    if track:
        from agenteval.benchmarks.memory.tracking import log_memory
        from agenteval.tracking.store import TrackingError

        try:
            tracked = log_memory(params, Path.cwd().resolve(), paths)
        except (TrackingError, ValueError) as exc:
            fail([f"tracking: {exc} (results are in {folder}/)"], EXIT_FAILED)
        if tracked is not None:
            typer.echo(
                f"MLflow: run {tracked.run_id} ({tracked.tracking_uri}), {tracked.traces} traces"
            )
    if baseline is not None:
        try:
            verdict = compare(results, baseline)
        except GateRefused as exc:
            fail([f"--gate {gate}: refused: {exc}"])
        _say_verdict(verdict, results)


@app.command("gate")
def gate_command(
    results: Annotated[Path, typer.Argument(help="A run's results.json (or its folder).")],
    baseline: Annotated[Path, typer.Option(help="The baseline results.json.")],
) -> None:
    """Compare a finished run with a baseline, check by check."""
    from agenteval.benchmarks.memory.gate import GateRefused, gate
    from agenteval.benchmarks.memory.run import load_results

    try:
        current, then = load_results(results), load_results(baseline)
        verdict = gate(current, then)
    except GateRefused as exc:
        fail([f"refused: {exc}"])
    except ValueError as exc:
        fail(str(exc).splitlines())
    _say_verdict(verdict, current)


@app.command("list")
def list_scenarios(
    params_file: Annotated[Path, typer.Option("--params")] = DEFAULT_PARAMS,
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value override.")] = None,
) -> None:
    """List (and check) the memory scenarios: what each one stresses."""
    from agenteval.benchmarks.memory.scenarios import ScenarioError, load_scenarios

    params = _params(params_file, set_, None, None)
    root = Path.cwd().resolve()
    try:
        loaded = load_scenarios(root / str(params["memory"]["scenarios"]), root)
    except ScenarioError as exc:
        fail([str(p) for p in exc.problems])
    for item in loaded:
        s = item.scenario
        last = max([c.at for c in s.chats] + [p.at for p in s.probes])
        span = f"{s.chats[0].at:%Y-%m-%d} to {last:%Y-%m-%d}"
        typer.echo(f"{s.id}: {s.title} ({len(s.chats)} chats, {len(s.probes)} probes, {span})")
        for stress in s.stresses:
            typer.echo(f"  - {stress}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="memory")
