"""The `agenteval` command line. Thin: parse options, call the library, map errors to exits.

One short module per command group (evaluate, data, repro, gate, expectations, lifecycle,
serve, controls, bench, climb, sessions, tasks, ci, fix, memory); heavy modules are imported
inside commands so `agenteval --help` answers fast.
"""

from __future__ import annotations

import os
from typing import Annotated

import typer

from agenteval import __version__, heap, scratch
from agenteval.cli import (
    bench,
    bench_runs,
    ci,
    climb,
    controls,
    data,
    evaluate,
    expectations,
    fix,
    gate,
    judge,
    lifecycle,
    memory,
    repro,
    serve,
    sessions,
    simulator,
    tasks,
)

app = typer.Typer(
    help="Reproducible, noise-aware evaluation of LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agenteval {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Show MLflow's own INFO log lines.")
    ] = False,
) -> None:
    """Reproducible, noise-aware evaluation of LLM agents."""
    if verbose:  # read when MLflow is imported (tracking.store.QUIET_LOGGING otherwise)
        os.environ["MLFLOW_LOGGING_LEVEL"] = "INFO"


for group in (
    evaluate,
    data,
    repro,
    gate,
    expectations,
    lifecycle,
    serve,
    controls,
    bench,
    bench_runs,
    climb,
    sessions,
    tasks,
    ci,
    fix,
    memory,
    simulator,
    judge,
):
    group.register(app)


def main() -> None:
    heap.claim()  # the console script: agenteval's own process (see agenteval.heap)
    scratch.end_on_signals()  # SIGTERM unwinds: temporary copies go, state stays resumable
    try:
        app()
    except SystemExit as exc:
        # click ends a write to a closed pipe with a silent status 1: say it, status 2.
        if exc.code == 1 and scratch.stdout_closed():
            scratch.output_closed()
        raise
