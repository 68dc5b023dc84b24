"""The `qa` section of pipelines/qa/params.yaml: the task file, the selection, k attempts
and the A/B/C judge. Its one home (agenteval.benchmarks.base composes it onto the shared
params)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agenteval.schema.params_base import EndpointFields, _Section


class QAJudgeParams(EndpointFields):
    """`qa.judge`: the A/B/C judge. The code pre-check always runs first; what it cannot
    settle goes to the model (`kind: llm`) or stays unavailable (`kind: precheck`)."""

    kind: Literal["precheck", "llm"] = Field("precheck", description="precheck | llm")
    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompt: str = Field("eval/prompts/judge_qa.md", description="The A/B/C instructions.")
    max_attempts: int = Field(2, ge=1, description="Model calls per answer incl. re-asks.")


class QAParams(_Section):
    """`suite.kind: qa`: questions with short ground-truth answers, k attempts each."""

    tasks: str = Field("eval/qa/tasks.jsonl", description="Task file (JSONL or GAIA metadata).")
    format: Literal["jsonl", "gaia"] = Field("jsonl", description="jsonl | gaia (metadata.jsonl)")
    levels: list[int] = Field(default_factory=list, description="Empty: all levels (1, 2, 3).")
    ids: list[str] = Field(default_factory=list, description="Empty: all tasks.")
    k: int = Field(1, ge=1, description="Attempts per task (pass@k, pass^k, avg@k).")
    attempt_strategy: Literal["independent"] = Field(
        "independent", description="independent: every attempt its own seed and cache key."
    )
    judge: QAJudgeParams = Field(default_factory=QAJudgeParams)
