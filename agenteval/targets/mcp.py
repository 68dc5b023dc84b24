"""Target `mcp`: an external agent exposed as an MCP server, driven through the Agent UI tools.

The server is either a command launched as a stdio subprocess (`target.command`) or a
streamable HTTP endpoint (`target.url`). Per scenario the session calls `system_status`,
`create_session` (with the scenario's `agent_type`), `index_document` for every setup
document (absolute paths: the agent does not know our repository root), then `send_message`
per turn, and finally `delete_session` — also when anything failed. The agent's reported
`agent_steps` become the transcript's tool calls.

Other agents name their tools and arguments differently: `target.tools` maps our tool names
to theirs and `target.arguments` our argument names to theirs (null drops an argument).

One MCP connection per session, not per target: the Target protocol has no close hook, and
each engine unit runs in its own task, so a per-session connection is the only one that can
always be closed by the code that opened it. It also gives every scenario a fresh agent
process on stdio, as the reference runner does. The connection lives in a task of its own
(the MCP client's task groups must be entered and left by one task) and `close()` stops that
task, so a timeout cancelling the scenario still ends the subprocess or HTTP session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shlex
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from agenteval.fileio import code_of, digest_of
from agenteval.schema.scenario import IndexDocument, Scenario
from agenteval.schema.status import Status
from agenteval.schema.transcript import Participant, ToolCall, Usage
from agenteval.targets.base import AgentReply, SessionContext, SetupFailed
from agenteval.targets.fence import Fence, corpus_fence

TOOLS = (
    "system_status",
    "create_session",
    "index_document",
    "send_message",
    "get_messages",
    "delete_session",
)
ARGUMENTS = ("title", "agent_type", "filepath", "session_id", "message")
# An empty index is the point of these scenarios (empty or hostile files), not a setup fault.
ADVERSARIAL = "adversarial"
# Step keys that describe the call itself; whatever else a step carries is its result.
STEP_CALL_KEYS = ("tool", "name", "success", "arguments", "args", "error", "latency_ms", "fenced")
# Arguments of a reported step that name a file the agent read (checked against the fence).
PATH_ARGUMENTS = ("path", "filepath", "file_path", "file", "filename", "document")
DEFAULT_CLOSE_TIMEOUT_S = 30.0
# Session titles carry the unit's identity, so an agenteval server (serve-mcp) can give its
# session the same scenario id, seed and iteration as a direct run: sampled agents then draw
# the same samples, and repeats stay independent samples in a response cache.
TITLE = re.compile(r"^agenteval (?P<scenario>\S+) #(?P<iteration>\d+) seed (?P<seed>-?\d+)$")


def session_title(scenario_id: str, ctx: SessionContext) -> str:
    return f"agenteval {scenario_id} #{ctx.iteration} seed {ctx.seed}"


class Unreachable(Exception):
    """The MCP transport failed (connection lost, protocol error, timeout): not the agent's
    answer but the infrastructure, so the scenario ends INFRA_ERROR."""


def _mapping(section: Mapping[str, Any], key: str, known: tuple[str, ...]) -> dict[str, Any]:
    value = section.get(key) or {}
    if not isinstance(value, Mapping):
        raise ValueError(f"target.{key} must be a mapping, got {type(value).__name__}")
    unknown = sorted(set(value) - set(known))
    if unknown:  # a typo would otherwise silently call the default name
        raise ValueError(f"target.{key}: unknown name(s) {unknown} (known: {', '.join(known)})")
    return dict(value)


def _server_of(section: Mapping[str, Any], root: Path) -> StdioServerParameters | str:
    command, url = section.get("command"), section.get("url")
    if bool(command) == bool(url):
        raise ValueError("target kind mcp needs exactly one of target.command or target.url")
    if url:
        return str(url)
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command or []]
    if not argv:
        raise ValueError("target.command is empty")
    # Only variable *names* live in params, so keys never land in params files or digests.
    names = section.get("env") or []
    names = [names] if isinstance(names, str) else list(names)
    passed = {name: os.environ[name] for name in names if name in os.environ}
    cwd = root / str(section.get("cwd") or ".")
    return StdioServerParameters(command=argv[0], args=argv[1:], env=passed, cwd=cwd)


class MCPTarget:
    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params["target"]
        self.root = root
        self.server = _server_of(section, root)
        self.tools = {name: name for name in TOOLS} | _mapping(section, "tools", TOOLS)
        self.arguments = {name: name for name in ARGUMENTS} | _mapping(
            section, "arguments", ARGUMENTS
        )
        timeout = section.get("call_timeout_s")
        self.call_timeout_s = None if timeout in (None, "") else float(timeout)
        self.close_timeout_s = float(section.get("close_timeout_s") or DEFAULT_CLOSE_TIMEOUT_S)
        self.fence = corpus_fence(params, root)
        stdio = isinstance(self.server, StdioServerParameters)
        endpoint: Any = self.server
        if isinstance(self.server, StdioServerParameters):
            endpoint = [self.server.command, *self.server.args]
        self.participant = Participant(
            kind="mcp",
            model=section.get("model"),
            protocol="mcp-stdio" if stdio else "mcp-http",
            config_digest=digest_of(
                {
                    "endpoint": endpoint,
                    "tools": self.tools,
                    "arguments": self.arguments,
                    "model": section.get("model"),
                    "corpus": self.fence.shown(),
                    "code": code_of(__name__),
                }
            ),
            details={"tools": self.tools, "code": code_of(__name__)},
        )

    async def open_session(self, scenario: Scenario, ctx: SessionContext) -> MCPSession:
        # No I/O here: the engine only guarantees close() once open_session has returned,
        # so everything that needs undoing happens in setup().
        return MCPSession(self, scenario, ctx)


class Connection:
    """One MCP client connection, owned by a background task from open to close."""

    def __init__(self, server: StdioServerParameters | str, call_timeout_s: float | None) -> None:
        self.server = server
        self.call_timeout_s = call_timeout_s
        self.client: Client | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def open(self) -> None:
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._task = asyncio.create_task(self._own(ready))
        # The outcome is reported through `ready` or ignored at close; never "never retrieved".
        self._task.add_done_callback(lambda t: None if t.cancelled() else t.exception())
        try:
            self.client = await ready
        except BaseException:
            self._task.cancel()
            await self.close()
            raise

    async def _own(self, ready: asyncio.Future[Client]) -> None:
        try:
            async with Client(self.server, read_timeout_seconds=self.call_timeout_s) as client:
                if not ready.done():  # done: open() was cancelled meanwhile
                    ready.set_result(client)
                await self._stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    async def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, Any, str | None]:
        """(ok, result, error) of one tool call; transport failures raise Unreachable."""
        if self.client is None:
            raise Unreachable("not connected")
        try:
            outcome = await self.client.call_tool(name, arguments)
        except Exception as exc:
            raise Unreachable(f"{name}: {_describe(exc)}") from exc
        return decode(outcome)

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            # wait() never re-raises the task's error: a failed shutdown must not replace
            # the scenario's own outcome. A cancelled caller leaves the task finishing alone.
            await asyncio.wait({self._task})
        self.client = None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])  # anyio wraps the one real cause in a group
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def decode(outcome: CallToolResult) -> tuple[bool, Any, str | None]:
    """A tool result as (ok, value, error); Agent UI tools report failure as status=error."""
    text = "\n".join(c.text for c in outcome.content if isinstance(c, TextContent))
    value: Any = None
    with contextlib.suppress(ValueError):
        value = json.loads(text) if text else None
    # The text is the unwrapped value; structured content may be wrapped as {"result": ...}.
    if not isinstance(value, dict):
        structured = outcome.structured_content
        value = structured if isinstance(structured, dict) else {"content": text}
    failed = bool(outcome.is_error) or value.get("status") == "error"
    if not failed:
        return True, value, None
    why = value.get("error") or value.get("detail") or value.get("message") or text
    return False, value, str(why or "tool reported an error")


def chunk_count(result: Any) -> int | None:
    """Chunks reported by index_document, top level or nested under "result"; None: unknown."""
    if not isinstance(result, dict):
        return None
    for holder in (result, result.get("result")):
        if isinstance(holder, dict) and isinstance(holder.get("chunk_count"), int):
            return int(holder["chunk_count"])
    return None


def step_call(step: Mapping[str, Any], fence: Fence | None = None) -> ToolCall:
    """One reported agent step as a transcript tool call (name=tool, ok=success). Fenced
    when the agent says so (an agenteval server) or, checked against `fence`, when a path
    argument names a file outside the corpus: an external agent's own tools are not ours to
    refuse, but the attempt is recorded all the same."""
    ok = step.get("success", True) is not False
    extras = {k: v for k, v in step.items() if k not in STEP_CALL_KEYS}
    if "result" in step:
        result = step["result"]
    elif set(extras) <= {"summary"}:
        result = extras.get("summary")
    else:
        result = extras  # e.g. command, stdout, exit_code next to the summary
    arguments = step.get("arguments") or step.get("args")
    error = step.get("error") or (None if ok else step.get("summary"))
    latency = step.get("latency_ms")
    arguments = dict(arguments) if isinstance(arguments, Mapping) else {}
    named = [v for k, v in arguments.items() if k in PATH_ARGUMENTS and isinstance(v, str)]
    return ToolCall(
        name=str(step.get("tool") or step.get("name") or "unknown"),
        arguments=arguments,
        ok=ok,
        result=result,
        error=None if error is None else str(error),
        latency_ms=float(latency) if isinstance(latency, (int, float)) else None,
        fenced=step.get("fenced") is True or any(fence and fence.outside(p) for p in named),
    )


def usage_of(stats: Any) -> Usage | None:
    """Token counts (and cost, when the server knows it) from send_message's stats."""
    if not isinstance(stats, Mapping):
        return None
    known = {k: stats[k] for k in Usage.model_fields if stats.get(k) is not None}
    if known.get("cost_usd") is not None and not known.get("cost_source"):
        known["cost_source"] = "api_equivalent"  # the agent's own reported cost
    return Usage.model_validate(known) if known else None


def models_of(result: Mapping[str, Any]) -> list[str | None]:
    """The models the server says answered: `models` (a list, as serve-mcp reports them) or
    `model` at the top level or in stats; [None] when it names none."""
    stats = result.get("stats")
    found = result.get("models")
    if isinstance(found, list) and found:
        return [str(m) if m else None for m in found]
    named = result.get("model") or (stats.get("model") if isinstance(stats, Mapping) else None)
    return [str(named)] if named else [None]


class MCPSession:
    def __init__(self, target: MCPTarget, scenario: Scenario, ctx: SessionContext) -> None:
        self.target = target
        self.scenario = scenario
        self.ctx = ctx
        self.connection = Connection(target.server, target.call_timeout_s)
        self.session_id: str | None = None
        self.setup_calls: list[ToolCall] = []

    async def _call(self, tool: str, **arguments: Any) -> ToolCall:
        """Call one of our tools under the server's names; the record keeps our names."""
        sent = {
            self.target.arguments[k]: v
            for k, v in arguments.items()
            if v is not None and self.target.arguments[k]
        }
        start = time.perf_counter()
        ok, result, error = await self.connection.call(self.target.tools[tool], sent)
        latency = round((time.perf_counter() - start) * 1000, 3)
        return ToolCall(
            name=tool, arguments=arguments, ok=ok, result=result, error=error, latency_ms=latency
        )

    async def setup(self, documents: list[IndexDocument]) -> list[ToolCall]:
        try:
            await self.connection.open()
        except Exception as exc:
            raise SetupFailed(
                Status.INFRA_ERROR, f"MCP server unreachable: {_describe(exc)}"
            ) from exc
        try:
            await self._start()
            for doc in documents:
                await self._index(doc)
        except Unreachable as exc:
            raise SetupFailed(Status.INFRA_ERROR, str(exc), self.setup_calls) from exc
        return self.setup_calls

    async def _start(self) -> None:
        status = await self._call("system_status")
        if not status.ok:
            raise SetupFailed(Status.INFRA_ERROR, f"system_status failed: {status.error}", [status])
        created = await self._call(
            "create_session",
            title=session_title(self.scenario.id, self.ctx),
            agent_type=self.scenario.agent_type,
        )
        result = created.result if isinstance(created.result, dict) else {}
        session_id = result.get("id") or result.get("session_id")
        if not created.ok or not session_id:
            why = created.error or f"no session id in {result}"
            raise SetupFailed(Status.INFRA_ERROR, f"create_session failed: {why}", [created])
        self.session_id = str(session_id)

    async def _index(self, doc: IndexDocument) -> None:
        filepath = str((self.ctx.root / doc.path).resolve())
        if self.target.fence.outside(filepath):  # never hand the agent a file off the corpus
            refused = self.target.fence.refusal(doc.path)
            call = ToolCall(name="index_document", arguments={"path": doc.path}, ok=False)
            call.error, call.latency_ms, call.fenced = refused, 0.0, True
            self.setup_calls.append(call)
            raise SetupFailed(Status.SETUP_ERROR, refused, self.setup_calls)
        call = await self._call("index_document", filepath=filepath, session_id=self.session_id)
        # Recorded with the scenario's path, as the builtin records it; what was sent is
        # root/path, and a transcript's arguments should not depend on the checkout.
        call.arguments = {"path": doc.path}
        call.fenced = isinstance(call.result, dict) and call.result.get("fenced") is True
        self.setup_calls.append(call)
        if self.scenario.category == ADVERSARIAL:
            return
        if not call.ok:
            why = f"index_document failed for {doc.path}: {call.error}"
            raise SetupFailed(Status.SETUP_ERROR, why, self.setup_calls)
        if chunk_count(call.result) == 0:
            why = f"index_document produced 0 chunks for {doc.path}"
            raise SetupFailed(Status.SETUP_ERROR, why, self.setup_calls)

    async def send(self, message: str) -> AgentReply:
        try:
            call = await self._call("send_message", session_id=self.session_id, message=message)
        except Unreachable as exc:
            raise SetupFailed(Status.INFRA_ERROR, str(exc), self.setup_calls) from exc
        if not call.ok:
            # The engine records a SetupFailed's calls as the setup calls: pass them on intact.
            why = f"send_message failed: {call.error}"
            raise SetupFailed(Status.INFRA_ERROR, why, self.setup_calls)
        result = call.result if isinstance(call.result, dict) else {}
        steps = result.get("agent_steps") or []
        return AgentReply(
            response=str(result.get("content") or ""),
            tool_calls=[step_call(s, self.target.fence) for s in steps if isinstance(s, Mapping)],
            usage=usage_of(result.get("stats")),
            models=models_of(result),
        )

    async def close(self) -> None:
        try:
            if self.session_id is not None:
                # Best effort and bounded: a server that cannot delete must not hang the run.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        self._call("delete_session", session_id=self.session_id),
                        self.target.close_timeout_s,
                    )
                self.session_id = None
        finally:
            await self.connection.close()
