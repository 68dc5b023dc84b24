"""Claude Code as an external harness: `claude -p --output-format stream-json`, its transcript
parsed into the same tool record as the project's own harness.

Claude Code runs in the task's copy with the agent environment (no provider key: it signs in
with its own login, or, where target.base_url names an upstream, reaches it through the model
gateway with a dummy token, agenteval.benchmarks.tasks.gateway) and permissions skipped, as a
whole process inside the run's sandbox (agenteval.benchmarks.tasks.sandbox): its installation
and its login files read-only, the copy writable, the repository, the snapshot and the rest of
the home hidden; the network is on (its API needs it, so the commands it runs have it too). Its
stream is read line by line as it comes, so a task cut off at the cap keeps every call Claude
Code made up to then. Its tools are named in the record's vocabulary (Bash -> run, Read ->
read_file, Edit -> edit_file, ...), paths made relative to the copy, so `verified`,
`after_answer` and the judge read both harnesses alike; a Bash call's pytest report is the
evaluator's pytest recorder's (agenteval.benchmarks.tasks.recorder), never the transcript's.
Cost: Claude Code's own `total_cost_usd` (api_equivalent: a list price, not money spent) on
Anthropic models; otherwise its token counts with the rate card (harness_counts; the
gateway's own per-call counts when it went through one in this process), and n/a when it
counted none. Where `claude` is not installed the harness is refused before any task starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks.gateway import agent_endpoint, ledger_at
from agenteval.benchmarks.tasks.harness import TASK_PREAMBLE, AttemptContext, HarnessUnavailable
from agenteval.benchmarks.tasks.tools import ToolRecord
from agenteval.fileio import code_of, digest_of
from agenteval.llm.cost import PriceTable, api_equivalent_cost, harness_counts_cost
from agenteval.llm.types import Usage
from agenteval.schema.task_records import TaskUsage
from agenteval.schema.tasks import Task
from agenteval.schema.transcript import Participant

NAME = "Claude Code"
BASE_ARGS = (
    "--output-format",
    "stream-json",
    "--verbose",
    "--dangerously-skip-permissions",
    "--no-session-persistence",
)
# Claude Code's tools in the record's vocabulary: (name, {their argument: ours}).
TOOL_MAP: dict[str, tuple[str, dict[str, str]]] = {
    "Bash": ("run", {"command": "command"}),
    "Read": ("read_file", {"file_path": "path", "offset": "offset"}),
    "Write": ("write_file", {"file_path": "path", "content": "content"}),
    "Edit": ("edit_file", {"file_path": "path", "old_string": "old", "new_string": "new"}),
    "MultiEdit": ("edit_file", {"file_path": "path"}),
    "Grep": ("search", {"pattern": "pattern", "path": "path", "glob": "glob"}),
    "Glob": ("list_files", {"path": "path", "pattern": "glob"}),
    "LS": ("list_files", {"path": "path"}),
}
EXIT_CODE = re.compile(r"exit code[:\s]+(\d+)", re.IGNORECASE)
TIMED_OUT = re.compile(r"command timed out", re.IGNORECASE)


class ClaudeCodeFailed(RuntimeError):
    pass


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else json.dumps(content)


@dataclass
class StreamParser:
    """Claude Code's stream-json events into a ToolRecord (and its usage totals)."""

    record: ToolRecord
    workdir: Path
    pending: dict[str, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)
    with_tools: set[str] = field(default_factory=set)
    model: str | None = None
    result: dict[str, Any] | None = None
    # The pytest runs the evaluator's recorder made since the last command result: the only
    # source of a Bash call's pytest report (the transcript's text verifies nothing).
    observed: Callable[[], dict[str, int] | None] = lambda: None

    def feed(self, line: str | bytes) -> None:
        text = line.decode("utf-8", errors="replace") if isinstance(line, bytes) else line
        if not text.strip():
            return
        try:
            event = json.loads(text)
        except ValueError:
            return  # a stray non-JSON line (a warning) is not part of the transcript
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.model = event.get("model") or self.model
        elif kind == "assistant":
            self._assistant(event.get("message") or {})
        elif kind == "user":
            self._results(event.get("message") or {})
        elif kind == "result":
            self._settle()
            self.result = event
            final = event.get("result")
            if isinstance(final, str) and final.strip():
                last = self.record.answers[-1].text if self.record.answers else None
                if final.strip() != (last or "").strip():
                    self.record.answer(final)

    def _assistant(self, message: Mapping[str, Any]) -> None:
        message_id = str(message.get("id") or len(self.texts))
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                self.with_tools.add(message_id)
                self.pending[str(block.get("id"))] = (
                    str(block.get("name")),
                    block.get("input") or {},
                )
            elif block.get("type") == "text" and str(block.get("text") or "").strip():
                self.texts.setdefault(message_id, []).append(str(block["text"]))
        # A message made only of text is an answer (Claude Code sends one block per event,
        # so an answer is settled when the message's tool results or the next message come).
        self._settle(exclude=message_id)

    def _settle(self, exclude: str | None = None) -> None:
        for message_id in [m for m in self.texts if m != exclude]:
            parts = self.texts.pop(message_id)
            if message_id not in self.with_tools:
                self.record.answer("\n".join(parts))

    def _results(self, message: Mapping[str, Any]) -> None:
        self._settle()
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._result(block)

    def _result(self, block: Mapping[str, Any]) -> None:
        name, raw = self.pending.pop(str(block.get("tool_use_id")), ("unknown", {}))
        ours, renames = TOOL_MAP.get(name, (name, {}))
        arguments = (
            {renames[k]: v for k, v in raw.items() if k in renames} if renames else dict(raw)
        )
        if isinstance(arguments.get("path"), str):
            arguments["path"] = self._relative(arguments["path"])
        output = _text_of(block.get("content"))
        failed = bool(block.get("is_error"))
        exit_code = None
        timed_out = False
        if ours == "run":
            timed_out = bool(TIMED_OUT.search(output)) and failed
            found = EXIT_CODE.search(output) if failed else None
            exit_code = None if timed_out else (int(found.group(1)) if found else int(failed))
        self.record.add(
            ours,
            arguments,
            ok=not failed,
            output=output,
            exit_code=exit_code,
            timed_out=timed_out,
            pytest_report=self.observed() if ours == "run" else None,
            error=output[:300] if failed else None,
        )

    def _relative(self, path: str) -> str:
        candidate = Path(path)
        if candidate.is_absolute():
            with contextlib.suppress(ValueError):
                return candidate.relative_to(self.workdir.resolve()).as_posix() or "."
        return path

    def finish(self) -> None:
        self._settle()

    def usage(self, prices: PriceTable | None, model: str | None) -> TaskUsage | None:
        if self.result is None:
            return None
        raw = self.result.get("usage") or {}
        usage = Usage(
            input_tokens=int(raw.get("input_tokens") or 0),
            output_tokens=int(raw.get("output_tokens") or 0),
            cache_read_tokens=int(raw.get("cache_read_input_tokens") or 0),
            cache_write_tokens=int(raw.get("cache_creation_input_tokens") or 0),
        )
        name = model or self.model or ""
        if name.startswith("claude") and self.result.get("total_cost_usd") is not None:
            cost = api_equivalent_cost(float(self.result["total_cost_usd"]), NAME)
        else:
            cost = harness_counts_cost(prices, (name,), usage)
        turns = int(self.result.get("num_turns") or 0)
        return TaskUsage(
            model_calls=turns,
            counted_calls=0 if usage.is_empty() else max(turns, 1),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=cost[0],
            cost_source=cost[1],
            cost_provenance=cost[2],
        )


class ClaudeCodeHarness:
    in_process = False
    needs_network = True  # it runs whole inside the sandbox and calls its API from there

    def __init__(self, params: Mapping[str, Any], root: Path | None = None) -> None:
        section = (params.get("tasks") or {}).get("claude") or {}
        self.command = str(section.get("command", "claude"))
        self.extra_args = [str(a) for a in section.get("extra_args") or []]
        self.home_files = [str(f) for f in section.get("home_files") or []]
        self.model = (params.get("target") or {}).get("model")
        self.prices = PriceTable((params.get("run") or {}).get("prices") or {})
        self.gateway_url = (params.get("tasks") or {}).get("gateway_url")
        identity = {
            "command": self.command,
            "extra_args": self.extra_args,
            "code": code_of(__name__),
        }
        self.participant = Participant(
            kind="claude-code",
            model=self.model or "claude-code-default",
            protocol="claude-code",
            config_digest=digest_of({**identity, "model": self.model}),
            details=identity,
        )

    def key_env_names(self) -> list[str]:
        return ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"]

    def executable(self) -> str | None:
        return shutil.which(self.command)

    def preflight(self) -> None:
        if self.executable() is None:
            raise HarnessUnavailable(
                f"{NAME} is not installed here: `{self.command}` is not on PATH. Install it "
                "(npm install -g @anthropic-ai/claude-code) and sign in, or run another harness "
                "(tasks.harness: scripted | chat)"
            )

    def argv(self, task: Task) -> list[str]:
        found = self.executable()
        exe = os.path.realpath(found) if found else self.command  # the path the sandbox binds
        model = ["--model", str(self.model)] if self.model else []
        prompt = f"{TASK_PREAMBLE}\n\n{task.prompt}"
        return [exe, "-p", prompt, *BASE_ARGS, *model, *self.extra_args]

    def sandboxed(self, task: Task, ctx: AttemptContext) -> list[str]:
        """Claude Code as a whole inside the run's sandbox: its installation and its login
        (`tasks.claude.home_files`) put back read-only, the copy writable, the network on."""
        argv = self.argv(task)
        login = [Path(f).expanduser() for f in self.home_files]
        readable = [Path(argv[0]).parent, *(f for f in login if f.exists())]
        return ctx.sandbox.wrap(
            argv, ctx.workdir, writable=[ctx.workdir], readable=readable, network=True
        )

    def routed_env(self, env: dict[str, str], tag: str) -> dict[str, str]:
        """Through the gateway: its URL (tagged with the attempt) and a dummy key. Claude Code
        may still send its own login's credential; the gateway drops it."""
        if not self.gateway_url:
            return env
        base_url, dummy = agent_endpoint(str(self.gateway_url), "anthropic", tag)
        return {**env, "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_AUTH_TOKEN": dummy}

    def gateway_usage(self, tag: str) -> TaskUsage | None:
        """The gateway's own counts of this attempt's calls, priced (harness_counts); None
        when the gateway runs in another process or saw no call."""
        ledger = ledger_at(str(self.gateway_url)) if self.gateway_url else None
        calls = ledger.tagged(tag) if ledger is not None else []
        if ledger is None or not calls:
            return None
        usage = ledger.total(tag)
        whole = ledger.uncounted(tag) == 0  # a partial count would read as the price
        name = str(self.model or "")
        cost = harness_counts_cost(self.prices, (name,), usage) if whole else (None, None, None)
        provenance = cost[2] and f"the model gateway's per-call counts, {cost[2]}"
        return TaskUsage(
            model_calls=len(calls),
            counted_calls=len(calls) - ledger.uncounted(tag),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=cost[0],
            cost_source=cost[1],
            cost_provenance=provenance,
        )

    async def attempt(self, task: Task, ctx: AttemptContext) -> None:
        parser = StreamParser(ctx.record, ctx.workdir)
        if ctx.recorder is not None:
            parser.observed = ctx.recorder.claim
        tag = f"{task.id}-r{ctx.repeat}-{uuid.uuid4().hex[:8]}"
        proc = await asyncio.create_subprocess_exec(
            *self.sandboxed(task, ctx),
            cwd=ctx.workdir,
            env=self.routed_env(ctx.env, tag),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            limit=16 * 1024 * 1024,  # one stream-json line holds a whole tool result
        )
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.ensure_future(proc.stderr.read())
        try:
            async for line in proc.stdout:
                parser.feed(line)
            await proc.wait()
        except asyncio.CancelledError:  # the cap: stop Claude Code and all it started
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        finally:
            parser.finish()
            own = parser.usage(self.prices, self.model)
            counted = self.gateway_usage(tag)
            # Claude Code's own list price stays the source on Anthropic's models (001).
            listed = own is not None and own.cost_source == "api_equivalent"
            ctx.meter.reported = own if listed or counted is None else counted
        stderr = (await errors).decode("utf-8", errors="replace").strip()
        if proc.returncode != 0 and parser.result is None:
            raise ClaudeCodeFailed(f"{NAME} exited {proc.returncode}: {stderr[-500:]}")
