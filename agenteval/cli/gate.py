"""The gate commands: `agenteval noise`, `agenteval compare`, `agenteval baseline save|show`.

Exit codes of `compare`: 0 no regression · 2 regression (or, with --require-complete, an
incomplete comparison: a unit either run left unmeasured, a baseline scenario missing) · 3 not
comparable (another agent model unless --allow-model-change, the instrument differs, or the
agent with --same-agent) · 4 an input could not be read. 2 is the regression code CI gates
key on, so an unreadable input gets its own code instead of passing for a regression; click's
own usage errors (a missing argument) still exit 2 before any of this runs.
`noise` and `baseline` exit 2 on bad input or a refused baseline, like the rest of the CLI.

Heavy modules (scipy, mlflow, matplotlib, the pipeline) are imported inside the commands.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.common import (
    EXIT_INVALID,
    EXIT_STOPPED,
    fail,
    load_params,
    select,
    suite_failure,
)

EXIT_BAD_INPUT = 4

baseline_app = typer.Typer(help="Save or show the committed baseline.", no_args_is_help=True)


def noise(
    runs: Annotated[int, typer.Option("--runs", help="Repeats of the configuration (>= 2).")] = 5,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Only this id.")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", help="Only this.")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default runs/noise-<time>).")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
) -> None:
    """Run one configuration R times with other seeds and write noise_floor.json."""
    from agenteval.gate.noise import measure_noise
    from agenteval.runlock import EvalLocked
    from agenteval.suite.build import SuiteError

    params = load_params(params_file, list(set_ or []))
    select(params, scenario, category)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = out or Path("runs") / f"noise-{stamp}"
    try:
        floor = measure_noise(params, runs, out, Path.cwd().resolve(), sys.stderr.isatty())
    except SuiteError as exc:
        suite_failure(exc, bool(scenario))
    except EvalLocked as exc:
        fail([f"not started: {exc}"], EXIT_STOPPED)
    except (ValueError, OSError, KeyError) as exc:
        fail([f"cannot measure noise: {type(exc).__name__}: {exc}"], EXIT_INVALID)
    _print_floor(floor, out)


def _print_floor(floor: dict[str, Any], out: Path) -> None:
    total = len(floor["scenarios"])
    typer.echo(
        f"{floor['runs']} runs x {floor['iterations']} iteration(s): "
        f"{floor['scenarios_flipping']} of {total} scenario(s) flipped PASS<->FAIL"
    )
    for name, spread in floor["run_metrics"].items():
        typer.echo(
            f"  {name}: min {spread['min']}, max {spread['max']}, SD {spread['sd']} "
            f"over {floor['runs']} runs"
        )
    typer.echo(f"noise floor: {out / 'noise_floor.json'} (use with compare --noise)")


def _load_noise(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        fail([f"{path}: not a readable noise floor ({exc})"], EXIT_BAD_INPUT)
    if not isinstance(data, dict) or "scenarios" not in data:
        fail([f"{path}: not a noise floor (write one with `agenteval noise`)"], EXIT_BAD_INPUT)
    floor: dict[str, Any] = data
    return floor


def compare(
    baseline: Annotated[str, typer.Argument(help="Run dir, scorecard file or MLflow run id.")],
    current: Annotated[str, typer.Argument(help="Run dir, scorecard file or MLflow run id.")],
    require_complete: Annotated[
        bool,
        typer.Option(
            help="Exit 2 if a baseline scenario is missing, or either run left a unit unmeasured."
        ),
    ] = False,
    allow_model_change: Annotated[
        bool,
        typer.Option(help="Compare runs whose agent reported different models (else exit 3)."),
    ] = False,
    same_agent: Annotated[
        bool, typer.Option(help="Exit 3 if the agent differs (regression gate, not A/B).")
    ] = False,
    noise_file: Annotated[
        Path | None, typer.Option("--noise", help="noise_floor.json from `agenteval noise`.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for compare.md/json and plots.")] = Path(
        "reports/compare"
    ),
    png: Annotated[bool, typer.Option(help="Also draw the per-category delta PNG.")] = True,
    pairwise: Annotated[
        bool,
        typer.Option(
            help="Ask the judge endpoint which reply is better, in both orders: "
            "win / tie / loss of CURRENT against BASELINE (two scenario runs, sessions "
            "outputs or tasks runs)."
        ),
    ] = False,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="With --pairwise: a params override.")
    ] = None,
) -> None:
    """Paired, noise-aware comparison. Exit 0 ok, 2 regression, 3 not comparable, 4 bad input."""
    if pairwise:
        _pairwise(Path(baseline), Path(current), list(set_ or []), out)
        return
    from agenteval.gate.compare import InputError, compare, load_side
    from agenteval.gate.report import verdict_line, write_outputs

    noise_floor = _load_noise(noise_file)
    try:
        base, cur = load_side(baseline), load_side(current)
    except InputError as exc:
        fail([str(exc)], EXIT_BAD_INPUT)
    result = compare(base, cur, require_complete=require_complete, same_agent=same_agent,
                     allow_model_change=allow_model_change, noise=noise_floor)  # fmt: skip
    write_outputs(result, out, png)
    typer.echo(f"{result.verdict} ({result.kind}); exit {result.exit_code}")
    for reason in result.reasons:
        typer.echo(f"  - {reason}")
    for endpoint in result.overall:
        typer.echo(verdict_line(endpoint))
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(f"details: {out / 'compare.md'}")
    raise typer.Exit(result.exit_code)


def _pairwise(run_a: Path, run_b: Path, sets: list[str], out: Path) -> None:
    from agenteval.cli.common import load_params
    from agenteval.fileio import write_json, write_text
    from agenteval.gate.pairwise import PairwiseInputError, compare_pairwise, render_pairwise

    params = load_params(Path("params.yaml"), sets)
    if not (params.get("judge") or {}).get("base_url"):
        why = "judge.base_url: --pairwise asks a model endpoint; name one (--set judge.base_url=)"
        fail([why], EXIT_BAD_INPUT)
    try:
        report = compare_pairwise(params, Path.cwd().resolve(), run_a, run_b)
    except (PairwiseInputError, ValueError, OSError) as exc:
        fail([str(exc)], EXIT_BAD_INPUT)
    write_json(out / "pairwise.json", report)
    write_text(out / "pairwise.md", render_pairwise(report))
    typer.echo(render_pairwise(report))
    typer.echo(f"details: {out / 'pairwise.md'}")


@baseline_app.command("save")
def baseline_save(
    run: Annotated[str, typer.Argument(help="Run dir, scorecard file or MLflow run id.")],
    dest: Annotated[Path, typer.Option(help="Baseline file.")] = Path(
        "eval/baselines/baseline.json"
    ),
) -> None:
    """Save a run (>= 3 iterations) as the baseline."""
    from agenteval.gate.baseline import BaselineError, save_baseline

    try:
        path = save_baseline(run, dest)
    except BaselineError as exc:
        fail([f"refused: {exc}"], EXIT_INVALID)
    typer.echo(f"baseline saved: {path}")


@baseline_app.command("show")
def baseline_show(
    path: Annotated[Path, typer.Option("--path", help="Baseline file.")] = Path(
        "eval/baselines/baseline.json"
    ),
) -> None:
    """Print what the baseline holds: digests, iterations, seeds, headline numbers."""
    from agenteval.gate.baseline import BaselineError, describe_baseline

    try:
        lines = describe_baseline(path)
    except BaselineError as exc:
        fail([str(exc)], EXIT_INVALID)
    typer.echo("\n".join(lines))


def register(app: typer.Typer) -> None:
    """Add `noise`, `compare` and `baseline` to the main CLI."""
    app.command("noise")(noise)
    app.command("compare")(compare)
    app.add_typer(baseline_app, name="baseline")
