"""Memory `mcp`: any memory served over MCP, driven through the tools its configuration names.

`memory.adapter.tools` maps each operation to the server's tool name; an operation mapped
to null (or left out, for the optional ones) is one the server does not have. Required:
remember, recall, dump. Optional: update (complete and cancel are updates with a status),
forget, record_turn, consolidate, prune, reset. `memory.adapter.arguments` renames our
argument names to the server's (null drops one), and `memory.adapter.clock` names the
argument that carries the simulated time on every call (null: the server gets none and uses
its own clock, which the report then cannot trust for time-based checks).

The server is a command launched over stdio (`command`; `{store}` in it becomes the
scenario's own store folder, so every scenario starts empty and every chat's fresh
connection sees the same store; `env` names the variables passed on, by name only) or a
streamable HTTP endpoint (`url`, which then needs a `reset` tool, called before each
scenario). Each chat is a new connection.

What we send: remember {text, kind, key, about, source, due, chat}; update {key, text,
status, due}; forget {about}; recall {request}; record_turn {chat, user, tools}. What we
read back: writes as {"status": stored|updated|refused|missing|forgotten, "reason"} (a tool
error is a refusal with its text); recall as lines ({"lines": [...]}, {"sections": {name:
[...]}} or plain text, a line each); dump as items ({"items": [...]} or a list of {id,
kind, text, key, status, due}).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
from datetime import datetime
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_types import CallToolResult, TextContent

from agenteval.fileio import code_of, digest_of
from agenteval.memory.base import (
    Consolidator,
    MemoryServerError,
    Shown,
    TurnContext,
    Upkeep,
    Written,
)
from agenteval.schema.memory_items import Candidate, StoredItem
from agenteval.schema.transcript import Participant

REQUIRED = ("remember", "recall", "dump")
OPTIONAL = ("update", "forget", "record_turn", "consolidate", "prune", "reset")
ARGUMENTS = (
    "text",
    "kind",
    "key",
    "about",
    "source",
    "due",
    "chat",
    "status",
    "request",
    "user",
    "tools",
)
OUTCOMES = ("stored", "updated", "refused", "missing", "forgotten")
STATUS = {"complete": "done", "cancel": "cancelled"}
WRITES = ("remember", "update", "forget")
KEYS = frozenset(
    {"kind", "command", "url", "cwd", "env", "tools", "arguments", "clock", "call_timeout_s"}
)


def _names(section: dict[str, Any]) -> dict[str, str | None]:
    given = section.get("tools") or {}
    if not isinstance(given, dict):
        raise ValueError("memory.adapter.tools must be a mapping of operation -> tool name")
    unknown = sorted(set(given) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise ValueError(
            f"memory.adapter.tools: unknown operation(s) {unknown} "
            f"(known: {', '.join(REQUIRED + OPTIONAL)})"
        )
    names: dict[str, str | None] = {op: op for op in REQUIRED}
    names |= {op: None for op in OPTIONAL}
    names |= {op: (None if v is None else str(v)) for op, v in given.items()}
    missing = [op for op in REQUIRED if not names[op]]
    if missing:
        raise ValueError(f"memory.adapter.tools: the server must have {', '.join(missing)}")
    return names


def decode(outcome: CallToolResult) -> Any:
    text = "\n".join(c.text for c in outcome.content if isinstance(c, TextContent))
    value: Any = text
    with contextlib.suppress(ValueError):
        value = json.loads(text) if text else None
    structured = outcome.structured_content
    if not isinstance(value, (dict, list)) and isinstance(structured, dict):
        value = structured.get("result", structured)
    if outcome.is_error:
        raise ToolRefused(text or "the tool reported an error")
    return value


class ToolRefused(Exception):
    """The server answered the call with an error: for a write, a refusal."""


class MCPMemory:
    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = dict(params.get("adapter") or {})
        unknown = sorted(set(section) - KEYS)
        if unknown:
            raise ValueError(f"memory.adapter: unknown key(s) for kind mcp: {unknown}")
        self.root = root
        self.tools = _names(section)
        renames = section.get("arguments") or {}
        bad = sorted(set(renames) - set(ARGUMENTS))
        if bad:
            raise ValueError(
                f"memory.adapter.arguments: unknown name(s) {bad} (known: {', '.join(ARGUMENTS)})"
            )
        self.arguments: dict[str, str | None] = {a: a for a in ARGUMENTS}
        self.arguments |= dict(renames)
        self.clock = section.get("clock")
        command, self.url = section.get("command"), section.get("url")
        if bool(command) == bool(self.url):
            raise ValueError("memory.adapter (kind mcp) needs exactly one of command or url")
        if self.url and not self.tools["reset"]:
            raise ValueError(
                "memory.adapter: a url server needs tools.reset, called before each scenario"
            )
        self.argv = (
            shlex.split(command) if isinstance(command, str) else [str(a) for a in command or []]
        )
        self.cwd = root / str(section.get("cwd") or ".")
        # Only variable NAMES live in params: keys never land in params files or digests.
        names = section.get("env") or []
        self.env_names = [names] if isinstance(names, str) else [str(n) for n in names]
        timeout = section.get("call_timeout_s")
        self.timeout = None if timeout is None else float(timeout)
        described = {
            "endpoint": self.url or self.argv,
            "tools": self.tools,
            "arguments": self.arguments,
            "clock": self.clock,
        }
        self.participant = Participant(
            kind="mcp",
            protocol="mcp-http" if self.url else "mcp-stdio",
            config_digest=digest_of({**described, "code": code_of(__name__)}),
            details=described,
        )
        self.server: StdioServerParameters | str | None = None
        self._stack: contextlib.AsyncExitStack | None = None
        self.client: Client | None = None

    # -- lifecycle -----------------------------------------------------------------------
    async def open(self, store: Path) -> None:
        if self.url:
            self.server = str(self.url)
            async with Client(self.server, read_timeout_seconds=self.timeout) as client:
                self.client = client
                await self._call("reset", {})
            self.client = None
            return
        store.mkdir(parents=True, exist_ok=True)
        argv = [a.replace("{store}", str(store)) for a in self.argv]
        env = {name: os.environ[name] for name in self.env_names if name in os.environ}
        self.server = StdioServerParameters(command=argv[0], args=argv[1:], cwd=self.cwd, env=env)

    async def start_chat(self, chat: str, now: datetime) -> None:
        assert self.server is not None, "open() first"
        self._stack = contextlib.AsyncExitStack()
        try:
            self.client = await self._stack.enter_async_context(
                Client(self.server, read_timeout_seconds=self.timeout)
            )
        except Exception as exc:
            raise MemoryServerError(
                f"cannot connect to the memory server: {_describe(exc)}"
            ) from exc

    async def end_chat(self) -> None:
        stack, self._stack, self.client = self._stack, None, None
        if stack is not None:
            await stack.aclose()

    async def close(self) -> None:
        await self.end_chat()

    # -- calls ---------------------------------------------------------------------------
    async def _call(self, op: str, arguments: dict[str, Any], now: datetime | None = None) -> Any:
        name = self.tools[op]
        assert name is not None and self.client is not None
        sent: dict[str, Any] = {}
        for ours, value in arguments.items():
            theirs = self.arguments.get(ours, ours)
            if theirs is not None and value is not None:
                sent[theirs] = value
        if self.clock and now is not None:
            sent[str(self.clock)] = now.isoformat()
        try:
            outcome = await self.client.call_tool(name, sent)
        except Exception as exc:
            raise MemoryServerError(f"{name}: {_describe(exc)}") from exc
        try:
            return decode(outcome)
        except ToolRefused as exc:
            if op in WRITES:
                raise  # a write the server turned down: a refusal, measured
            raise MemoryServerError(f"{name} failed: {exc}") from None

    async def _write(self, op: str, arguments: dict[str, Any], now: datetime) -> Written:
        if not self.tools[op]:
            return Written("missing", f"the server has no {op} tool")
        try:
            value = await self._call(op, arguments, now)
        except ToolRefused as exc:
            return Written("refused", str(exc))
        if isinstance(value, dict) and value.get("status") in OUTCOMES:
            reason = value.get("reason")
            return Written(value["status"], None if reason is None else str(reason))
        return Written("stored" if op == "remember" else "updated")

    async def remember(
        self, candidate: Candidate, now: datetime, context: TurnContext | None
    ) -> Written:
        due = candidate.due.isoformat() if candidate.due else None
        return await self._write(
            "remember",
            {
                "text": candidate.text,
                "kind": candidate.kind,
                "key": candidate.key,
                "about": candidate.about,
                "source": candidate.source,
                "due": due,
                "chat": context.chat if context else None,
            },
            now,
        )

    async def update(
        self, candidate: Candidate, now: datetime, context: TurnContext | None
    ) -> Written:
        due = candidate.due.isoformat() if candidate.due else None
        return await self._write(
            "update",
            {
                "key": candidate.key,
                "text": candidate.text,
                "status": STATUS.get(candidate.op),
                "due": due,
            },
            now,
        )

    async def forget(self, about: str, now: datetime) -> Written:
        return await self._write("forget", {"about": about}, now)

    async def record_turn(self, context: TurnContext) -> None:
        if self.tools["record_turn"]:
            tools = ", ".join(t.name for t in context.tools)
            await self._call(
                "record_turn",
                {"chat": context.chat, "user": context.user, "tools": tools},
                context.at,
            )

    async def recall(self, request: str, now: datetime) -> Shown:
        value = await self._call("recall", {"request": request}, now)
        if isinstance(value, dict) and isinstance(value.get("sections"), dict):
            return Shown({str(k): [str(x) for x in v] for k, v in value["sections"].items()})
        if isinstance(value, dict) and isinstance(value.get("lines"), list):
            return Shown({"Memory": [str(x) for x in value["lines"]]})
        if isinstance(value, list):
            return Shown({"Memory": [str(x) for x in value]})
        return Shown({"Memory": [ln for ln in str(value or "").splitlines() if ln.strip()]})

    async def dump(self, now: datetime) -> list[StoredItem]:
        value = await self._call("dump", {}, now)
        rows = value.get("items") if isinstance(value, dict) else value
        if not isinstance(rows, list):
            raise MemoryServerError(
                f"{self.tools['dump']}: expected a list of items, got {type(rows).__name__}"
            )
        found = []
        for index, row in enumerate(rows):
            if isinstance(row, str):
                row = {"text": row}
            if not isinstance(row, dict) or "text" not in row:
                raise MemoryServerError(f"{self.tools['dump']}: item {index} has no text")
            found.append(
                StoredItem(
                    id=str(row.get("id", index)),
                    kind=str(row.get("kind") or "fact"),
                    text=str(row["text"]),
                    key=row.get("key"),
                    about=row.get("about"),
                    status=row.get("status"),
                    due=row.get("due"),
                )
            )
        return found

    async def upkeep(self, chat: str, now: datetime, model: Consolidator) -> Upkeep:
        """The server's own consolidate and prune tools, if it has them (it has no model of
        ours to ask); the integer counts it returns are kept."""
        done = Upkeep()
        for op in ("consolidate", "prune"):
            if self.tools[op]:
                value = await self._call(op, {}, now)
                if isinstance(value, dict):
                    done.counts |= {
                        f"{op}.{k}": int(v) for k, v in value.items() if isinstance(v, int)
                    }
        return done


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return _describe(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
