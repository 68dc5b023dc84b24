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
    typer.echo(f"wrote {target}: jobs structure, plan, evaluate")
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


def register(app: typer.Typer) -> None:
    app.command("init-ci")(init_ci)
    app.command("ci-plan")(ci_plan)
    app.command("recompute")(recompute)
