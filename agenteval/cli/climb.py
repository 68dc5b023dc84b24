"""`agenteval climb` (a hillclimb session) and `agenteval climb evaluate` (a person's edit)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Annotated

import typer

from agenteval.cli.common import EXIT_STOPPED, fail, load_params

EXIT_NOT_KEPT = 1
app = typer.Typer(help="Hillclimb the agent: train / held / test, one edit a round.")

SetOption = Annotated[
    list[str] | None,
    typer.Option("--set", help="Override a params.yaml value (not target.*): key=value."),
]
NewSplitOption = Annotated[
    bool,
    typer.Option(
        "--new-split",
        help="The split moved (a new suite.split.salt, a pin): work on it; a new held split "
        "starts its own ledger, its parent recorded.",
    ),
]
ResetOption = Annotated[
    bool,
    typer.Option(
        "--reset-holdout",
        help="climb.holdout differs from the limits the held split's ledger holds: use it, "
        "recorded as a holdout reset (ledger, MLflow, reports/climb.json).",
    ),
]


def _overrides(set_: list[str] | None, extra: Mapping[str, object]) -> list[str]:
    """--set values plus options; the agent itself must be what the commit holds."""
    sets = list(set_ or []) + [f"climb.{k}={v}" for k, v in extra.items() if v is not None]
    for assignment in sets:
        key = assignment.partition("=")[0].strip()
        if key == "target" or key.startswith("target."):
            fail(
                [
                    f"--set {key}: the agent under test is what the commit holds; edit "
                    "params.yaml and commit it, or let the session edit it"
                ]
            )
        if key == "climb.holdout.ledger":
            fail(
                [
                    f"--set {key}: the held ledger has no path to set; it is "
                    "eval/climb/holdout_ledger.jsonl, bound to the held split's content"
                ]
            )
    load_params(Path("params.yaml"), sets)  # every value checked before any work
    return sets


@app.callback(invoke_without_command=True)
def climb(
    ctx: typer.Context,
    proposer: Annotated[str | None, typer.Option(help="search | llm (climb.proposer).")] = None,
    rounds: Annotated[int | None, typer.Option(help="Most rounds (climb.rounds).")] = None,
    patience: Annotated[int | None, typer.Option(help="Flat rounds before stopping.")] = None,
    branch: Annotated[
        str | None, typer.Option(help="Scratch branch (default climb/<time>).")
    ] = None,
    repro: Annotated[bool | None, typer.Option(help="dvc repro with each kept round.")] = None,
    set_: SetOption = None,
    new_split: NewSplitOption = False,
    reset_holdout: ResetOption = False,
    worktree: Annotated[
        bool,
        typer.Option(
            "--worktree",
            help="Run from HEAD on a git worktree of its own beside the repository "
            "(<repo>-climb-<time>), leaving this working tree and its uncommitted changes "
            "as they are.",
        ),
    ] = False,
) -> None:
    """Run a session on a scratch branch: one edit a round, kept only when train improves
    beyond noise and held does not regress (a knob edit) or improves (a free-text edit);
    test evaluated once at the end."""
    if ctx.invoked_subcommand is not None:
        return
    from agenteval.climb.artifacts import ClimbError
    from agenteval.climb.evaluation import NotComparable
    from agenteval.climb.ledger import HoldoutFlags
    from agenteval.climb.run import run_session

    extra = {
        "proposer": proposer,
        "rounds": rounds,
        "patience": patience,
        "branch": branch,
        "repro": None if repro is None else str(repro).lower(),
    }
    sets = _overrides(set_, extra)
    try:
        flags = HoldoutFlags(new_split=new_split, reset=reset_holdout)
        run_session(Path.cwd().resolve(), sets, echo=typer.echo, flags=flags, worktree=worktree)
    except NotComparable as exc:
        fail([str(exc)], 3)
    except ClimbError as exc:
        fail(str(exc).splitlines())


@app.command()
def evaluate(
    set_: SetOption = None, new_split: NewSplitOption = False, reset_holdout: ResetOption = False
) -> None:
    """Judge the edit in the working tree (against HEAD) with the session's rule.

    Exit 0: kept (the edit stays; commit it). Exit 1: not kept (HEAD's bytes restored, the
    edit saved as a patch). Exit 2: refused by the guard or bad input. Exit 3: the held split
    is spent or the runs are not comparable."""
    from agenteval.climb.artifacts import ClimbError
    from agenteval.climb.evaluation import NotComparable
    from agenteval.climb.ledger import HoldoutFlags
    from agenteval.climb.manual import evaluate_edit

    sets = _overrides(set_, {})
    try:
        flags = HoldoutFlags(new_split=new_split, reset=reset_holdout)
        record = evaluate_edit(Path.cwd().resolve(), sets, flags=flags)
    except NotComparable as exc:
        fail([str(exc)], 3)
    except ClimbError as exc:
        fail(str(exc).splitlines())
    train = record.get("train") or {}
    for note in record.get("notes") or []:
        typer.echo(note)
    typer.echo(f"{record['outcome']}: {record.get('reason')}")
    if train:
        typer.echo(
            f"train gain {train['mean']:+.3f} (lower bound {train['low']:+.3f}); "
            f"held queries on this split: {record.get('held_queries')}"
        )
    if record.get("held"):
        from agenteval.climb.run import held_line

        typer.echo(held_line(record["held"]))
    if record["outcome"] == "rejected":
        raise typer.Exit(2)
    if record.get("spent"):
        fail([f"edit saved as {record['patch']}"], EXIT_STOPPED)
    if record["outcome"] != "kept":
        typer.echo(f"HEAD's files restored; the edit is saved as {record['patch']}")
        raise typer.Exit(EXIT_NOT_KEPT)


@app.command("guard-check")
def guard_check(set_: SetOption = None) -> None:
    """Measure the guard on eval/climb/guard_controls.yaml: the question similarity tuned on
    the dev half, detection and false refusals on the held half (no evaluation is run)."""
    from agenteval.climb.artifacts import ClimbError
    from agenteval.climb.guard_check import check, render

    sets = _overrides(set_, {})
    try:
        result = check(Path.cwd().resolve(), load_params(Path("params.yaml"), sets))
    except ClimbError as exc:
        fail(str(exc).splitlines())
    typer.echo(render(result))


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="climb")
