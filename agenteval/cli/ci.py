"""`agenteval init-ci`, `agenteval ci-plan` and `agenteval recompute`: the project in CI."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval.cli.common import EXIT_INVALID, fail, load_params, writable_folder

EXIT_MISMATCH = 1

DEFAULT_INSTALL = 'python -m pip install "agenteval=={version}"'


def init_ci(
    out: Annotated[Path | None, typer.Option(help="Where to write the workflow.")] = None,
    agent_path: Annotated[
        list[str] | None,
        typer.Option(
            "--agent-path",
            help="A folder, file or glob of the agent's own code: a pull request touching it "
            "runs the smoke lane (the agent folder and params.yaml always count).",
        ),
    ] = None,
    install: Annotated[
        str | None, typer.Option(help="Shell command installing agenteval in the runner.")
    ] = None,
    python: Annotated[str, typer.Option(help="Python version of the runner.")] = "3.11",
    baseline: Annotated[str, typer.Option(help="The committed baseline to compare with.")] = (
        "eval/baselines/baseline.json"
    ),
    force: Annotated[bool, typer.Option(help="Overwrite an existing workflow.")] = False,
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
) -> None:
    """Write a GitHub Actions workflow: structural checks on every pull request, the smoke
    lane when one touches the agent, full on dispatch and release tags ([skip eval] /
    [full eval] in an annotated pre-release tag's message), the comparison as the result."""
    from agenteval import __version__
    from agenteval.ci.workflow import DEFAULT_PATH, Options, render
    from agenteval.fileio import write_text

    target = out or DEFAULT_PATH
    if target.exists() and not force:
        fail([f"{target}: exists; --force to overwrite it"])
    writable_folder("--out", target.parent)
    params = load_params(params_file, []) if params_file.is_file() else {}
    agent_dir = str((params.get("target") or {}).get("agent") or "eval/agents/default")
    paths = tuple(dict.fromkeys([agent_dir.rstrip("/") + "/", "params.yaml", *(agent_path or [])]))
    opts = Options(
        install=install or DEFAULT_INSTALL.format(version=__version__),
        agent_paths=paths,
        python=python,
        baseline=baseline,
    )
    write_text(target, render(opts))
    typer.echo(f"wrote {target}: jobs structure, plan, evaluate, verify")
    typer.echo(f"a pull request runs the smoke lane when it touches: {', '.join(paths)}")
    typer.echo("check it with: actionlint " + str(target))


def ci_plan(
    event: Annotated[str, typer.Option(help="pull_request, push, workflow_dispatch, schedule.")],
    ref: Annotated[str, typer.Option(help="The git ref (refs/tags/v1.2.0-rc1, ...).")] = "",
    tier: Annotated[str, typer.Option(help="A dispatch's tier input.")] = "",
    base: Annotated[str, typer.Option(help="A pull request's base commit.")] = "",
    agent_path: Annotated[
        list[str] | None, typer.Option("--agent-path", help="The agent's folders and files.")
    ] = None,
) -> None:
    """Print the lane this trigger runs (lane=..., reason=...: GITHUB_OUTPUT lines)."""
    from agenteval.ci.plan import Trigger, changed_files, decide, tag_message

    root = Path.cwd()
    try:
        message = None
        if event == "push" and ref.startswith("refs/tags/"):
            message = tag_message(root, ref.removeprefix("refs/tags/"))
        changed = changed_files(root, base) if event == "pull_request" and base else ()
        if event == "pull_request" and not base:
            fail(["--base: a pull request's plan needs its base commit"], EXIT_INVALID)
        plan = decide(Trigger(event, ref, tier or None, message, changed, tuple(agent_path or ())))
    except ValueError as exc:
        fail([str(exc)], EXIT_INVALID)
    typer.echo(plan.outputs(), nl=False)


def recompute(
    scorecard: Annotated[Path, typer.Argument(help="A scorecard.json (or a run directory).")],
) -> None:
    """Derive every turn score, pass and summary figure again from the scorecard's own
    dimension scores; exit 1 naming each that differs."""
    from agenteval.gate.recompute import recompute as check
    from agenteval.gate.runs import InputError, load_side

    try:
        card = load_side(scorecard).card
    except InputError as exc:
        fail([str(exc)], EXIT_INVALID)
    problems = check(card)
    for line in problems:
        typer.echo(f"{scorecard}: {line}", err=True)
    if problems:
        raise typer.Exit(EXIT_MISMATCH)
    n = len(card.scenarios)
    typer.echo(f"{scorecard}: {n} result(s) and the summary recompute exactly")


def ci_verify(
    tag: Annotated[str, typer.Option(help="The final release tag (v1.4.0, or refs/tags/v1.4.0).")],
    results: Annotated[
        list[Path] | None,
        typer.Option("--results", help="A committed scorecard.json or run directory to read."),
    ] = None,
    tracking_uri: Annotated[
        str | None, typer.Option(help="An MLflow store to read (its finished runs).")
    ] = None,
    experiment: Annotated[str, typer.Option(help="The MLflow experiment.")] = "agenteval",
) -> None:
    """The verify tier: exit 0 when a full sweep measured the tag's commit or one of its
    release candidates' commits, else exit 1 naming the commit. Nothing is re-run."""
    from agenteval.ci.verify import (
        release_candidates,
        sweeps_from_mlflow,
        sweeps_from_results,
        verdict,
    )

    if not results and not tracking_uri:
        fail(["--results or --tracking-uri: name where the measured sweeps are"], EXIT_INVALID)
    try:
        candidates = release_candidates(Path.cwd(), tag.removeprefix("refs/tags/"))
    except ValueError as exc:
        fail([str(exc)], EXIT_INVALID)
    sweeps = sweeps_from_results(results or [])
    if tracking_uri:
        sweeps += sweeps_from_mlflow(tracking_uri, experiment)
    from agenteval.stamps import holds_code

    root = Path.cwd()
    outcome = verdict(candidates, sweeps, lambda commit, files: holds_code(root, commit, files))
    for line in outcome.lines:
        typer.echo(line, err=not outcome.ok)
    if not outcome.ok:
        raise typer.Exit(EXIT_MISMATCH)


def ci_trend(
    run: Annotated[Path, typer.Option(help="The backlog run's directory (or scorecard.json).")],
    trend: Annotated[Path, typer.Option(help="The trend file: read if present, rewritten.")],
    label: Annotated[str, typer.Option(help="This run's name in the trend (the CI run id).")],
    when: Annotated[str, typer.Option("--at", help="This run's date (default: now, UTC).")] = "",
    target: Annotated[float | None, typer.Option(help="The pass-rate target (0..1).")] = None,
    summary: Annotated[
        Path | None, typer.Option(help="Append the trend table here (GITHUB_STEP_SUMMARY).")
    ] = None,
) -> None:
    """The backlog lane's trend: append this run's pass rate, print it against the target."""
    from agenteval import stamps
    from agenteval.ci.trend import BACKLOG_TARGET, extend, markdown, point
    from agenteval.fileio import read_json, write_json

    goal = BACKLOG_TARGET if target is None else target
    if not 0 < goal <= 1:
        fail([f"--target: {goal} is not a share in (0, 1]"], EXIT_INVALID)
    card_path = run / "scorecard.json" if run.is_dir() else run
    if not card_path.is_file():
        fail([f"--run {run}: no scorecard.json"], EXIT_INVALID)
    history = read_json(trend) if trend.is_file() else []
    if not isinstance(history, list):
        fail([f"{trend}:1: a trend file is a JSON list of runs"], EXIT_INVALID)
    try:
        new = point(read_json(card_path), label, when or stamps.now(), stamps.head(Path.cwd()))
    except ValueError as exc:
        fail([f"{card_path}: {exc}"], EXIT_INVALID)
    points = extend(history, new)
    write_json(trend, points)
    text = markdown(points, goal)
    typer.echo(text)
    if summary is not None:
        with summary.open("a", encoding="utf-8") as out:
            out.write(text)


def register(app: typer.Typer) -> None:
    app.command("init-ci")(init_ci)
    app.command("ci-plan")(ci_plan)
    app.command("ci-verify")(ci_verify)
    app.command("ci-trend")(ci_trend)
    app.command("recompute")(recompute)
