"""The `memory` section of pipelines/memory/params.yaml: the suite, the scenarios, the
gate's baseline, the memory under test and the model of the full suite. Its one home
(agenteval.benchmarks.base composes it onto the shared params)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from agenteval.schema.params_base import EndpointFields, _Section


class MemoryAdapterParams(_Section):
    """`memory.adapter`: the memory under test, by `kind`; each kind checks its own keys
    (agenteval.memory.reference.DEFAULTS, agenteval.memory.mcp)."""

    model_config = ConfigDict(extra="allow")

    kind: str = Field("reference", description="reference (SQLite, offline) | mcp (a server)")


class MemoryModelParams(EndpointFields):
    """`memory.model`: the model that extracts, consolidates and answers in the full suite."""

    params: dict[str, Any] | None = Field(None, description="Request fields (max_tokens...).")
    prompts: str = Field(
        "eval/memory/prompts", description="Folder of extract.md, consolidate.md, answer.md."
    )


class MemoryParams(_Section):
    """`agenteval memory`: does memory keep up with a person over months of chats?"""

    suite: Literal["pr", "full"] = Field(
        "pr", description="pr: scripted model answers, offline; full: memory.model answers."
    )
    scenarios: str = Field("eval/memory/scenarios", description="Folder of scenario files.")
    ids: list[str] = Field(default_factory=list, description="Only these scenarios; empty: all.")
    baseline: str | None = Field(
        "eval/memory/baselines/pr.json", description="The gate's baseline (a real run's results)."
    )
    adapter: MemoryAdapterParams = Field(default_factory=MemoryAdapterParams)
    model: MemoryModelParams = Field(default_factory=MemoryModelParams)
