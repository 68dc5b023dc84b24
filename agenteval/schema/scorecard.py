"""The scorecard: every number in it can be recomputed from its own dimension scores."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, Field

from agenteval.schema.suite import InvalidScenario


class TurnResult(BaseModel):
    turn: int
    scores: dict[str, float | None]
    score: float | None
    passed: bool = Field(
        serialization_alias="pass", validation_alias=AliasChoices("pass", "passed")
    )
    reported_score: float | None = None
    discrepancy: bool = False


class ScenarioResult(BaseModel):
    id: str
    iteration: int = 0
    category: str
    severity: str | None = None
    status: str
    score: float | None = Field(description="Mean of turn scores; null when unmeasured.")
    turns: list[TurnResult] = Field(default_factory=list)
    root_cause: str | None = None
    warnings: list[str] = Field(default_factory=list)
    scenario_digest: str | None = None
    ground_truth_digest: str | None = Field(
        None, description="Facts and document bytes graded against; compare pairs only equal."
    )
    split: str | None = Field(None, description="train, held or test (agenteval.split).")


class CategorySummary(BaseModel):
    total: int
    passed: int
    failed: int
    blocked: int
    unmeasured: int
    pass_rate: float | None
    judged_pass_rate: float | None
    avg_score: float | None


class Summary(BaseModel):
    total: int
    passed: int
    failed: int
    blocked: int
    timeout: int = 0
    budget_exceeded: int = 0
    infra_error: int = 0
    setup_error: int = 0
    skipped_no_document: int = 0
    no_user_message: int = 0
    errored: int = 0
    not_run: int = 0
    not_judged: int = 0
    pass_rate: float | None
    judged_pass_rate: float | None
    avg_score: float | None
    discrepancies: int = 0
    by_category: dict[str, CategorySummary] = Field(default_factory=dict)


class PassCount(BaseModel):
    k: int = Field(description="Judged PASS iterations.")
    n: int = Field(description="Judged iterations (PASS, FAIL or BLOCKED).")
    runs: int = Field(description="Iterations attempted, measured or not.")


class Scorecard(BaseModel):
    schema_version: int = 1
    summary: Summary
    config: dict[str, Any]
    scenarios: list[ScenarioResult]
    pass_counts: dict[str, PassCount] = Field(default_factory=dict)
    dimension_means: dict[str, float] = Field(default_factory=dict)
    usage: dict[str, Any] = Field(default_factory=dict)
    invalid: list[InvalidScenario] = Field(
        default_factory=list, description="Selected scenario files skipped as invalid."
    )
