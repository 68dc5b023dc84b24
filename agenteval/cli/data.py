"""Data commands: `agenteval fetch`, `agenteval corpus pin`, `agenteval schema export|check`
(the JSON Schemas and docs/configuration.md, both generated from the models)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agenteval.cli.common import fail

schema_app = typer.Typer(
    help="JSON Schemas of the file formats and the configuration reference.", no_args_is_help=True
)
corpus_app = typer.Typer(help="The in-repository corpus and its pins.", no_args_is_help=True)


def fetch(
    sources: Annotated[Path, typer.Option(help="Pinned sources file.")] = Path("eval/sources.yaml"),
    dest: Annotated[Path, typer.Option(help="Where files are laid out.")] = Path("data/corpora"),
    offline: Annotated[bool, typer.Option(help="Never open a socket; use the cache.")] = False,
    jobs: Annotated[int, typer.Option(min=1, help="Parallel downloads.")] = 8,
    allow_missing: Annotated[
        bool, typer.Option(help="Go on when a file cannot be reached (it is listed).")
    ] = False,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Fetch nothing: check every laid-out file and its cache entry against its "
            "pin (size + sha256); exit 1 naming each missing or wrong file.",
        ),
    ] = False,
) -> None:
    """Download, verify (sha256 + size) and lay out the pinned external corpora."""
    from agenteval.corpus.errors import FetchError
    from agenteval.corpus.fetch import fetch_sources

    if verify:
        verify_pins(sources, dest)
        return
    try:
        report = fetch_sources(
            sources, dest, offline=offline, jobs=jobs, allow_missing=allow_missing,
            progress=sys.stderr.isatty(),
        )  # fmt: skip
    except FetchError as exc:
        fail([f"error: {exc}"])
        return
    typer.echo(report.summary())
    for item in getattr(report, "missing", []):
        typer.echo(f"missing: {item}", err=True)


def verify_pins(sources: Path, dest: Path) -> None:
    """`agenteval fetch --verify`: exit 1 naming every missing or wrong file, 2 on a bad
    sources file."""
    from agenteval.corpus.errors import FetchError
    from agenteval.corpus.verify import verify_sources

    try:
        found = verify_sources(sources, dest)
    except FetchError as exc:
        fail([f"error: {exc}"])
    for fault in found.faults:
        typer.echo(str(fault), err=True)
    typer.echo(found.summary())
    if found.faults:
        raise typer.Exit(1)


@corpus_app.command("pin")
def corpus_pin(
    manifest: Annotated[Path, typer.Option()] = Path("eval/corpus/manifest.json"),
) -> None:
    """Rewrite the manifest's sha256 pins from the bytes on disk, printing what changed."""
    from agenteval.corpus.pins import pin_manifest, sub_manifests

    root = Path.cwd().resolve()
    files = [(manifest, None)] + [
        (sub, sub.parent.resolve().relative_to(root).as_posix()) for sub in sub_manifests(manifest)
    ]
    for path, folder in files:
        changes = pin_manifest(path, root, folder)
        for change in changes:
            old = change.old[:12] if change.old else "(none)"
            typer.echo(f"{change.doc_id}: {change.path} {old} -> {change.new[:12]}")
        typer.echo(f"{len(changes)} pin(s) changed in {path}")


@schema_app.command("export")
def schema_export(
    out: Annotated[Path, typer.Option(help="Folder for *.schema.json.")] = Path("eval/schemas"),
    docs: Annotated[
        Path, typer.Option(help="The configuration reference generated from the params.")
    ] = Path("docs/configuration.md"),
) -> None:
    """Write the JSON Schema of every file format and the configuration reference."""
    from agenteval.benchmarks.base import params_model, schemas
    from agenteval.schema.export import export
    from agenteval.schema.reference import write_reference

    params = params_model()
    for path in [*export(out, params, schemas()), write_reference(docs, params)]:
        typer.echo(str(path))


@schema_app.command("check")
def schema_check(
    out: Annotated[Path, typer.Option()] = Path("eval/schemas"),
    docs: Annotated[
        Path | None,
        typer.Option(help="The configuration reference; by default docs/configuration.md, if any."),
    ] = None,
) -> None:
    """Exit 1 when an exported schema or the configuration reference is missing or stale.

    A project that evaluates its agent with agenteval keeps the schemas, not necessarily
    agenteval's configuration reference: without --docs, a missing one is not asked for."""
    from agenteval.benchmarks.base import params_model, schemas
    from agenteval.schema.export import stale
    from agenteval.schema.reference import FIX, REFERENCE, stale_reference

    asked = docs is not None or REFERENCE.is_file()
    docs = docs or REFERENCE
    params = params_model()
    names = [
        *stale(out, params, schemas()),
        *([str(docs)] if asked and stale_reference(docs, params) else []),
    ]
    if names:
        fail([f"stale schema(s): {', '.join(names)}; run `{FIX}`"], 1)
    typer.echo(f"schemas{' and the configuration reference' if asked else ''} are current")


def register(app: typer.Typer) -> None:
    app.command()(fetch)
    app.add_typer(schema_app, name="schema")
    app.add_typer(corpus_app, name="corpus")
