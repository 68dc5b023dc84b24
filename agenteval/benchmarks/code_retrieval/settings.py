"""The `code_retrieval` section of pipelines/code_retrieval/params.yaml: the pinned commits
and how the code index is built and checked. Its one home (agenteval.benchmarks.base
composes it onto the shared params)."""

from __future__ import annotations

from pydantic import Field

from agenteval.schema.params_base import _Section


class SWEBenchParams(_Section):
    enabled: bool = Field(False, description="Try SWE-bench Verified through `datasets`.")
    instances: list[str] = Field(default_factory=list, description="Empty: every instance.")


class CodeRetrievalParams(_Section):
    """`suite.kind: code_retrieval`: the code index over real fixes of pinned histories."""

    commits: str = Field(
        "eval/code_retrieval/commits.yaml", description="Pinned fix commits and the replay."
    )
    depth: int = Field(200, ge=10, description="Chunks ranked per query.")
    max_lines: int = Field(60, ge=5, description="Longest chunk, in lines.")
    max_bytes: int = Field(1_000_000, ge=1024, description="Larger files are not indexed.")
    incremental: bool = Field(True, description="Replay commits and compare with a fresh index.")
    robustness: bool = Field(True, description="Damaged saved indexes and hostile trees.")
    compare_queries: int = Field(
        10, ge=1, description="Queries whose rankings are compared in those checks."
    )
    swebench: SWEBenchParams = Field(default_factory=SWEBenchParams)
