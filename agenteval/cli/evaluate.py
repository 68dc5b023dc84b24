"""`agenteval validate` and `agenteval run`: check the inputs, run an evaluation."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval.cli.common import EXIT_INVALID, EXIT_STOPPED, fail, load_params

if TYPE_CHECKING:
    from agenteval.layout import Layout


def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Scenario files or folders.")] = None,
    root: Annotated[Path, typer.Option(help="Repository root for relative paths.")] = Path("."),
    manifest: Annotated[Path | None, typer.Option(help="Corpus manifest.")] = None,
) -> None:
    """Check scenario files and the corpus manifest; exit 2 on any error."""
    from agenteval.suite.validate import validate as run_validation

    result = run_validation(paths or [], root=root.resolve(), manifest_path=manifest)
    for problem in result.problems:
        typer.echo(str(problem), err=problem.severity == "error")
    n_err = sum(p.severity == "error" for p in result.problems)
    n_warn = len(result.problems) - n_err
    typer.echo(
        f"{len(result.scenarios)} scenario(s) read: {n_err} error(s), {n_warn} warning(s)",
        err=True,
    )
    if result.drafts:
        typer.echo(
            f"{len(result.drafts)} draft(s) under a drafts/ folder left out (never run unless "
            "named; `agenteval validate FILE` checks one, `agenteval promote FILE` adopts it)",
            err=True,
        )
    if n_err:
        raise typer.Exit(EXIT_INVALID)


def run(
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Only this id.")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", help="Only this.")] = None,
    tier: Annotated[
        str | None, typer.Option(help="Only this lane of eval/tiers.yaml: smoke, full, backlog.")
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory (default runs/<time>).")] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Finish an interrupted run in this directory.")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """suite -> infer -> judge -> score -> report, into one run directory."""
    from agenteval.controls.load import ControlsError
    from agenteval.fileio import read_json, write_json
    from agenteval.judging import JudgingStopped
    from agenteval.layout import Layout
    from agenteval.pipeline import run_evaluation
    from agenteval.suite.build import SuiteError

    root = Path.cwd().resolve()
    if resume is not None:
        saved = resume / "params.json"
        if not saved.is_file():
            fail([f"{saved}: no saved params; is this an agenteval run directory?"])
        params = read_json(saved)
        out = resume
    else:
        # --tier is suite.tier: the typed params check its value before any work starts.
        sets = list(set_ or []) + ([f"suite.tier={tier}"] if tier is not None else [])
        params = load_params(params_file, sets)
        if scenario:
            params["suite"]["ids"] = list(scenario)
        if category:
            params["suite"]["categories"] = list(category)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        out = out or Path("runs") / stamp
        write_json(out / "params.json", params)
    try:
        layout = Layout.run_dir(root, out)
        result = run_evaluation(params, layout, progress=progress and sys.stderr.isatty())
    except (SuiteError, ControlsError) as exc:
        fail([str(p) for p in exc.problems])
        return
    except JudgingStopped as exc:
        fail([str(exc), f"resume with: agenteval run --resume {out}"], EXIT_STOPPED)
        return
    except (ValueError, OSError, KeyError) as exc:  # configuration the run cannot start with
        fail([f"cannot run: {type(exc).__name__}: {exc}"])
        return
    s = result.scorecard.summary
    typer.echo(
        f"{s.total} run(s): {s.passed} passed, {s.failed} failed, "
        f"{s.total - s.passed - s.failed - s.blocked} unmeasured; "
        f"judged pass rate {s.judged_pass_rate}, avg score {s.avg_score}"
    )
    typer.echo(f"reports in {out}/ (scorecard.json, summary.md, metrics.json)")
    _track(params, layout)
    if result.stop_reason:
        fail(
            [
                f"run stopped early: {result.stop_reason}",
                f"resume with: agenteval run --resume {out}",
            ],
            EXIT_STOPPED,
        )


def _track(params: dict[str, Any], layout: Layout) -> None:
    """Log the run to MLflow unless tracking.enabled is false."""
    if not (params.get("tracking") or {}).get("enabled", True):
        return
    from agenteval.tracking.run import log_evaluation
    from agenteval.tracking.store import TrackingError

    try:
        result = log_evaluation(layout, params)
    except TrackingError as exc:
        fail([f"MLflow logging failed: {exc}"], 1)
        return
    if result is not None:
        verb = "logged" if result.created else "already logged as"
        typer.echo(f"MLflow: {verb} run {result.run_id} ({result.tracking_uri})")


def register(app: typer.Typer) -> None:
    app.command()(validate)
    app.command()(run)
