"""Explicit acts on the DVC pipeline's results: `agenteval retry` and `agenteval track`.

No stage of dvc.yaml is always_changed, so a no-op `dvc repro` runs nothing. What those
flags once did on every repro is asked for here instead: sending again the units that may
succeed now, and logging the results into a store DVC cannot see (an emptied or another
MLflow store). Exit codes: 0 done · 1 MLflow refused the run · 2 no pipeline results here ·
otherwise the exit code of the `dvc repro` that failed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.common import fail, load_params

FORCED_INFER = ["dvc", "repro", "--force", "--single-item", "infer"]
REPRO = ["dvc", "repro"]


def retry(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List the units to send again; run nothing.")
    ] = False,
) -> None:
    """Send again the units whose transcript is missing or ended with a status in
    run.retry_statuses (INFRA_ERROR, ERRORED, TIMEOUT), and only those.

    Runs `dvc repro --force --single-item infer` (every final transcript is reused), then
    `dvc repro` for the stages after it, so dvc.lock records the new outputs."""
    from agenteval.layout import Layout, load_suite
    from agenteval.pending import pending_units

    root = Path.cwd().resolve()
    layout = Layout.repository(root)
    if not (root / "dvc.yaml").is_file() or not layout.suite.is_file():
        fail([f"{root}: no pipeline results here (dvc.yaml, data/suite.json): run `dvc repro`"])
    statuses = load_params(root / "params.yaml", [])["run"].get("retry_statuses") or []
    pending = pending_units(load_suite(layout), layout.transcripts, frozenset(statuses))
    for unit in pending:
        typer.echo(f"retry {unit}")
    if not pending:
        typer.echo(f"nothing to retry: no unit is missing or ended {', '.join(statuses)}")
        return
    typer.echo(f"{len(pending)} unit(s) to send again")
    if dry_run:
        return
    for command in _retry_commands(root):
        typer.echo(f"$ {' '.join(command)}")
        code = subprocess.call([sys.executable, "-m", *command], cwd=root)
        if code:
            raise typer.Exit(code)


def _retry_commands(root: Path) -> list[list[str]]:
    """Force inference only when DVC would not run it anyway: with a changed input, a plain
    repro runs it (and sends the same units), and forcing it first would send them twice."""
    done = subprocess.run(
        [sys.executable, "-m", "dvc", "status", "--json", "--with-deps", "infer"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        fail([f"dvc status failed: {done.stderr.strip() or done.stdout.strip()}"])
    if json.loads(lines[-1]):
        typer.echo("inference or its inputs changed since the last repro: `dvc repro` runs it")
        return [REPRO]
    return [FORCED_INFER, REPRO]


def track(
    tracking_uri: Annotated[
        str | None,
        typer.Option(
            "--tracking-uri",
            help="Log into this MLflow store (sqlite:///path.db, http://host:5000) instead "
            "of tracking.uri.",
        ),
    ] = None,
    experiment: Annotated[
        str | None, typer.Option(help="Experiment name (default: tracking.experiment).")
    ] = None,
    run: Annotated[
        Path | None,
        typer.Option("--run", help="A run directory of `agenteval run` (default: data/, reports/)"),
    ] = None,
    traces: Annotated[
        bool | None,
        typer.Option(
            "--traces/--no-traces",
            help="Every conversation as a trace, or none (default: tracking.traces).",
        ),
    ] = None,
) -> None:
    """Log the results on disk to MLflow, even with tracking.enabled false: the repository's
    last `dvc repro` (or a run directory) into tracking.uri or another store. A store that
    has this evaluation already (same run key) answers with that run, never a duplicate."""
    from agenteval.layout import Layout
    from agenteval.tracking.run import log_evaluation
    from agenteval.tracking.store import TrackingError

    root = Path.cwd().resolve()
    layout = Layout.repository(root) if run is None else Layout.run_dir(root, run)
    if not layout.scorecard.is_file():
        fail([f"{layout.scorecard}: no scorecard to log: run `dvc repro` (or `agenteval run`)"])
    settings = _params_of(root, run)
    settings["tracking"]["enabled"] = True  # asked for by name: log even if switched off
    try:
        result = log_evaluation(
            layout, settings, uri=tracking_uri, experiment=experiment, traces=traces
        )
    except TrackingError as exc:
        fail([f"MLflow logging failed: {exc}"], 1)
    assert result is not None  # enabled above
    verb = "logged" if result.created else "already logged as"
    typer.echo(
        f"{verb} run {result.run_id} in {result.tracking_uri} "
        f"(experiment {result.experiment_id}, {result.traces_logged} trace(s))"
    )


def _params_of(root: Path, run: Path | None) -> dict[str, Any]:
    """The repository's params.yaml, or the params a run directory saved."""
    if run is None:
        return load_params(root / "params.yaml", [])
    from agenteval.fileio import read_json

    saved = run / "params.json"
    if not saved.is_file():
        fail([f"{saved}: no saved params; is this an agenteval run directory?"])
    found: dict[str, Any] = read_json(saved)
    found.setdefault("tracking", {})
    return found


def register(app: typer.Typer) -> None:
    app.command()(retry)
    app.command()(track)
