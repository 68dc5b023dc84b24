"""The `agenteval` command line. Thin: parse options, call the library, map errors to exits.

Heavy modules are imported inside commands so `agenteval --help` answers fast.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agenteval import __version__

if TYPE_CHECKING:
    from agenteval.pipeline import Layout

app = typer.Typer(
    help="Reproducible, noise-aware evaluation of LLM agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
schema_app = typer.Typer(help="JSON Schemas of the file formats.", no_args_is_help=True)
app.add_typer(schema_app, name="schema")
corpus_app = typer.Typer(help="The in-repository corpus and its pins.", no_args_is_help=True)
app.add_typer(corpus_app, name="corpus")

EXIT_INVALID = 2
EXIT_STOPPED = 3  # quota, credentials or run budget: resumable


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agenteval {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Show the version.")
    ] = False,
) -> None:
    """Reproducible, noise-aware evaluation of LLM agents."""


def _fail(lines: list[str], code: int = EXIT_INVALID) -> None:
    for line in lines:
        typer.echo(line, err=True)
    raise typer.Exit(code)


@app.command()
def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Scenario files or folders.")] = None,
    root: Annotated[Path, typer.Option(help="Repository root for relative paths.")] = Path("."),
    manifest: Annotated[Path | None, typer.Option(help="Corpus manifest.")] = None,
) -> None:
    """Check scenario files and the corpus manifest; exit 2 on any error."""
    from agenteval.validate import validate as run_validation

    result = run_validation(paths or [], root=root.resolve(), manifest_path=manifest)
    for problem in result.problems:
        typer.echo(str(problem), err=problem.severity == "error")
    n_err = sum(p.severity == "error" for p in result.problems)
    n_warn = len(result.problems) - n_err
    typer.echo(
        f"{len(result.scenarios)} scenario(s) read: {n_err} error(s), {n_warn} warning(s)",
        err=True,
    )
    if n_err:
        raise typer.Exit(EXIT_INVALID)


def _load_params(params_file: Path, sets: list[str]) -> dict[str, object]:
    from agenteval.params import ParamsError, load_params

    try:
        return load_params(params_file, sets)
    except (ParamsError, OSError) as exc:
        _fail([f"{params_file}: {exc}"])
        raise  # unreachable; keeps type checkers calm


@app.command()
def run(
    scenario: Annotated[list[str] | None, typer.Option("--scenario", help="Only this id.")] = None,
    category: Annotated[list[str] | None, typer.Option("--category", help="Only this.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory (default runs/<time>).")] = None,
    resume: Annotated[
        Path | None, typer.Option(help="Finish an interrupted run in this directory.")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
    progress: Annotated[bool, typer.Option(help="Show progress bars.")] = True,
) -> None:
    """suite -> infer -> judge -> score -> report, into one run directory."""
    from agenteval.fileio import read_json, write_json
    from agenteval.judging import JudgingStopped
    from agenteval.pipeline import Layout, run_evaluation
    from agenteval.suite import SuiteError

    root = Path.cwd().resolve()
    if resume is not None:
        saved = resume / "params.json"
        if not saved.is_file():
            _fail([f"{saved}: no saved params; is this an agenteval run directory?"])
        params = read_json(saved)
        out = resume
    else:
        params = _load_params(params_file, list(set_ or []))
        if scenario:
            params["suite"]["ids"] = list(scenario)  # type: ignore[index]
        if category:
            params["suite"]["categories"] = list(category)  # type: ignore[index]
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        out = out or Path("runs") / stamp
        write_json(out / "params.json", params)
    try:
        layout = Layout.run_dir(root, out)
        result = run_evaluation(params, layout, progress=progress and sys.stderr.isatty())
    except SuiteError as exc:
        _fail([str(p) for p in exc.problems])
        return
    except JudgingStopped as exc:
        _fail([str(exc), f"resume with: agenteval run --resume {out}"], EXIT_STOPPED)
        return
    except (ValueError, OSError, KeyError) as exc:  # configuration the run cannot start with
        _fail([f"cannot run: {type(exc).__name__}: {exc}"])
        return
    s = result.scorecard.summary
    typer.echo(
        f"{s.total} run(s): {s.passed} passed, {s.failed} failed, "
        f"{s.total - s.passed - s.failed - s.blocked} unmeasured; "
        f"judged pass rate {s.judged_pass_rate}, avg score {s.avg_score}"
    )
    typer.echo(f"reports in {out}/ (scorecard.json, summary.md, metrics.json)")
    _track(params, layout)
    if result.stop_reason:
        _fail(
            [
                f"run stopped early: {result.stop_reason}",
                f"resume with: agenteval run --resume {out}",
            ],
            EXIT_STOPPED,
        )


def _track(params: dict[str, Any], layout: Layout) -> None:
    """Log the run to MLflow unless tracking.enabled is false."""
    if not (params.get("tracking") or {}).get("enabled", True):
        return
    from agenteval.track import log_evaluation
    from agenteval.tracking.store import TrackingError

    try:
        result = log_evaluation(layout, params)
    except TrackingError as exc:
        _fail([f"MLflow logging failed: {exc}"], 1)
        return
    if result is not None:
        verb = "logged" if result.created else "already logged as"
        typer.echo(f"MLflow: {verb} run {result.run_id} ({result.tracking_uri})")


@schema_app.command("export")
def schema_export(
    out: Annotated[Path, typer.Option(help="Folder for *.schema.json.")] = Path("eval/schemas"),
) -> None:
    """Write the JSON Schema of every file format."""
    from agenteval.schema.export import export

    for path in export(out):
        typer.echo(str(path))


@schema_app.command("check")
def schema_check(out: Annotated[Path, typer.Option()] = Path("eval/schemas")) -> None:
    """Exit 1 when an exported schema is missing or out of date."""
    from agenteval.schema.export import stale

    names = stale(out)
    if names:
        _fail([f"stale schema(s): {', '.join(names)}; run `agenteval schema export`"], 1)
    typer.echo("schemas are current")


@app.command()
def fetch(
    sources: Annotated[Path, typer.Option(help="Pinned sources file.")] = Path("eval/sources.yaml"),
    dest: Annotated[Path, typer.Option(help="Where files are laid out.")] = Path("data/corpora"),
    offline: Annotated[bool, typer.Option(help="Never open a socket; use the cache.")] = False,
    jobs: Annotated[int, typer.Option(min=1, help="Parallel downloads.")] = 8,
    allow_missing: Annotated[
        bool, typer.Option(help="Go on when a file cannot be reached (it is listed).")
    ] = False,
) -> None:
    """Download, verify (sha256 + size) and lay out the pinned external corpora."""
    from agenteval.corpus.errors import FetchError
    from agenteval.corpus.fetch import fetch_sources

    try:
        report = fetch_sources(
            sources, dest, offline=offline, jobs=jobs, allow_missing=allow_missing,
            progress=sys.stderr.isatty(),
        )  # fmt: skip
    except FetchError as exc:
        _fail([f"error: {exc}"])
        return
    typer.echo(report.summary())
    for item in getattr(report, "missing", []):
        typer.echo(f"missing: {item}", err=True)


@app.command("serve-mcp")
def serve_mcp(
    transport: Annotated[str, typer.Option(help="stdio | http")] = "stdio",
    port: Annotated[int, typer.Option(help="Port for --transport http.")] = 8765,
    host: Annotated[str, typer.Option(help="Address for --transport http.")] = "127.0.0.1",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
) -> None:
    """Expose the configured target as an MCP server with the Agent UI tool set."""
    from agenteval.serve_mcp import TRANSPORTS, serve

    if transport not in TRANSPORTS:
        _fail([f"--transport must be one of {', '.join(TRANSPORTS)}"])
    params = _load_params(params_file, list(set_ or []))
    # On stdio, stdout carries the protocol: nothing else may be printed there.
    serve(params, Path.cwd().resolve(), transport=transport, host=host, port=port)


@app.command("serve-local")
def serve_local(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8080,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    model_alias: Annotated[str, typer.Option(help="Model name clients use.")] = "smollm2-135m",
    n_ctx: Annotated[int, typer.Option(help="Context window in tokens.")] = 4096,
) -> None:
    """Serve the bundled SmolLM2-135M over the OpenAI protocol (needs the `local` extra)."""
    from agenteval.serve_local import LocalServerError
    from agenteval.serve_local import serve_local as run_server

    try:
        run_server(host=host, port=port, model_alias=model_alias, n_ctx=n_ctx)
    except LocalServerError as exc:
        _fail([f"serve-local: {exc}"], 1)


@corpus_app.command("pin")
def corpus_pin(
    manifest: Annotated[Path, typer.Option()] = Path("eval/corpus/manifest.json"),
) -> None:
    """Rewrite the manifest's sha256 pins from the bytes on disk, printing what changed."""
    from agenteval.corpus.pins import pin_manifest

    changes = pin_manifest(manifest, Path.cwd().resolve())
    for change in changes:
        old = change.old[:12] if change.old else "(none)"
        typer.echo(f"{change.doc_id}: {change.path} {old} -> {change.new[:12]}")
    typer.echo(f"{len(changes)} pin(s) changed in {manifest}")


def _register_gate_commands() -> None:
    # noise / compare / baseline live in their own module (its heavy imports are inside each
    # command); registered here so `app` is the whole command line wherever it is used.
    from agenteval import cli_gate

    cli_gate.register(app)


_register_gate_commands()


def main() -> None:
    app()
