"""`agenteval sessions`: replay real Claude Code requests and grade the answers against them.

Thin: agenteval.benchmarks.sessions does the work. Exit codes: 0 done; 1 the judge failed
its session controls (results written, marked untrusted); 2 invalid input or a folder that
is not private; 3 stopped early (quota, credentials), resumable with the same --out.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.common import EXIT_STOPPED, fail, load_params, say_coverage, writable_folder

EXIT_UNTRUSTED = 1


def _out(out: Path | None) -> Path:
    return out or Path("runs") / f"sessions-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def _sets(
    transcripts: Path | None,
    project: str | None,
    limit: int | None,
    since: str | None,
    dataset: Path | None,
) -> list[str]:
    if limit is not None and limit < 1:
        fail([f"--limit: must be at least 1, got {limit}"])
    if since is not None:
        try:
            datetime.fromisoformat(since)
        except ValueError:
            fail([f"--since: {since!r} is not a date (YYYY-MM-DD)"])
    values: dict[str, Any] = {"transcripts": transcripts, "project": project, "limit": limit,
                              "since": since, "dataset": dataset}  # fmt: skip
    return [f"sessions.{k}={v}" for k, v in values.items() if v is not None]


def _resume(folder: Path) -> str:
    return f"resume with: agenteval sessions --dataset {folder}/dataset.json --out {folder}"


def _summary(outcome: Any, out: Path) -> None:
    s = outcome.dataset.summary
    left = ", ".join(f"{k} {v}" for k, v in s.dropped.items()) or "nothing"
    typer.echo(f"dataset: {s.cases} case(s) from {s.files} file(s), {s.lines} line(s); "
               f"left out: {left}")  # fmt: skip
    for warning in s.warnings:
        typer.echo(f"warning: {warning}", err=True)
    card = outcome.scorecard
    if card is not None:
        m, p = card.mean_grade, card.pass_rate
        bounded = m.low is not None and m.high is not None
        interval = f" ({m.low:.2f}-{m.high:.2f})" if bounded else ""
        mean = "n/a" if m.value is None else f"{m.value:.2f}{interval}"
        rate = "n/a" if p.value is None else f"{p.value:.0%}"
        typer.echo(
            f"mean grade {mean} of 5, pass rate {rate}, claimed work not done "
            f"{card.dishonest}, {card.counts['judged']}/{card.counts['cases']} judged"
        )
        c = card.controls
        verdict = "passed" if c.passed else "FAILED: grades not trustworthy"
        typer.echo(f"session controls {verdict} ({c.in_band}/{c.answers} in band, "
                   f"{c.ordered}/{c.pairs} pairs in order)")  # fmt: skip
    files = "dataset.json" + ("" if card is None else ", results.json, scorecard.json, report.md")
    typer.echo(f"outputs in {out}/ ({files})")
    if outcome.tracked is not None:
        typer.echo(f"MLflow: run {outcome.tracked.run_id} ({outcome.tracked.tracking_uri})")


def sessions(
    transcripts: Annotated[
        Path | None, typer.Option(help="Transcripts folder (default ~/.claude/projects).")
    ] = None,
    project: Annotated[str | None, typer.Option(help="Only this project folder.")] = None,
    limit: Annotated[int | None, typer.Option(help="The most recent N cases (default 10).")] = None,
    since: Annotated[str | None, typer.Option(help="Only requests from this date on.")] = None,
    dataset_only: Annotated[
        bool, typer.Option("--dataset-only", help="Build dataset.json and stop.")
    ] = False,
    dataset: Annotated[
        Path | None, typer.Option(help="Replay this dataset.json instead of reading transcripts.")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Private output folder (default runs/sessions-<time>).")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("pipelines/sessions/params.yaml"),
    set_: Annotated[list[str] | None, typer.Option("--set", help="key=value override.")] = None,
    track: Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow.")] = True,
) -> None:
    """Score an agent against what Claude Code actually said on your own recorded requests."""
    from agenteval.benchmarks.sessions.controls import ControlsFileError
    from agenteval.benchmarks.sessions.run import run_sessions
    from agenteval.llm import QuotaExhausted

    sets = list(set_ or []) + _sets(transcripts, project, limit, since, dataset)
    params = load_params(params_file, sets)
    folder = _out(out)
    writable_folder("--out", folder)
    try:
        outcome = run_sessions(
            params, Path.cwd().resolve(), folder, dataset_only=dataset_only, track=track
        )
    except ControlsFileError as exc:
        fail([str(p) for p in exc.problems])
    except QuotaExhausted as exc:
        fail([f"stopped: {exc}", _resume(folder)], EXIT_STOPPED)
    except (ValueError, OSError) as exc:
        fail(str(exc).splitlines())
    _summary(outcome, folder)
    if outcome.stop_reason:
        fail([f"stopped: {outcome.stop_reason}", _resume(folder)], EXIT_STOPPED)
    if outcome.coverage is not None:  # nothing measured: exit 3 with the reason
        say_coverage(outcome.coverage)
    if outcome.scorecard is not None and not outcome.scorecard.trusted:
        raise typer.Exit(EXIT_UNTRUSTED)


def register(app: typer.Typer) -> None:
    app.command()(sessions)
