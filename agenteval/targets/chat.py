"""Target `chat`: the built-in tool-using harness that turns any model endpoint into an agent.

The system prompt and tool descriptions come from the agent config folder, the tools are the
shared DocumentTools (same retrieval as the builtin agent), and every model call, tool call,
result, latency and token count is recorded. `tool_mode: context` serves models that cannot
call tools: the harness searches on their behalf and puts the passages in the prompt.

"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from agenteval.fileio import code_of, digest_of
from agenteval.llm import (
    AssistantMessage,
    BaseChatClient,
    Completion,
    Message,
    SystemMessage,
    ToolCallRequest,
    ToolMessage,
    ToolSpec,
    UserMessage,
)
from agenteval.llm.config import EndpointConfig, sum_usage
from agenteval.schema.scenario import IndexDocument, Scenario
from agenteval.schema.status import Status
from agenteval.schema.transcript import Participant, ToolCall
from agenteval.targets.base import (
    AGENT_FILES_BY_KIND,
    DEFAULT_KNOBS,
    AgentReply,
    SessionContext,
    SetupFailed,
    agent_files_digest,
    check_agent_files,
    distinct,
)
from agenteval.targets.fence import DEFAULT_LIBRARY, corpus_fence
from agenteval.targets.tools import SEARCH_TOOL, TOOL_NAMES, DocumentTools

DEFAULT_MAX_TOOL_STEPS = 8
AGENT_FILES = AGENT_FILES_BY_KIND["chat"]
TOOL_MODES = ("native", "context")
ADVERSARIAL_CATEGORY = "adversarial"

# Harness wording, not agent configuration: it describes what the harness itself did.
INDEXED_NOTE = "Documents already indexed for this conversation: {names}."
CONTEXT_NOTE = (
    "In this conversation you cannot call tools. Before each user message the system searches "
    "the indexed documents for you and shows the passages it found; answer from them."
)
CONTEXT_MESSAGE = "Passages found in the indexed documents:\n{passages}\n\nUser message:\n{message}"
NO_PASSAGES = "(no passages found)"


def load_tool_specs(agent_dir: Path) -> list[ToolSpec]:
    """Tool descriptions from `tools.yaml`, limited to the tools the harness implements."""
    raw = yaml.safe_load((agent_dir / "tools.yaml").read_text(encoding="utf-8")) or {}
    specs = []
    for name in TOOL_NAMES:
        entry = raw.get(name)
        if isinstance(entry, Mapping):
            specs.append(
                ToolSpec(
                    name=name,
                    description=str(entry.get("description") or "").strip(),
                    parameters=dict(entry.get("parameters") or {"type": "object"}),
                )
            )
    return specs


class ChatTarget:
    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params["target"]
        self.config = EndpointConfig.from_params(params, "target", root)
        self.agent_dir = check_agent_files(params, root)
        self.system_prompt = (self.agent_dir / "system_prompt.md").read_text(encoding="utf-8")
        self.tool_specs = load_tool_specs(self.agent_dir)
        knobs = {**DEFAULT_KNOBS, **(section.get("params") or {})}
        self.chunk_size, self.top_k = int(knobs["chunk_size"]), int(knobs["top_k"])
        self.library = list(section.get("library") or DEFAULT_LIBRARY)
        self.fence = corpus_fence(params, root)
        self.max_tool_steps = int(section.get("max_tool_steps", DEFAULT_MAX_TOOL_STEPS))
        self.tool_mode = str(section.get("tool_mode", "native"))
        if self.tool_mode not in TOOL_MODES:
            raise ValueError(
                f"target.tool_mode must be one of {TOOL_MODES}, not {self.tool_mode!r}"
            )
        if self.max_tool_steps < 0:
            raise ValueError("target.max_tool_steps must be >= 0")
        harness = {
            "tool_mode": self.tool_mode,
            "max_tool_steps": self.max_tool_steps,
            "chunk_size": self.chunk_size,
            "top_k": self.top_k,
            "library": self.library,
            "corpus": self.fence.shown(),
        }
        endpoint = self.config.endpoint
        identity = {
            "endpoint": self.config.describe(),
            "harness": harness,
            "files": agent_files_digest(self.agent_dir, AGENT_FILES),
            "code": code_of(__name__),
        }
        self.participant = Participant(
            kind="chat",
            model=endpoint.model,
            protocol=endpoint.protocol,
            config_digest=digest_of(identity),
            details=identity,
        )

    async def open_session(self, scenario: Scenario, ctx: SessionContext) -> ChatSession:
        tools = DocumentTools(ctx.root, self.library, self.chunk_size, self.top_k, self.fence)
        return ChatSession(self, await self.config.client(), tools, scenario, ctx)


class ChatSession:
    """One conversation: the message history is the agent's whole memory across turns."""

    def __init__(
        self,
        target: ChatTarget,
        client: BaseChatClient,
        tools: DocumentTools,
        scenario: Scenario,
        ctx: SessionContext,
    ) -> None:
        self.target = target
        self.client = client
        self.tools = tools
        self.adversarial = scenario.category == ADVERSARIAL_CATEGORY
        self.iteration, self.seed = ctx.iteration, ctx.seed
        self.offered = {spec.name for spec in target.tool_specs}
        self.messages: list[Message] = [SystemMessage(content=self._system_prompt([]))]

    def _system_prompt(self, indexed: Sequence[str]) -> str:
        parts = [self.target.system_prompt.strip()]
        if indexed:
            parts.append(INDEXED_NOTE.format(names=", ".join(indexed)))
        if self.target.tool_mode == "context":
            parts.append(CONTEXT_NOTE)
        return "\n\n".join(parts)

    async def setup(self, documents: list[IndexDocument]) -> list[ToolCall]:
        for doc in documents:
            self.tools.call("index_document", path=doc.path)
        calls, self.tools.calls = self.tools.calls, []
        fenced = [c.error or "" for c in calls if c.fenced]
        if fenced:  # a scenario may not hand the agent a file outside the corpus
            raise SetupFailed(Status.SETUP_ERROR, "; ".join(fenced), calls)
        empty = [c for c in calls if not c.ok or (c.result or {}).get("chunk_count", 0) == 0]
        if empty and not self.adversarial:
            names = ", ".join(str(c.arguments.get("path")) for c in empty)
            raise SetupFailed(Status.SETUP_ERROR, f"indexed to 0 chunks: {names}", calls)
        self.messages[0] = SystemMessage(content=self._system_prompt(sorted(self.tools.indexed)))
        return calls

    async def send(self, message: str) -> AgentReply:
        first = len(self.tools.calls)
        completions: list[Completion] = []
        if self.target.tool_mode == "context":
            text = await self._send_with_context(message, completions)
        else:
            text = await self._send_with_tools(message, completions)
        models = distinct([c.served_model for c in completions])
        return AgentReply(text, self.tools.calls[first:], sum_usage(completions), models)

    async def close(self) -> None:
        return None  # the client is shared by the loop's sessions and closed with the loop

    # -- native tool calling --------------------------------------------------------------
    async def _send_with_tools(self, message: str, completions: list[Completion]) -> str:
        self.messages.append(UserMessage(content=message))
        steps = 0
        while True:
            completion = await self.client.complete(
                self.messages,
                tools=self.target.tool_specs,
                iteration=self.iteration,
                seed=self.seed,
            )
            completions.append(completion)
            self.messages.append(completion.to_message())
            if not completion.tool_calls:
                return completion.text
            capped = False
            for request in completion.tool_calls:
                if steps >= self.target.max_tool_steps:
                    capped = True
                    record = self._skip(request)
                else:
                    steps += 1
                    record = self._run(request)
                self.messages.append(_tool_message(request, record))
            if capped:
                # The turn ends with what the model has said so far; the skipped calls are
                # in the transcript (ok=False) so the cap is visible to judges and readers.
                return completion.text

    def _run(self, request: ToolCallRequest) -> ToolCall:
        if request.raw_arguments is not None:
            error = f"arguments are not a JSON object: {request.raw_arguments[:200]}"
            return self._record(request, error)
        if request.name not in self.offered:
            return self._record(request, f"unknown tool {request.name!r}")
        return self.tools.call(request.name, **request.arguments)

    def _skip(self, request: ToolCallRequest) -> ToolCall:
        limit = self.target.max_tool_steps
        return self._record(request, f"not run: tool step limit of {limit} per turn reached")

    def _record(self, request: ToolCallRequest, error: str) -> ToolCall:
        record = ToolCall(
            name=request.name, arguments=request.arguments, ok=False, error=error, latency_ms=0.0
        )
        self.tools.calls.append(record)
        return record

    # -- context mode ---------------------------------------------------------------------
    async def _send_with_context(self, message: str, completions: list[Completion]) -> str:
        call = self.tools.call(SEARCH_TOOL, query=message, top_k=self.target.top_k)
        results = (call.result or {}).get("results", []) if call.ok else []
        self.messages.append(
            UserMessage(
                content=CONTEXT_MESSAGE.format(passages=_passages(results), message=message)
            )
        )
        completion = await self.client.complete(
            self.messages, iteration=self.iteration, seed=self.seed
        )
        completions.append(completion)
        self.messages.append(AssistantMessage(content=completion.text))
        return completion.text


def _tool_message(request: ToolCallRequest, record: ToolCall) -> ToolMessage:
    payload = record.result if record.ok else {"error": record.error}
    return ToolMessage(
        tool_call_id=request.id,
        name=request.name,
        content=json.dumps(payload, ensure_ascii=False),
        is_error=not record.ok,
    )


def _passages(results: Sequence[Mapping[str, Any]]) -> str:
    if not results:
        return NO_PASSAGES
    return "\n\n".join(
        f"[{r.get('doc')} #{r.get('chunk')}]\n{str(r.get('text', '')).strip()}" for r in results
    )
