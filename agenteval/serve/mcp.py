"""`agenteval serve-mcp`: any configured target, exposed as an MCP server with the Agent UI tools.

The tool set, signatures and result shapes are those of the reference system's Agent UI
server (`system_status`, `create_session`, `index_document`, `send_message`, `get_messages`,
`delete_session`), so the `mcp` target — or the reference runner — can drive a builtin or chat
agent exactly as it drives an external one. That is how the MCP path is tested end to end.

Every failure comes back as `{"status": "error", "error": ...}` (with the reference's
`detail` alongside), never as an MCP protocol error, because that is what clients of the
reference server check.

    python -m agenteval.serve.mcp --transport stdio
    python -m agenteval.serve.mcp --transport http --port 8765 --set target.kind=chat
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from agenteval.params import load_params
from agenteval.schema.scenario import IndexDocument, Scenario, Setup, Turn
from agenteval.schema.transcript import ToolCall
from agenteval.targets.base import (
    AgentReply,
    AgentSession,
    SessionContext,
    SetupFailed,
    Target,
    make_target,
)
from agenteval.targets.mcp import TITLE

TRANSPORTS = ("stdio", "http")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
# The reference server truncates step summaries to keep send_message replies readable.
SUMMARY_CHARS = 300


def error(message: str) -> dict[str, Any]:
    return {"status": "error", "error": message, "detail": message}


@dataclass
class Hosted:
    """One chat session: the wrapped agent session and what was said in it."""

    id: str
    title: str
    agent_type: str | None
    session: AgentSession
    created_at: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    # A session answers one message at a time, like a person in a chat window.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    def describe(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "agent_type": self.agent_type,
            "created_at": self.created_at,
            "message_count": len(self.messages),
        }


def summary_of(call: ToolCall) -> str:
    if not call.ok:
        return str(call.error or "failed")
    text = call.result if isinstance(call.result, str) else json.dumps(call.result, default=str)
    return text[:SUMMARY_CHARS]


def step_of(call: ToolCall) -> dict[str, Any]:
    """A tool call as an Agent UI step; `result` keeps the full value for exact transcripts."""
    return {
        "tool": call.name,
        "success": call.ok,
        "summary": summary_of(call),
        "arguments": call.arguments,
        "result": call.result,
        "error": call.error,
        "latency_ms": call.latency_ms,
        "fenced": call.fenced,  # a read outside the corpus, refused: the client records it
    }


class AgentHost:
    """Sessions keyed by id, each wrapping one AgentSession of the configured target."""

    def __init__(self, target: Target, root: Path, seed: int = 0) -> None:
        self.target = target
        self.root = root
        self.seed = seed
        self.sessions: dict[str, Hosted] = {}

    async def system_status(self) -> dict[str, Any]:
        who = self.target.participant
        return {
            "status": "ok",
            "target": {"kind": who.kind, "model": who.model, "protocol": who.protocol},
            "sessions": len(self.sessions),
        }

    async def create_session(self, title: str, agent_type: str | None) -> dict[str, Any]:
        # The target API opens sessions for a scenario; a chat client has none, so the
        # session gets a stand-in that carries only what a client can say: title and type.
        # Titles from the mcp target name the unit (scenario, iteration, seed): honour them.
        unit = TITLE.match(title or "")
        scenario_id = unit["scenario"] if unit else title or "session"
        seed = int(unit["seed"]) if unit else self.seed
        iteration = int(unit["iteration"]) if unit else 0
        stand_in = Scenario(
            id=scenario_id,
            category="mcp",
            persona="mcp client",
            agent_type=agent_type,
            setup=Setup(index_documents=[]),
            turns=[Turn(turn=1, objective="chat over MCP")],
        )
        ctx = SessionContext(root=self.root, seed=seed, iteration=iteration)
        session = await self.target.open_session(stand_in, ctx)
        hosted = Hosted(
            id=uuid.uuid4().hex,
            title=title,
            agent_type=agent_type,
            session=session,
            created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        )
        self.sessions[hosted.id] = hosted
        return hosted.describe()

    def _get(self, session_id: str) -> Hosted:
        if session_id not in self.sessions:
            raise LookupError(f"no session {session_id!r}")
        return self.sessions[session_id]

    async def index_document(self, filepath: str, session_id: str) -> dict[str, Any]:
        if not session_id:
            # Documents live in an agent session here; there is no global library to fill.
            return error("session_id is required: this server indexes per session")
        hosted = self._get(session_id)
        async with hosted.lock:
            try:
                calls = await hosted.session.setup([IndexDocument(path=filepath)])
            except SetupFailed as exc:
                fenced = any(c.fenced for c in exc.calls)
                return error(str(exc)) | {"filepath": filepath, "fenced": fenced}
        indexing = [c for c in calls if c.name == "index_document"]
        if not indexing:
            return {"status": "success", "chunk_count": None, "filepath": filepath}
        last = indexing[-1]
        if not last.ok:
            return error(str(last.error)) | {"filepath": filepath, "fenced": last.fenced}
        result = last.result if isinstance(last.result, dict) else {}
        return {
            "status": "success",
            "chunk_count": result.get("chunk_count"),
            "filepath": filepath,
            "path": result.get("path"),
        }

    async def send_message(self, session_id: str, message: str) -> dict[str, Any]:
        hosted = self._get(session_id)
        async with hosted.lock:
            start = time.perf_counter()
            reply: AgentReply = await hosted.session.send(message)
            latency = round((time.perf_counter() - start) * 1000, 3)
        steps = [step_of(c) for c in reply.tool_calls]
        usage = reply.usage.model_dump(exclude_none=True) if reply.usage else {}
        # Token counts and cost ride in stats, where the mcp target reads them back.
        stats = {"latency_ms": latency, **usage}
        hosted.messages.append({"role": "user", "content": message})
        hosted.messages.append(
            {"role": "assistant", "content": reply.response, "agent_steps": steps, "stats": stats}
        )
        # The models that answered, as the wrapped agent read them back: what an mcp client's
        # model pin (run.agent_model) checks.
        return {"content": reply.response, "agent_steps": steps, "event_log": [], "stats": stats,
                "models": reply.models or []}  # fmt: skip

    async def get_messages(self, session_id: str) -> dict[str, Any]:
        messages = self._get(session_id).messages
        return {"messages": list(messages), "total": len(messages)}

    async def delete_session(self, session_id: str) -> dict[str, Any]:
        hosted = self._get(session_id)
        del self.sessions[session_id]
        await hosted.session.close()
        return {"deleted": True, "session_id": session_id}

    async def close_all(self) -> None:
        for session_id in list(self.sessions):
            hosted = self.sessions.pop(session_id)
            try:
                await hosted.session.close()
            except Exception:  # one broken session must not keep the others open
                continue


async def guarded(action: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """Any failure as the reference's error dict: clients check status, not exceptions."""
    try:
        return await action
    except LookupError as exc:
        return error(str(exc.args[0]) if exc.args else str(exc))
    except Exception as exc:
        return error(f"{type(exc).__name__}: {exc}")


def build_server(agents: AgentHost) -> MCPServer:
    """The Agent UI tool set over `agents`, with the reference's names and signatures."""
    server: MCPServer = MCPServer(
        name="agenteval",
        instructions="An agent under evaluation, behind the Agent UI tool set.",
        log_level="WARNING",
    )
    # The SDK puts a handler on the root logger that shows libraries' DEBUG records (bm25s
    # logs every index build); on stdio they would flood the evaluating client's stderr.
    for handler in logging.getLogger().handlers:
        handler.setLevel(logging.WARNING)

    @server.tool()
    async def system_status() -> dict[str, Any]:
        """Check the agent's status: which target answers, and how many sessions are open."""
        return await guarded(agents.system_status())

    @server.tool()
    async def create_session(
        title: str = "New Chat", agent_type: str | None = None
    ) -> dict[str, Any]:
        """Create a new chat session. Returns the session object with its ID."""
        return await guarded(agents.create_session(title, agent_type))

    @server.tool()
    async def index_document(filepath: str, session_id: str = "") -> dict[str, Any]:
        """Index a document file into a session. Returns its chunk_count."""
        return await guarded(agents.index_document(filepath, session_id))

    @server.tool()
    async def send_message(session_id: str, message: str) -> dict[str, Any]:
        """Send a message to the agent in a session and wait for the full response."""
        return await guarded(agents.send_message(session_id, message))

    @server.tool()
    async def get_messages(session_id: str) -> dict[str, Any]:
        """Get all messages in a session, with agent steps."""
        return await guarded(agents.get_messages(session_id))

    @server.tool()
    async def delete_session(session_id: str) -> dict[str, Any]:
        """Delete a chat session and close its agent session."""
        return await guarded(agents.delete_session(session_id))

    return server


async def _run(server: MCPServer, agents: AgentHost, transport: str, host: str, port: int) -> None:
    try:
        if transport == "stdio":
            await server.run_stdio_async()
            return
        import uvicorn

        app = server.streamable_http_app(host=host)
        print(f"agenteval MCP server on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        await uvicorn.Server(config).serve()
    finally:
        await agents.close_all()  # agent sessions may hold HTTP clients or subprocesses


def serve(
    params: dict[str, Any],
    root: Path,
    transport: str = "stdio",
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    target: Target | None = None,
) -> None:
    """Serve `params["target"]` (whatever make_target builds, unless `target` is given
    already built) until stdin closes or Ctrl-C."""
    if transport not in TRANSPORTS:
        raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}, got {transport!r}")
    target = target or make_target(params, root)
    agents = AgentHost(target, root, seed=int((params.get("suite") or {}).get("seed", 0)))
    asyncio.run(_run(build_server(agents), agents, transport, host, port))


def serve_command(
    transport: str = "stdio",
    port: int = DEFAULT_PORT,
    sets: Sequence[str] = (),
    host: str = DEFAULT_HOST,
    params_file: Path = Path("params.yaml"),
    root: Path | None = None,
) -> None:
    """What `agenteval serve-mcp` does: params.yaml plus --set overrides, then serve."""
    root = (root or Path.cwd()).resolve()
    path = params_file if params_file.is_absolute() else root / params_file
    serve(load_params(path, list(sets)), root, transport=transport, host=host, port=port)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="agenteval serve-mcp", description=__doc__)
    parser.add_argument("--transport", choices=TRANSPORTS, default="stdio")
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT)
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: .)")
    args = parser.parse_args(argv)
    serve_command(args.transport, args.port, args.sets, args.host, args.params, args.root)


if __name__ == "__main__":
    main()
