"""The chat harness: any OpenAI-compatible or Anthropic endpoint, with the file, search and
shell tools over the task's copy (agenteval.benchmarks.tasks.tools).

The model is called through the project's clients (agenteval.llm: retries, the response cache,
token counts), via the model gateway when the run has one (tasks.gateway_url: the client gets
its URL and no key); every tool call goes through the confined tools and lands in the tool
record as it finishes. The conversation ends at the first reply without tool calls (the answer),
or after `tasks.max_steps` tool calls, when the model is asked for its summary with no tools
offered.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks.gateway import agent_endpoint
from agenteval.benchmarks.tasks.harness import TASK_PREAMBLE, AttemptContext, HarnessUnavailable
from agenteval.benchmarks.tasks.tools import SPECS
from agenteval.fileio import code_of, digest_of
from agenteval.llm import (
    Message,
    SystemMessage,
    ToolCallRequest,
    ToolMessage,
    UserMessage,
    client_class,
)
from agenteval.llm.config import EndpointConfig
from agenteval.schema.tasks import Task
from agenteval.schema.transcript import Participant

STEP_LIMIT_NOTE = (
    "You have used all {n} tool calls this task allows. Reply now with your final summary of "
    "what you did and found."
)
NEEDS_ENDPOINT = (
    "tasks.harness chat needs the endpoint of the model under test: set target.model, "
    "target.base_url and target.protocol (openai or anthropic)"
)
BAD_ARGUMENTS = "the arguments of this call are not a JSON object: {raw}"


class ChatHarness:
    in_process = False

    def __init__(self, params: Mapping[str, Any], root: Path) -> None:
        target = params.get("target") or {}
        self.base_url = target.get("base_url")
        if not target.get("model") or not self.base_url:
            raise HarnessUnavailable(NEEDS_ENDPOINT)
        self.config = EndpointConfig.from_params(params, "target", root)
        endpoint = self.config.endpoint
        identity = {
            "endpoint": self.config.describe(),
            "preamble": TASK_PREAMBLE,
            "tools": [spec.model_dump() for spec in SPECS],
            "max_steps": int((params.get("tasks") or {}).get("max_steps", 40)),
            "code": code_of(__name__),
        }
        self.participant = Participant(
            kind="chat",
            model=endpoint.model,
            protocol=endpoint.protocol,
            config_digest=digest_of(identity),
            details={"endpoint": self.config.describe()},
        )
        self.key_env = endpoint.api_key_env  # the gateway's to read; named for the scrubber
        gateway_url = (params.get("tasks") or {}).get("gateway_url")
        if gateway_url:  # the model through the gateway, which holds the key
            base_url, _ = agent_endpoint(str(gateway_url), endpoint.protocol)
            route = {
                "base_url": base_url,
                "api_key_env": None,
                "model_url": endpoint.effective_base_url,
            }
            routed = endpoint.model_copy(update=route)
            self.config = dataclasses.replace(self.config, endpoint=routed)

    def key_env_names(self) -> list[str]:
        return [self.key_env] if self.key_env else []

    def preflight(self) -> None:
        name = self.key_env
        if name and not os.environ.get(name, "").strip():
            raise HarnessUnavailable(f"target.api_key_env names {name}, which is not set")
        client_class(self.config.endpoint.protocol)  # import the HTTP stack before any task

    async def attempt(self, task: Task, ctx: AttemptContext) -> None:
        client = await self.config.client()
        messages: list[Message] = [
            SystemMessage(content=TASK_PREAMBLE),
            UserMessage(content=task.prompt),
        ]
        steps = 0
        while steps < ctx.max_steps:
            completion = await client.complete(
                messages, tools=SPECS, iteration=ctx.repeat, seed=ctx.seed
            )
            ctx.meter.add(completion)
            messages.append(completion.to_message())
            if not completion.tool_calls:
                ctx.record.answer(completion.text)
                return
            for call in completion.tool_calls:
                steps += 1
                messages.append(await self._run(call, ctx, over=steps > ctx.max_steps))
        messages.append(UserMessage(content=STEP_LIMIT_NOTE.format(n=ctx.max_steps)))
        completion = await client.complete(messages, iteration=ctx.repeat, seed=ctx.seed)
        ctx.meter.add(completion)
        ctx.record.answer(completion.text)

    @staticmethod
    async def _run(call: ToolCallRequest, ctx: AttemptContext, over: bool) -> ToolMessage:
        if over:
            done = ctx.record.add(call.name, call.arguments, ok=False, error="step limit reached")
        elif call.raw_arguments is not None and not call.arguments:
            error = BAD_ARGUMENTS.format(raw=call.raw_arguments[:200])
            done = ctx.record.add(call.name, {}, ok=False, output=error, error=error)
        else:
            done = await ctx.tools.call(call.name, call.arguments)
        content = done.output or done.error or ""
        return ToolMessage(
            tool_call_id=call.id, content=content, name=call.name, is_error=not done.ok
        )
