"""`agenteval validate` and `agenteval run`: check the inputs, run an evaluation."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval.cli.common import (
    EXIT_INVALID,
    EXIT_STOPPED,
    fail,
    load_params,
    select,
    suite_failure,
    writable_folder,
)

if TYPE_CHECKING:
    from agenteval.layout import Layout
    from agenteval.tracking.live import LiveOutcome


STRICT_HELP = (
    "Also refuse what the reference format allows: documents without a manifest entry, "
    "sub-folder documents not on disk."
)


def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Scenario files or folders.")] = None,
    root: Annotated[Path, typer.Option(help="Repository root for relative paths.")] = Path("."),
    manifest: Annotated[Path | None, typer.Option(help="Corpus manifest.")] = None,
    strict: Annotated[bool, typer.Option(help=STRICT_HELP)] = False,
) -> None:
    """Check scenario files and the corpus manifest; exit 2 on any error."""
    from agenteval.suite.validate import validate as run_validation

    result = run_validation(paths or [], root=root.resolve(), manifest_path=manifest, strict=strict)
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
    agent_model: Annotated[
        str | None,
        typer.Option(
            help="Pin (run.agent_model): discard as INFRA_ERROR any unit whose agent reports "
            "another model. It does not choose the model."
        ),
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
    strict: Annotated[
        bool, typer.Option(help="Refuse the run if a selected scenario file is invalid.")
    ] = False,
) -> None:
    """suite -> infer -> judge -> score -> report, into one run directory.

    An invalid scenario file is skipped and listed, and the run exits 2 at the end
    (unless --strict, which refuses before anything runs)."""

    root = Path.cwd().resolve()
    if resume is not None:
        params, out = _saved_params(resume), resume
        _outside_library(params, out, "--resume")
    else:
        # --tier is suite.tier: the typed params check its value before any work starts.
        options = {
            "suite.tier": ("--tier", tier),
            "run.agent_model": ("--agent-model", agent_model),
        }
        params = load_params(
            params_file, list(set_ or []), {k: v for k, v in options.items() if v[1] is not None}
        )
        out = _new_run_dir(params, scenario, category, strict, out)
    from agenteval import heap
    from agenteval.layout import Layout
    from agenteval.pipeline import run_evaluation

    heap.settle()  # the modules are loaded: the conversations are what comes and goes
    from agenteval.tracking.live import LiveTraces

    layout = Layout.run_dir(root, out)
    # MLflow loads, and each conversation's traces are written, while the evaluation waits
    # on its endpoint (tracking.live).
    live = LiveTraces.start(params, layout)
    graded = live.graded if live is not None else None
    try:
        result = run_evaluation(params, layout, progress and sys.stderr.isatty(), graded=graded)
    except BaseException as exc:
        if live is not None:
            live.abandon()
        _run_failed(exc, out, bool(scenario))
        raise
    _print_outcome(result, out)
    _track(params, layout, out, live.close() if live is not None else None)
    if result.retry and not result.stop_reason:
        typer.echo(f"{result.retry}: send again with: agenteval run --resume {out}", err=True)
    if result.stop_reason:  # stopped early is resumable (3), whatever it measured so far
        fail(
            [
                f"run stopped early: {result.stop_reason}",
                f"resume with: agenteval run --resume {out}",
            ],
            EXIT_STOPPED,
        )
    _finish(result.scorecard, out)


def _new_run_dir(
    params: dict[str, Any],
    scenario: list[str] | None,
    category: list[str] | None,
    strict: bool,
    out: Path | None,
) -> Path:
    """The selection and --strict applied to `params`, written as the new run's params.json
    (default folder runs/<time>); the folder, checked writable before any work."""
    from agenteval.fileio import write_json

    select(params, scenario, category)
    if strict:
        params["suite"]["strict"] = True
    out = out or Path("runs") / datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    _outside_library(params, out, "--out")
    writable_folder("--out", out)
    write_json(out / "params.json", params)
    return out


def _outside_library(params: dict[str, Any], out: Path, option: str) -> None:
    """Refuse before any work a run folder at, inside or around the agent's library."""
    from agenteval.targets.fence import FenceError, refuse_run_dir

    try:
        refuse_run_dir(params, Path.cwd().resolve(), out, option)
    except FenceError as exc:
        fail([str(exc)])


def _print_outcome(result: Any, out: Path) -> None:
    """The run's headline, where its reports are, a split overlap a pin left, the executor."""
    s = result.scorecard.summary
    typer.echo(
        f"{s.total} run(s): {s.passed} passed, {s.failed} failed, "
        f"{s.total - s.passed - s.failed - s.blocked} unmeasured; "
        f"judged pass rate {s.judged_pass_rate}, avg score {s.avg_score}"
    )
    typer.echo(f"reports in {out}/ (scorecard.json, summary.md, metrics.json)")
    split = result.scorecard.config.get("split") or {}
    if split.get("overlap"):  # a pin keeps scenarios sharing an answer apart
        from agenteval.suite.build import split_lines

        for line in split_lines(split):
            typer.echo(line, err=True)
    if result.execution is not None and result.execution.executor != "local":
        typer.echo(result.execution.line())


def _saved_params(resume: Path) -> dict[str, Any]:
    """The params an interrupted run saved in its directory (exit 2 if there are none)."""
    from agenteval.fileio import read_json

    saved = resume / "params.json"
    if not saved.is_file():
        fail([f"{saved}: no saved params; is this an agenteval run directory?"])
    found: dict[str, Any] = read_json(saved)
    return found


def _run_failed(exc: BaseException, out: Path, picked: bool) -> None:
    """Exit with the message a failed run deserves (returns for anything unexpected)."""
    from agenteval.controls.load import ControlsError
    from agenteval.judging import JudgingStopped
    from agenteval.runlock import EvalLocked
    from agenteval.suite.build import SuiteError
    from agenteval.targets.base import AgentFilesMissing

    if isinstance(exc, SuiteError):
        suite_failure(exc, picked)
    if isinstance(exc, AgentFilesMissing):  # refused before any work, the setting named
        fail([str(exc)])
    if isinstance(exc, ControlsError):  # the mixed-in controls (judge.controls_per_run)
        fail([str(p) for p in exc.problems])
    if isinstance(exc, JudgingStopped):
        fail([str(exc), f"resume with: agenteval run --resume {out}"], EXIT_STOPPED)
    if isinstance(exc, EvalLocked):
        fail([f"not started: {exc}", f"then: agenteval run --resume {out}"], EXIT_STOPPED)
    if isinstance(exc, ValueError | OSError | KeyError):  # a configuration it cannot run
        fail([f"cannot run: {type(exc).__name__}: {exc}"])


def _finish(card: Any, out: Path) -> None:
    """Exit 3 when nothing was measured (no scenario judged: every unit ERRORED or
    INFRA_ERROR, ...), 2 when selected scenario files were skipped as invalid; both after
    the reports and the MLflow run (FAILED then) are written. A partial run says how much
    it left unmeasured."""
    from agenteval.measured import scenario_coverage

    coverage = scenario_coverage(card.scenarios)
    if coverage.nothing:
        fail([coverage.refusal(), f"details in {out}/data/transcripts/"], EXIT_STOPPED)
    if line := coverage.line():
        typer.echo(line)
    if card.invalid:
        lines = [error for entry in card.invalid for error in entry.errors]
        lines.append(
            f"{len(card.invalid)} invalid scenario file(s) skipped (listed in {out}/summary.md)"
        )
        fail(lines)


def audit(
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Only this id.")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", help="Only this.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
) -> None:
    """List the scenarios the agent's declared limits (target.limits) make impossible.

    No model is called. Those scenarios are scored BLOCKED_BY_ARCHITECTURE, capped like FAIL.
    """
    from agenteval.schema.params import AgentLimits
    from agenteval.suite.audit import blocked_reasons
    from agenteval.suite.build import SuiteError, build_suite

    params = load_params(params_file, list(set_ or []))
    select(params, scenario, category)
    limits = AgentLimits.model_validate(params["target"].get("limits") or {})
    declared = limits.model_dump(exclude_none=True)
    try:
        suite = build_suite(params, Path.cwd().resolve())
    except SuiteError as exc:
        suite_failure(exc, bool(scenario))
    blocked = 0
    for item in suite.items:
        found = blocked_reasons(item.scenario, limits)
        blocked += bool(found)
        for entry in found:
            typer.echo(f"BLOCKED {item.scenario.id}: {entry.reason} (needs {entry.needs})")
    shown = ", ".join(f"{k}={v}" for k, v in declared.items()) or "none declared"
    typer.echo(
        f"{blocked} of {len(suite.items)} scenario(s) blocked by the agent's limits ({shown})"
    )
    if suite.invalid:
        typer.echo(f"{len(suite.invalid)} invalid scenario file(s) not audited", err=True)


def _track(params: dict[str, Any], layout: Layout, out: Path, live: LiveOutcome | None) -> None:
    """Log the run to MLflow unless tracking.enabled is false (into `live`'s provisional
    run, whose traces were written while the run went on)."""
    from agenteval.tracking.run import log_evaluation
    from agenteval.tracking.store import TrackingError

    try:
        result = log_evaluation(layout, params, live=live)
    except TrackingError as exc:
        # The results are on disk; a resumed run has nothing left to run and only logs.
        again = f"the results are kept: once the store is fixed, `agenteval run --resume {out}`"
        fail([f"MLflow logging failed: {exc}", f"{again} logs them"], 1)
        return
    if result is not None:
        verb = "logged" if result.created else "already logged as"
        typer.echo(f"MLflow: {verb} run {result.run_id} ({result.tracking_uri})")


def register(app: typer.Typer) -> None:
    app.command()(validate)
    app.command()(run)
    app.command()(audit)
