"""The `retrieval` section of pipelines/retrieval/params.yaml: the labelled questions, the
library and the pipelines scored side by side. Its one home (agenteval.benchmarks.base
composes it onto the shared params)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from agenteval.schema.params_base import _Section


class RetrievalPipelineParams(_Section):
    """One retrieval pipeline the benchmark scores."""

    name: str = Field(min_length=1, description="Label in reports and the gate.")
    kind: Literal["bm25", "dense"] = Field(
        "bm25", description="bm25 (bm25s) | dense (an offline embedding model, `dense` extra)"
    )
    chunk_size: int = Field(400, gt=0, description="Characters per chunk.")
    model: str | None = Field(None, description="dense: embedding model (offline package).")
    dedup: bool = Field(True, description="Collapse chunks with identical text in a ranking.")


def _default_pipelines() -> list[RetrievalPipelineParams]:
    return [
        RetrievalPipelineParams(name="bm25", kind="bm25"),
        RetrievalPipelineParams(name="bm25-800", kind="bm25", chunk_size=800),
        RetrievalPipelineParams(name="dense", kind="dense", model="all-MiniLM-L6-v2"),
    ]


class RetrievalParams(_Section):
    """`suite.kind: retrieval`: labelled evidence quotes over pinned documents."""

    questions: str = Field("eval/retrieval/questions.yaml", description="Labelled questions.")
    library: list[str] = Field(
        default_factory=lambda: ["eval/corpus/documents", "data/corpora"],
        description="Folders indexed for every question.",
    )
    pipelines: list[RetrievalPipelineParams] = Field(
        default_factory=_default_pipelines, description="Pipelines scored side by side."
    )
    depth: int = Field(20, ge=1, description="Ranked chunks scored per question.")
    answers: bool = Field(True, description="Ask the target and classify every wrong answer.")
    hard_cases: bool = Field(True, description="Run the hard cases (replaced, copied, ...).")
    scale_tiers: list[Annotated[int, Field(gt=0)]] = Field(
        default_factory=lambda: [10],
        description="Documents per scale tier measured by the evaluate stage (index time, "
        "RSS, p50/p95): [10] on pull requests, [10, 100, 1000] for the full tier; [] for none.",
    )
