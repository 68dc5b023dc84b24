"""What every command group shares: exit codes, failing with a message, loading params."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from agenteval.measured import NOTHING_MEASURED_STATUS

if TYPE_CHECKING:
    from agenteval.measured import Coverage
    from agenteval.suite.build import SuiteError

EXIT_FAILED = 1  # the run finished and failed (a gate, untrusted grades, a machine fault)
EXIT_INVALID = 2
# Quota, credentials, run budget (resumable), or nothing measured (agenteval.measured).
EXIT_STOPPED = NOTHING_MEASURED_STATUS


def fail(lines: list[str], code: int = EXIT_INVALID) -> NoReturn:
    for line in lines:
        typer.echo(line, err=True)
    raise typer.Exit(code)


def say_coverage(coverage: Coverage, before: list[str] | None = None) -> None:
    """The headline's unmeasured line; a run that measured nothing fails with exit 3 after
    the `before` lines (its summary), saying why."""
    if coverage.nothing:
        fail([*(before or []), coverage.refusal()], EXIT_STOPPED)
    for line in [*(before or []), *filter(None, [coverage.line()])]:
        typer.echo(line)


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


def load_params(
    params_file: Path, sets: list[str], options: dict[str, tuple[str, Any]] | None = None
) -> dict[str, Any]:
    """params.yaml with --set overrides and typed option values (`{key: (option, value)}`);
    a bad file, override or option exits 2 before any work."""
    from agenteval.params import ParamsError
    from agenteval.params import load_params as load

    if not default_params_name(params_file) and not params_file.is_file():
        fail([f"--params {params_file}: no such file"])
    try:
        return load(params_file, sets, options)
    except ParamsError as exc:
        fail(str(exc).splitlines())
    except OSError as exc:
        fail([f"{params_file}: {exc}"])


def default_params_name(params_file: Path) -> bool:
    """Whether `params_file` is a command's default (params.yaml, a variant's own), which may
    be missing: the embedded defaults run then. A file named otherwise must exist."""
    parts = params_file.parts
    return parts == ("params.yaml",) or (
        len(parts) == 3 and parts[0] == "pipelines" and parts[2] == "params.yaml"
    )


def writable_folder(option: str, folder: Path) -> None:
    """Refuse before any work a folder an option names (or implies) that cannot be made or
    written: it is made, a file made and removed in it, and the folders made are removed
    again (the command makes them when it writes)."""
    import tempfile

    made = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".agenteval-probe-"):
            pass
    except OSError as exc:
        fail([f"{option} {folder}: cannot write there ({exc.strerror or exc})"])
    finally:
        for path in made:  # deepest first
            if path.is_dir():
                path.rmdir()


def readable_file(option: str, path: Path | None) -> None:
    """Refuse before any work a file an option names that is missing or unreadable."""
    if path is None:
        return
    try:
        with path.open("rb") as handle:
            handle.read(1)
    except OSError as exc:
        fail([f"{option} {path}: cannot read ({exc.strerror or exc})"])
