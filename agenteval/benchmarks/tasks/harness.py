"""The agent under test on a coding task: the harness protocol, its context and its registry.

A harness gets the task's prompt and an `AttemptContext` (the copy, the environment without
keys, the confined tools, the run's sandbox and the tool record it must fill as it goes) and
returns when the agent is done. It never sees the checks, the reference solution or the
judge. `preflight` runs before any task starts: a harness that cannot run here (Claude Code
not installed, no model configured) is refused with a clear message instead of failing
every task.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agenteval.benchmarks.tasks.recorder import PytestRecorder
from agenteval.benchmarks.tasks.sandbox import NO_SANDBOX, Sandbox
from agenteval.benchmarks.tasks.tools import ToolRecord, WorkspaceTools
from agenteval.llm.cost import PriceTable, RunCost, harness_counts_cost
from agenteval.llm.types import Completion, Usage
from agenteval.schema.task_records import TaskUsage
from agenteval.schema.tasks import Task
from agenteval.schema.transcript import Participant

HARNESSES = ("scripted", "chat", "claude-code")
# The instruction every harness is given around the task's prompt: where it is, what it may
# do, and that it should say what it did.
TASK_PREAMBLE = (
    "You are working in a copy of a small Python project (the current folder). Do what the "
    "user asks, using the tools you have. When you are done, reply with a short summary of "
    "what you did and found; do not claim anything you did not do."
)


class HarnessUnavailable(Exception):
    """This harness cannot run here; the message says what is missing."""


@dataclass
class UsageMeter:
    """Token counts of an attempt's model calls, as the harness saw them."""

    completions: list[Completion] = field(default_factory=list)
    reported: TaskUsage | None = None  # a harness that reports its own totals (Claude Code)

    def add(self, completion: Completion) -> None:
        self.completions.append(completion)

    def total(self, prices: PriceTable | None, models: tuple[str, ...]) -> TaskUsage | None:
        if self.reported is not None:
            return self.reported
        if not self.completions:
            return None
        counted = [c.usage for c in self.completions if c.usage is not None]
        usage = Usage(
            input_tokens=sum(u.input_tokens for u in counted),
            output_tokens=sum(u.output_tokens for u in counted),
            cache_read_tokens=sum(u.cache_read_tokens for u in counted),
            cache_write_tokens=sum(u.cache_write_tokens for u in counted),
        )
        cost: RunCost = (None, None, None)
        if len(counted) == len(self.completions):  # a partial count would read as the price
            cost = harness_counts_cost(prices, models, usage)
        return TaskUsage(
            model_calls=len(self.completions),
            counted_calls=sum(not u.is_empty() for u in counted),
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost_usd=None if cost[0] is None else round(cost[0], 8),
            cost_source=cost[1],
            cost_provenance=cost[2],
        )


@dataclass
class AttemptContext:
    workdir: Path
    env: dict[str, str]
    tools: WorkspaceTools
    record: ToolRecord
    meter: UsageMeter
    repeat: int
    seed: int
    command_timeout_s: float
    max_steps: int
    sandbox: Sandbox = NO_SANDBOX  # where an external harness runs as a whole (Claude Code)
    recorder: PytestRecorder | None = None  # the pytest runs the evaluator observed


class Harness(Protocol):
    participant: Participant
    in_process: bool  # its wall time measures this machine, not an agent

    def key_env_names(self) -> list[str]: ...

    def preflight(self) -> None: ...

    async def attempt(self, task: Task, ctx: AttemptContext) -> None: ...


# harness kind -> "module:factory", factory(params, root); imported by name (no import here,
# so the harness modules can import this one).
REGISTRY = {
    "scripted": "agenteval.benchmarks.tasks.scripted:from_params",
    "chat": "agenteval.benchmarks.tasks.chat:ChatHarness",
    "claude-code": "agenteval.benchmarks.tasks.claude_code:ClaudeCodeHarness",
}


def make_harness(kind: str, params: Mapping[str, Any], root: Path) -> Harness:
    if kind not in REGISTRY:
        raise HarnessUnavailable(
            f"tasks.harness must be one of {', '.join(HARNESSES)}, not {kind!r}"
        )
    module, _, name = REGISTRY[kind].partition(":")
    harness: Harness = getattr(importlib.import_module(module), name)(params, root)
    return harness
