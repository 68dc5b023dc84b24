"""Target `claude-code`: Claude Code itself, driven as an external harness (`claude -p`).

Each turn runs `claude -p <message> --output-format stream-json --verbose` in the
conversation's working directory (the repository a session replay runs in); later turns add
`--resume <session id>` so the harness keeps its own context. The stream is one JSON event a
line: `system` (init, with the session id), `assistant` (text and tool_use blocks), `user`
(tool results) and a final `result` (the answer, usage, cost, is_error). The answer is the
result's text; the tool calls are the tool_use blocks, matched to their results.

`claude` must be on PATH (or named by `target.command`): without it the target is refused
when it is built, before any work starts.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of
from agenteval.schema.scenario import IndexDocument, Scenario
from agenteval.schema.transcript import Participant, ToolCall, Usage
from agenteval.targets.base import AgentReply, SessionContext, distinct

KIND = "claude-code"
DEFAULT_COMMAND = "claude"
PROTOCOL = "claude-code-stream-json"
DEFAULT_TURN_TIMEOUT_S = 900.0
# Words of a failed result that mean the account, not the request, is the problem.
QUOTA_WORDS = ("credit", "usage limit", "rate limit", "quota", "api key", "log in", "login")


class NotInstalled(ValueError):
    """The harness's command is not on this machine."""


def command_of(section: Mapping[str, Any]) -> list[str]:
    command = section.get("command") or DEFAULT_COMMAND
    argv = shlex.split(command) if isinstance(command, str) else [str(a) for a in command]
    if not argv:
        raise ValueError("target.command is empty")
    if shutil.which(argv[0]) is None:
        raise NotInstalled(
            f"target.kind {KIND} runs Claude Code's `{argv[0]}` command, which is not "
            "installed here (not on PATH): install Claude Code, or set target.command to "
            "its path; nothing was run"
        )
    return argv


def command_line(argv: list[str], message: str, model: str | None, resume: str | None) -> list[str]:
    """The argv of one turn: print mode, streamed JSON events, resumed after the first."""
    cmd = [*argv, "-p", message, "--output-format", "stream-json", "--verbose"]
    if model:
        cmd += ["--model", model]
    if resume:
        cmd += ["--resume", resume]
    return cmd


@dataclass
class StreamResult:
    session_id: str | None = None
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    error: str | None = None
    quota: bool = False
    said: list[str] = field(default_factory=list)  # assistant texts, if no result arrives
    models: list[str | None] = field(default_factory=list)  # each assistant message's model


def _usage(event: Mapping[str, Any]) -> Usage:
    usage = event.get("usage")
    raw: Mapping[str, Any] = usage if isinstance(usage, Mapping) else {}
    cost = event.get("total_cost_usd")
    return Usage(
        input_tokens=raw.get("input_tokens"),
        output_tokens=raw.get("output_tokens"),
        cache_read_tokens=raw.get("cache_read_input_tokens"),
        cache_write_tokens=raw.get("cache_creation_input_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
        # Claude Code's own total_cost_usd: the list price of its tokens, not a bill.
        cost_source="api_equivalent" if isinstance(cost, int | float) else None,
    )


def _blocks(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = (event.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _result_text(content: Any) -> Any:
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return content


def _finish(found: StreamResult, event: Mapping[str, Any]) -> None:
    found.text = str(event.get("result") or "")
    found.usage = _usage(event)
    if event.get("is_error"):
        found.error = f"{event.get('subtype') or 'error'}: {found.text or 'no result text'}"
        lowered = found.text.lower()
        status = event.get("api_error_status")
        found.quota = status in (401, 402, 403, 429) or any(w in lowered for w in QUOTA_WORDS)


def parse_stream(lines: Iterable[str]) -> StreamResult:
    """The turn a stream-json output describes; lines that are not JSON are ignored."""
    found = StreamResult()
    calls: dict[str, ToolCall] = {}
    for raw in lines:
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(event, Mapping):
            continue
        found.session_id = event.get("session_id") or found.session_id
        kind = event.get("type")
        if kind == "assistant":
            model = (event.get("message") or {}).get("model")
            found.models = distinct([*found.models, str(model) if model else None])
        for block in _blocks(event):
            if kind == "assistant" and block.get("type") == "tool_use":
                arguments = dict(block.get("input") or {})
                calls[str(block.get("id"))] = ToolCall(
                    name=str(block.get("name")), arguments=arguments
                )
                found.tool_calls.append(calls[str(block.get("id"))])
            elif kind == "assistant" and block.get("type") == "text":
                found.said.append(str(block.get("text") or ""))
            elif kind == "user" and block.get("type") == "tool_result":
                answered = calls.get(str(block.get("tool_use_id")))
                if answered is not None:
                    answered.ok = not block.get("is_error")
                    answered.result = _result_text(block.get("content"))
                    answered.error = None if answered.ok else str(answered.result)[:500]
        if kind == "result":
            _finish(found, event)
    if found.usage is None and found.error is None:
        found.error = "the stream ended without a result event"
        found.text = found.said[-1] if found.said else ""
    return found


class ClaudeCodeTarget:
    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params["target"]
        self.argv = command_of(section)
        self.model = section.get("model") or None
        timeout = section.get("call_timeout_s")
        self.turn_timeout_s = float(timeout) if timeout else DEFAULT_TURN_TIMEOUT_S
        identity = {"command": self.argv, "model": self.model, "code": code_of(__name__)}
        self.participant = Participant(
            kind=KIND,
            model=self.model,
            protocol=PROTOCOL,
            config_digest=digest_of(identity),
            details=identity,
        )

    async def open_session(self, scenario: Scenario, ctx: SessionContext) -> ClaudeCodeSession:
        return ClaudeCodeSession(self, ctx)


class ClaudeCodeSession:
    def __init__(self, target: ClaudeCodeTarget, ctx: SessionContext) -> None:
        self.target, self.ctx = target, ctx
        self.session_id: str | None = None

    async def setup(self, documents: list[IndexDocument]) -> list[ToolCall]:
        return []  # the harness reads the repository's files itself

    async def send(self, message: str) -> AgentReply:
        from agenteval.llm.retry import QuotaExhausted

        argv = command_line(self.target.argv, message, self.target.model, self.session_id)
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=self.ctx.root,
            env=dict(os.environ),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), self.target.turn_timeout_s)
        except BaseException:
            if process.returncode is None:
                process.kill()
                await process.wait()
            raise
        found = parse_stream(out.decode("utf-8", "replace").splitlines())
        self.session_id = found.session_id or self.session_id
        if found.quota:
            raise QuotaExhausted(f"claude-code: {found.error}")
        if found.error is not None or process.returncode:
            detail = found.error or err.decode("utf-8", "replace").strip()[-300:]
            raise RuntimeError(f"claude exited {process.returncode}: {detail}")
        return AgentReply(found.text, found.tool_calls, found.usage, found.models or [None])

    async def close(self) -> None:
        return None
