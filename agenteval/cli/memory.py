"""`agenteval memory`: does an agent's memory keep up with a person over months of chats?

Thin: the memory benchmark's steps (`run`, `gate`, `track`, `list`) run through
agenteval.benchmarks.runner as `python -m stages.benchmark memory STEP` runs them. `run`
exits 0 when done (and the gate, if asked, passed), 1 when the gate found a regression or the
memory server failed (nothing is written then), 2 on invalid input or an incomparable
baseline, 3 when the model endpoint ran out of quota.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.bench import gate_baseline, run_benchmark
from agenteval.cli.common import fail

NAME = "memory"
DEFAULT_PARAMS = Path("pipelines/memory/params.yaml")
app = typer.Typer(
    help="Memory benchmark: chats over months, probes at points in time.", no_args_is_help=True
)
SetOption = Annotated[list[str] | None, typer.Option("--set", help="key=value override.")]


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
        Path | None, typer.Option(help="Output folder (default runs/memory-<time>).")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = DEFAULT_PARAMS,
    set_: SetOption = None,
    track: Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow.")] = False,
) -> None:
    """Run every scenario through the memory under test; write results.json and report.md."""
    if suite is not None and suite not in ("pr", "full"):
        fail([f"--suite: must be pr or full, got {suite!r}"])
    options: dict[str, tuple[str, Any]] = {}
    if suite is not None:
        options["memory.suite"] = ("--suite", suite)
    if scenario:
        options["memory.ids"] = ("--scenario", list(scenario))
    if gate is not None:  # the gate step's baseline: read and checked before any work
        gate_baseline(gate, NAME)
        options["memory.baseline"] = ("--gate", str(gate))
    run_benchmark(NAME, ("run",), params_file, (list(set_ or []), options), out, track,
                  (None, None), ("gate",) if gate is not None else ())  # fmt: skip


@app.command("gate")
def gate_command(
    results: Annotated[Path, typer.Argument(help="A run's results.json (or its folder).")],
    baseline: Annotated[Path, typer.Option(help="The baseline results.json.")],
) -> None:
    """Compare a finished run with a baseline, check by check (exit 1: a check regressed);
    the verdict is written beside it as gate.json, as the pipeline's gate step writes it."""
    folder = results if results.is_dir() else results.parent
    if not (folder / "results.json").is_file():
        fail([f"{results}: no results.json of a memory run"])
    options = {"memory.baseline": ("--baseline", str(baseline))}
    _step("gate", DEFAULT_PARAMS, [], options, folder)


@app.command("list")
def list_scenarios(
    params_file: Annotated[Path, typer.Option("--params")] = DEFAULT_PARAMS,
    set_: SetOption = None,
) -> None:
    """List (and check) the memory scenarios: what each one stresses."""
    _step("list", params_file, list(set_ or []), {}, None)


def _step(
    step: str,
    params_file: Path,
    sets: list[str],
    options: dict[str, tuple[str, Any]],
    reports: Path | None,
) -> None:
    """One step of the memory benchmark on `reports` (None: a step that writes nothing)
    through the runner the stages use; its status is the command's."""
    from agenteval.benchmarks import base, runner
    from agenteval.layout import Layout
    from agenteval.params import ParamsError

    bench = base.benchmark(NAME)
    try:
        params = runner.load(bench, params_file, sets, options)
    except ParamsError as exc:
        fail(str(exc).splitlines())
    root = Path.cwd().resolve()
    folder = reports or root / "reports"
    ctx, settings = base.context(params, root, None), base.settings_of(bench, params)
    status = runner.execute(base.step_of(bench, step), settings, ctx, Layout(root, folder, folder))
    if status:
        raise typer.Exit(status)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="memory")
