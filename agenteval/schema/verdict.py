"""A judge's grades for one transcript: per-turn dimension scores and who gave them."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agenteval.schema.transcript import Participant


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
    simulator_fault: str | None = None


class Verdict(BaseModel):
    scenario_id: str
    iteration: int = 0
    scenario_digest: str
    transcript_digest: str
    judge: Participant
    status: str = Field(
        description="Judge-reported status (PASS/FAIL/BLOCKED_BY_ARCHITECTURE) or an "
        "unmeasured status; scoring re-derives PASS/FAIL from the numbers."
    )
    turns: list[TurnVerdict] = Field(default_factory=list)
    root_cause: str | None = None
    recommended_fix: str | None = None
    error: str | None = None
