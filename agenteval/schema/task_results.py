"""A tasks run's scorecard, and the expectations a model and suite are gated on.

The scorecard holds one row per (task, repeat) with its result and why, and the run's totals
per repeat (a *draw*). Expectations (`eval/tasks/expectations/<model>.<suite>.json`) hold
what main measured (overall and per task, with the commit and machine) and the limits the
gate enforces, tied to the model, the suite and the judge: a different judge grades on a
different scale, so a file is never applied to a run that differs in any of them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agenteval.schema.transcript import Participant

SCORECARD_SCHEMA = "agenteval.tasks.scorecard/1"
EXPECTATIONS_SCHEMA = "agenteval.tasks.expectations/1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskResult(_Strict):
    task_id: str
    repeat: int = 0
    kind: Literal["coding", "question"]
    result: str = Field(description="PASS, FAIL, or an unmeasured status (TIMEOUT, ...).")
    reasons: list[str] = Field(default_factory=list, description="Why it is not a PASS.")
    verified: bool | None = Field(
        None, description="Coding tasks: a passing pytest run after the last edit."
    )
    after_answer: list[int] = Field(default_factory=list)
    misreported: list[str] = Field(default_factory=list)
    judge_status: str = Field(description="judged | unjudged | error | not_asked")
    scores: dict[str, int] | None = None
    quality: float | None = Field(None, description="Mean of the four judge dimensions, 1-5.")
    steps: int = Field(description="Tool calls.")
    total_tokens: int | None = None
    cost_usd: float | None = None
    cost_source: str | None = None
    cost_provenance: str | None = None
    wall_seconds: float | None = None
    changed_files: list[str] = Field(default_factory=list)
    commit: str | None = Field(None, description="The commit its attempt ran at.")
    ran_at: str | None = Field(None, description="When its attempt ran (UTC).")
    code_stamp: str | None = Field(
        None,
        description="An attempt with no commit (an in-process harness): the content stamp of "
        "the harness's source files (agenteval.stamps.code_stamp). Neither: unstamped.",
    )


class Draw(_Strict):
    """One repeat of the suite: the figures the gate checks."""

    repeat: int
    tasks: int
    passed: int
    failed: int
    unmeasured: int
    coding: int
    verified: int
    misreported: int = Field(description="Tasks with at least one misreported claim.")
    quality: float | None = Field(None, description="Mean quality over judged tasks.")
    unjudged: int = Field(description="Tasks the judge could not grade (or no judge).")
    total_tokens: int | None = Field(None, description="None: no task counted tokens (n/a).")
    cost_usd: float | None = Field(None, description="None: n/a (never 0 for unknown).")
    cost_sources: list[str] = Field(default_factory=list)
    steps: int
    wall_seconds: float | None = None
    pass_rate: float | None = None
    pass_rate_interval: list[float] | None = Field(None, description="Wilson, over measured tasks.")


class TaskScorecard(_Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: str = Field(SCORECARD_SCHEMA, alias="schema")
    suite: str
    task_ids: list[str]
    harness: Participant
    model: str
    judge: Participant
    judge_model: str | None = None
    repeats: int
    measured_on: dict[str, str] = Field(default_factory=dict, description="commit, machine.")
    sandbox: str = Field(
        "unknown", description="Where the agent's commands ran: bwrap (network on/off) or none."
    )
    draws: list[Draw]
    tasks: list[TaskResult]
    controls: dict[str, object] | None = Field(None, description="Judge controls, if run.")
    commits: list[str] = Field(
        default_factory=list,
        description="The commits the attempts ran at, in the order they first ran; more than "
        "one when stored attempts of an earlier commit were reused.",
    )
    code_stamps: dict[str, dict[str, str]] = Field(
        default_factory=dict,
        description="The content stamps of attempts with no commit: stamp -> the package "
        "files (path -> sha256 prefix) it covers.",
    )
    unstamped: int = Field(
        0, description="Attempts with neither stamp (older records, outside git): unknown."
    )


class TaskMeasure(_Strict):
    id: str
    result: str
    verified: bool | None = None
    steps: int
    total_tokens: int | None = None
    wall_seconds: float | None = None
    quality: float | None = None


class TaskExpectations(_Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: str = Field(EXPECTATIONS_SCHEMA, alias="schema")
    suite: str
    model: str
    harness: str
    judge_model: str | None = Field(description="The judge the quality limits belong to.")
    measured_on: dict[str, str] = Field(description="commit and machine of the runs.")
    runs: list[str] = Field(default_factory=list, description="Which runs (and repeats).")
    measured: Draw = Field(description="The worst draw's figures.")
    tasks: list[TaskMeasure] = Field(default_factory=list)
    min_passed: int
    min_verified: int | None = None
    min_quality: float | None = None
    max_misreported: int | None = None
    max_total_tokens: int | None = None
    max_steps: int | None = None
    max_wall_seconds: float | None = None
