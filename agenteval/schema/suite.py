"""data/suite.json: the resolved scenario set a run measures, with facts and digests."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agenteval.schema.corpus import Fact
from agenteval.schema.scenario import GroundTruth, Scenario


class SuiteItem(BaseModel):
    path: str = Field(description="Scenario file, relative to the repository root.")
    digest: str = Field(description="sha256 of the scenario's canonical content.")
    scenario: Scenario
    facts: dict[str, Fact] = Field(
        default_factory=dict,
        description="Manifest facts the scenario's turns reference, by fact id; by "
        "'<doc_id>:<fact_id>' when two of its documents use the same fact id.",
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

    def fact(self, fact_id: str, doc_id: str | None = None) -> Fact | None:
        """The fact a turn's ground truth names (`doc_id` from the same ground truth)."""
        if doc_id and f"{doc_id}:{fact_id}" in self.facts:
            return self.facts[f"{doc_id}:{fact_id}"]
        return self.facts.get(fact_id)

    def facts_of(self, gt: GroundTruth) -> list[Fact]:
        """Every fact a turn's ground truth names, in its order; unknown ids left out."""
        found = (self.fact(fid, gt.doc_id) for fid in gt.all_fact_ids)
        return [f for f in found if f is not None]


class InvalidScenario(BaseModel):
    """A scenario file that failed validation: left out of the run, listed in its reports."""

    path: str
    id: str | None = None
    category: str | None = None
    errors: list[str] = Field(description="path:line: message of every error in the file.")


class Suite(BaseModel):
    schema_version: int = 1
    iterations: int = 1
    seed: int = 0
    scenario_set_digest: str
    corpus_digest: str
    items: list[SuiteItem]
    invalid: list[InvalidScenario] = Field(
        default_factory=list, description="Selected scenario files skipped as invalid."
    )

    def seeds(self) -> list[int]:
        """One seed per iteration, derived from the suite seed so any iteration can be replayed."""
        return [self.seed * 1000 + i for i in range(self.iterations)]
