"""The scorecard: every number in it can be recomputed from its own dimension scores."""

from __future__ import annotations

from typing import Any

from pydantic import AliasChoices, BaseModel, Field

from agenteval.schema.suite import InvalidScenario


class Cost(BaseModel):
    """A dollar figure and what kind of dollar it is (agenteval.llm.cost); `usd` null reads
    n/a, never $0.00."""

    usd: float | None = None
    source: str | None = Field(
        None, description="metered | api_equivalent | harness_counts | estimated | mixed"
    )
    rate_card: str | None = Field(
        None, description="harness_counts, estimated: the date the rate card names, or undated."
    )
    note: str | None = Field(None, description="Why the figure is n/a, or what it leaves out.")


class RunCost(BaseModel):
    """What the run cost: per source, per category, and the units no figure covers."""

    total: Cost = Field(description="One kind of dollar; mixed sources are given by_source.")
    by_source: dict[str, float] = Field(default_factory=dict)
    by_category: dict[str, Cost] = Field(default_factory=dict)
    units_priced: int = 0
    units_unpriced: int = Field(0, description="Units that reached the model, with no figure.")
    units_without_model: int = Field(0, description="Units that called no model at all.")
    metered: Cost | None = Field(
        None, description="The provider's billing meter before and after the run (run.meter)."
    )


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
    overrides: list[str] = Field(
        default_factory=list, description="The code rule of each override of the judge."
    )
    disagreements: int = Field(0, description="Sharp judge-vs-code disagreements recorded.")
    fenced_reads: int = Field(
        0, description="Tool calls that tried to read outside the corpus (refused, recorded)."
    )
    cost: Cost | None = Field(None, description="What the agent's calls cost; null: none made.")
    commit: str | None = Field(None, description="The commit this unit ran at (its transcript).")
    ran_at: str | None = Field(None, description="When this unit ran (its transcript, UTC).")
    code_stamp: str | None = Field(
        None,
        description="A unit with no commit (an in-process agent, the code judge): the content "
        "stamp of the source files that produced it (agenteval.stamps.code_stamp).",
    )


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
    simulator_error: int = 0
    errored: int = 0
    not_run: int = 0
    not_judged: int = 0
    pass_rate: float | None
    judged_pass_rate: float | None
    avg_score: float | None
    discrepancies: int = 0
    overrides: int = Field(0, description="Judge scores replaced by certain code findings.")
    disagreements: int = Field(0, description="Sharp judge-vs-code disagreements that stood.")
    fenced_reads: int = Field(
        0, description="Tool calls of every scenario that tried to read outside the corpus."
    )
    by_category: dict[str, CategorySummary] = Field(default_factory=dict)


class PassCount(BaseModel):
    k: int = Field(description="Judged PASS iterations.")
    n: int = Field(description="Judged iterations (PASS, FAIL or BLOCKED).")
    runs: int = Field(description="Iterations attempted, measured or not.")


class Estimate(BaseModel):
    value: float | None
    low: float | None = None
    high: float | None = None


class CalibrationCase(BaseModel):
    control: str
    klass: str = Field(alias="class")
    label: str
    verdict: str = Field(description="pass | fail | deferred, by the scoring rules.")
    score: float | None = None
    certain: str | None = Field(None, description="The binding code rule, if code-certain.")

    model_config = {"populate_by_name": True}


class PeopleCalibration(BaseModel):
    """The judge on held turns people reviewed in MLflow (eval/people_controls/), graded
    inside this run beside the written controls: its agreement with people."""

    controls: int
    judged: int
    agreement: Estimate = Field(description="Judge = reviewers' label (bootstrap).")
    kappa: Estimate
    false_passes: int
    false_pass_rate: Estimate = Field(description="Turns people failed, passed (Wilson).")


class Calibration(BaseModel):
    """The judge measured on labelled controls it graded inside this run, unaware."""

    controls: int
    judged: int
    coverage: float | None
    agreement: Estimate = Field(description="Judge = label over judged controls (bootstrap).")
    kappa: Estimate
    false_passes: int
    false_pass_rate: Estimate = Field(description="Fail-labelled controls passed (Wilson).")
    false_fails: int
    false_fail_rate: float | None
    code_certain: dict[str, Any] = Field(default_factory=dict)
    thresholds: dict[str, Any] = Field(default_factory=dict)
    passed: bool = Field(description="Meets the controls gate (params `controls`).")
    misses: list[str] = Field(default_factory=list)
    split: str = "held"
    controls_digest: str | None = None
    cases: list[CalibrationCase] = Field(default_factory=list)
    people: PeopleCalibration | None = Field(
        None, description="Agreement with people on reviewed held turns mixed in too."
    )


class SelfConsistency(BaseModel):
    """The judge against itself: every transcript of the stage judged `repeats` times."""

    repeats: int
    items: int
    flips: int
    flip_rate: float | None
    flip_rate_low: float | None = None
    flip_rate_high: float | None = None
    identical_verdicts: float | None = None
    score_sem: float | None = None
    scored_items: int = 0
    icc_scores: float | None = None
    majority: bool = False
    passed: bool = True
    misses: list[str] = Field(default_factory=list)


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
    overrides_by_rule: dict[str, int] = Field(default_factory=dict)
    calibration: Calibration | None = Field(
        None, description="judge.controls_per_run > 0: the judge on controls of this run."
    )
    self_consistency: SelfConsistency | None = Field(
        None, description="judge.repeats > 1: flip rate and score SEM of this run's judge."
    )
    cost: RunCost | None = Field(None, description="What the agent's calls cost, by source.")
    commits: list[str] = Field(
        default_factory=list,
        description="The commits the units ran at, in the order they first ran; more than one "
        "when a resumed or partly rerun evaluation mixes units of several commits.",
    )
    code_stamps: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="The content stamps of units with no commit: stamp -> the package files "
        "(path -> sha256 prefix) it covers; git tells which commits hold them (ci-verify).",
    )
