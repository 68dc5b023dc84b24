"""Servers: `agenteval serve-mcp` (any target as an MCP agent), `agenteval serve-local`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval.cli.common import fail, load_params


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
    from agenteval.serve.mcp import TRANSPORTS, serve
    from agenteval.targets.base import make_target

    if transport not in TRANSPORTS:
        fail([f"--transport must be one of {', '.join(TRANSPORTS)}"])
    params = load_params(params_file, list(set_ or []))
    root = Path.cwd().resolve()
    try:  # a target that cannot be built (a library that exposes the key...) is one line
        target = make_target(params, root)
    except ValueError as exc:
        fail([f"cannot serve: {exc}"])
    # On stdio, stdout carries the protocol: nothing else may be printed there.
    serve(params, root, transport=transport, host=host, port=port, target=target)


def serve_local(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1.")] = 8080,
    host: Annotated[str, typer.Option(help="Address to bind.")] = "127.0.0.1",
    model_alias: Annotated[str, typer.Option(help="Model name clients use.")] = "smollm2-135m",
    n_ctx: Annotated[int, typer.Option(help="Context window in tokens.")] = 4096,
) -> None:
    """Serve the bundled SmolLM2-135M over the OpenAI protocol (needs the `local` extra)."""
    from agenteval.serve.local import LocalServerError
    from agenteval.serve.local import serve_local as run_server

    try:
        run_server(host=host, port=port, model_alias=model_alias, n_ctx=n_ctx)
    except LocalServerError as exc:
        fail([f"serve-local: {exc}"], 1)


def register(app: typer.Typer) -> None:
    app.command("serve-mcp")(serve_mcp)
    app.command("serve-local")(serve_local)
