"""data/suite.json: the resolved scenario set a run measures, with facts and digests."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agenteval.schema.corpus import Fact
from agenteval.schema.scenario import Scenario


class SuiteItem(BaseModel):
    path: str = Field(description="Scenario file, relative to the repository root.")
    digest: str = Field(description="sha256 of the scenario's canonical content.")
    scenario: Scenario
    facts: dict[str, Fact] = Field(
        default_factory=dict, description="Manifest facts the scenario's turns reference."
    )
    missing_documents: list[str] = Field(
        default_factory=list, description="Setup documents absent on disk (scenario is skipped)."
    )
    documents: dict[str, str | None] = Field(
        default_factory=dict,
        description="sha256 of every document the scenario indexes or its ground truth names "
        "(null: absent). Stored transcripts are reused only on the same bytes.",
    )
    ground_truth_digest: str | None = Field(
        None,
        description="sha256 of the manifest facts and document bytes the scenario is graded "
        "against: verdicts are reused, and runs paired by compare, only when it is equal.",
    )


class Suite(BaseModel):
    schema_version: int = 1
    iterations: int = 1
    seed: int = 0
    scenario_set_digest: str
    corpus_digest: str
    items: list[SuiteItem]

    def seeds(self) -> list[int]:
        """One seed per iteration, derived from the suite seed so any iteration can be replayed."""
        return [self.seed * 1000 + i for i in range(self.iterations)]
