"""What every command group shares: exit codes, failing with a message, loading params."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NoReturn

import typer

EXIT_INVALID = 2
EXIT_STOPPED = 3  # quota, credentials or run budget: resumable


def fail(lines: list[str], code: int = EXIT_INVALID) -> NoReturn:
    for line in lines:
        typer.echo(line, err=True)
    raise typer.Exit(code)


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
