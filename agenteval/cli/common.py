"""What every command group shares: exit codes, failing with a message, loading params."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    from agenteval.suite.build import SuiteError

EXIT_FAILED = 1  # the evaluation measured nothing: no scenario judged (scoring.nothing_measured)
EXIT_INVALID = 2
EXIT_STOPPED = 3  # quota, credentials or run budget: resumable


def fail(lines: list[str], code: int = EXIT_INVALID) -> NoReturn:
    for line in lines:
        typer.echo(line, err=True)
    raise typer.Exit(code)


def suite_failure(exc: SuiteError, flagged: bool) -> NoReturn:
    """Exit 2 with the suite's problems; ids given as --scenario are named as the flag."""
    from agenteval.suite.build import UnknownScenarios

    if flagged and isinstance(exc, UnknownScenarios):
        fail([f"--scenario {sid}: no scenario file has this id{exc.suggestion(sid)}"
              for sid in exc.unknown])  # fmt: skip
    fail([str(p) for p in exc.problems])


def select(params: dict[str, Any], scenario: list[str] | None, category: list[str] | None) -> None:
    """Apply --scenario / --category to the suite selection."""
    if scenario:
        params["suite"]["ids"] = list(scenario)
    if category:
        params["suite"]["categories"] = list(category)


def load_params(params_file: Path, sets: list[str]) -> dict[str, Any]:
    """params.yaml with --set overrides; a bad file or override exits 2 before any work."""
    from agenteval.params import ParamsError
    from agenteval.params import load_params as load

    try:
        return load(params_file, sets)
    except ParamsError as exc:
        fail(str(exc).splitlines())
    except OSError as exc:
        fail([f"{params_file}: {exc}"])
