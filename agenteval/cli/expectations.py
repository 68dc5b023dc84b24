"""`agenteval propose RUN... --out FILE` and `agenteval gate RUN --expect FILE [--enforce]`
(or `gate RUN --baseline FILE [--tolerance T]` for QA and retrieval runs, see cli.bench).

Exit codes of `gate --expect`: 0 met (or any result without --enforce) · 1 a limit missed, with
--enforce · 2 bad input (a missing or invalid expectations file, an unreadable run) · 3 not
comparable (another agent model, scenario set or judge than the limits were proposed for;
refused with or without --enforce). `propose` exits 2 on bad input or too few draws and 3 on
runs of different identities. The library is agenteval.gate.expectations.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from agenteval.cli.common import EXIT_INVALID, fail

if TYPE_CHECKING:
    from agenteval.schema.expectations import Expectations

EXIT_MISS = 1
EXIT_NOT_COMPARABLE = 3


def _commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
    except OSError:
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def propose(
    runs: Annotated[list[str], typer.Argument(help="Run dirs, scorecard files or MLflow run ids.")],
    out: Annotated[Path, typer.Option(help="Expectations file to write.")],
) -> None:
    """Write gate limits every draw of these runs met (worst of N, documented headroom)."""
    from agenteval.fileio import write_json
    from agenteval.gate.expectations import ExpectationsError
    from agenteval.gate.expectations import propose as propose_limits
    from agenteval.gate.runs import InputError, load_side

    try:
        loaded = [load_side(arg) for arg in runs]
    except InputError as exc:
        fail([str(exc)], EXIT_INVALID)
    try:
        expected = propose_limits(loaded, _commit())
    except ExpectationsError as exc:
        code = EXIT_NOT_COMPARABLE if "is not the same" in str(exc) else EXIT_INVALID
        fail([f"refused: {exc}"], code)
    write_json(out, expected)
    limits = expected.limits
    typer.echo(
        f"{expected.measured_on['draws']} draw(s) of {len(loaded)} run(s): min_passed "
        f"{limits.min_passed}, min_avg_score {limits.min_avg_score}, max_unmeasured "
        f"{limits.max_unmeasured}, max_total_tokens {limits.max_total_tokens}, max_cost_usd "
        f"{limits.max_cost_usd}"
    )
    typer.echo(f"expectations: {out} (commit it to move the bar; gate with --expect {out})")


def _read_expectations(path: Path) -> Expectations:
    from pydantic import ValidationError

    from agenteval.fileio import read_json
    from agenteval.schema.expectations import Expectations

    if not path.is_file():
        fail([f"{path}: no such expectations file (write one with `agenteval propose`)"])
    try:
        return Expectations.model_validate(read_json(path))
    except (OSError, ValueError) as exc:
        if isinstance(exc, ValidationError):
            first = exc.errors()[0]
            detail = f"{'.'.join(map(str, first['loc']))}: {first['msg']}"
        else:
            detail = str(exc)
        fail([f"{path}:1: not an expectations file ({detail})"])


def gate(
    run: Annotated[str, typer.Argument(help="Run dir, scorecard file or MLflow run id.")],
    expect: Annotated[
        Path | None, typer.Option("--expect", help="Expectations file from `agenteval propose`.")
    ] = None,
    enforce: Annotated[bool, typer.Option(help="Exit 1 when a limit is missed.")] = False,
    out: Annotated[Path, typer.Option(help="Folder for gate.md and gate.json.")] = Path(
        "reports/gate"
    ),
    baseline: Annotated[
        Path | None,
        typer.Option("--baseline", help="A benchmark's baseline run or results.json."),
    ] = None,
    tolerance: Annotated[
        float | None,
        typer.Option(help="--baseline: allowed drop (default: the benchmark kind's own)."),
    ] = None,
) -> None:
    """--expect: this run beside main's measured limits (exit 1 on a miss only with --enforce,
    3 when the limits belong to another agent, suite or judge). --baseline: a QA or retrieval
    run against its baseline (exit 1 on a drop beyond the tolerance)."""
    from agenteval.gate.expect_report import lines, write_gate
    from agenteval.gate.expectations import check
    from agenteval.gate.runs import InputError, load_side

    if (expect is None) == (baseline is None):
        fail(
            [
                "gate needs exactly one of --expect FILE (scenario runs, from `agenteval propose`)"
                " or --baseline FILE (QA and retrieval runs)"
            ]
        )
    if baseline is not None:
        from agenteval.cli.bench import benchmark_gate

        benchmark_gate(Path(run), baseline, tolerance)
        return
    assert expect is not None
    expected = _read_expectations(expect)
    try:
        loaded = load_side(run)
    except InputError as exc:
        fail([str(exc)])
    result = check(expected, loaded)
    text = lines(result, expected, loaded.source, enforce)
    typer.echo("\n".join(text))
    typer.echo(f"details: {write_gate(result, text, out)}")
    if not result.comparable:
        raise typer.Exit(EXIT_NOT_COMPARABLE)
    if enforce and result.missed:
        raise typer.Exit(EXIT_MISS)


def register(app: typer.Typer) -> None:
    """Add `propose` and `gate` (its --expect/--enforce options) to the main CLI."""
    app.command("propose")(propose)
    app.command("gate")(gate)
