"""`agenteval fix`: an external coding agent patches the agent, kept only by the keep rule."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Annotated

import typer

from agenteval.cli.climb import SetOption, _overrides
from agenteval.cli.common import EXIT_STOPPED, fail


def fix(
    fixer: Annotated[
        str, typer.Option(help="llm (climb.llm: any endpoint) | claude-code (claude -p).")
    ] = "llm",
    rounds: Annotated[int | None, typer.Option(help="Most patches (climb.rounds).")] = None,
    patience: Annotated[int | None, typer.Option(help="Flat rounds before stopping.")] = None,
    set_: SetOption = None,
) -> None:
    """Patch the agent's editable files from its failing TRAIN conversations (reference
    answers removed), in a scratch worktree: each patch is one climb round, kept only when
    train and held both improve beyond noise; kept patches are commits on branch fix/<time>."""
    from agenteval.climb.artifacts import ClimbError
    from agenteval.climb.evaluation import NotComparable
    from agenteval.climb.fix import run_fix
    from agenteval.llm import LLMError

    extra = {"rounds": rounds, "patience": patience, "repro": "false"}
    sets = _overrides(set_, extra)
    # SIGTERM as an exception, so the failed session's worktree and branch are removed.
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        summary = run_fix(Path.cwd().resolve(), sets, fixer, echo=typer.echo)
    except NotComparable as exc:
        fail([str(exc)], 3)
    except ClimbError as exc:
        fail(str(exc).splitlines())
    except LLMError as exc:
        fail([f"stopped: the fixer's endpoint failed: {exc}"], EXIT_STOPPED)
    finally:
        signal.signal(signal.SIGTERM, previous)
    typer.echo(f"{summary['kept']} patch(es) kept, {summary['reverted']} reverted, "
               f"{summary['rejected']} refused by the guard")  # fmt: skip


def _terminated(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def register(app: typer.Typer) -> None:
    app.command()(fix)
