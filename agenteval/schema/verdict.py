"""A judge's grades for one transcript: per-turn dimension scores and who gave them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agenteval.schema.transcript import Participant, Usage


class TurnVerdict(BaseModel):
    turn: int
    scores: dict[str, float | None] = Field(
        description="Dimension -> 0..10, or null when this judge could not judge it."
    )
    judged_by: dict[str, str] = Field(
        default_factory=dict, description="Dimension -> judge kind that produced its score."
    )
    reported_score: float | None = Field(
        None, description="The judge's own total, kept only to detect arithmetic discrepancies."
    )
    reasons: dict[str, str] = Field(default_factory=dict)
    findings: dict[str, str] = Field(
        default_factory=dict,
        description="Dimension -> the code rule that scored it (wrong_value, tool_loop, ...): "
        "a key of findings.CODE_FINDINGS; the binding ones are findings.BINDING_FINDINGS.",
    )
    simulator_fault: str | None = None
    reasked: bool | None = Field(
        None,
        description="The judge saw the agent ask again for a fact an earlier turn established "
        "(null: this judge does not say). Scoring caps context_retention for it (rule reasked).",
    )


class Disagreement(BaseModel):
    """Two judges far apart on a dimension both scored, kept for calibration review."""

    turn: int
    dimension: str
    llm_score: float
    code_score: float
    rule: str = Field(
        description="gap: the scores differ by a wide margin; threshold: they fall on opposite "
        "sides of the minimum correctness."
    )
    llm_reason: str | None = None
    code_reason: str | None = None


class Override(BaseModel):
    """A certain code finding that replaced a model judge's score on one dimension."""

    turn: int
    dimension: str
    rule: str = Field(description="The code rule (a key of findings.BINDING_FINDINGS).")
    llm_score: float | None = Field(description="What the model judge gave (null: nothing).")
    code_score: float = Field(description="The ceiling code set, now the dimension's score.")
    code_reason: str | None = None
    llm_reason: str | None = None


class Sample(BaseModel):
    """One of several judgings of the same transcript (judge.repeats)."""

    status: str = Field(description="The status the scoring rules give this judging.")
    score: float | None = None
    kept: bool = Field(False, description="The judging kept as the verdict.")


class Verdict(BaseModel):
    scenario_id: str
    iteration: int = 0
    scenario_digest: str
    transcript_digest: str
    ground_truth_digest: str | None = Field(
        None, description="The suite item's ground truth (facts, document bytes) graded against."
    )
    judge: Participant
    status: str = Field(
        description="Judge-reported status (PASS/FAIL/BLOCKED_BY_ARCHITECTURE) or an "
        "unmeasured status; scoring re-derives PASS/FAIL from the numbers."
    )
    turns: list[TurnVerdict] = Field(default_factory=list)
    root_cause: str | None = None
    recommended_fix: str | None = None
    error: str | None = None
    disagreements: list[Disagreement] = Field(
        default_factory=list,
        description="Dimensions where a model judge and the code checks disagree.",
    )
    overrides: list[Override] = Field(
        default_factory=list,
        description="Dimensions where a certain code finding bound a model judge's score.",
    )
    raw_reply: str | None = Field(
        None, description="The model's last reply when its output stayed invalid (ERRORED)."
    )
    samples: list[Sample] = Field(
        default_factory=list, description="Every judging when judge.repeats > 1."
    )
    judge_attempts: int | None = Field(
        None, description="Model calls the judge made, re-asks after invalid output included."
    )
    usage: Usage | None = Field(None, description="The judge's own tokens and cost.")
    commit: str | None = Field(
        None,
        description="The repository's HEAD when a model judge graded (agenteval.stamps); null "
        "for the code judge, whose verdict is a function of its code digest.",
    )
    judged_at: str | None = Field(None, description="When a model judge graded (UTC).")
