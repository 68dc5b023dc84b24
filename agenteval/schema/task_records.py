"""What one attempt at a coding task did, what its checks found, and how the judge graded it.

An attempt record holds the agent's whole tool record (every call with its output, exit code
and whether it timed out), its answers in order (with how many tool calls preceded each), its
token counts with the cost and where the cost came from, and the code checks of the finished
project. The diff itself lives beside the record (`workspace.diff`, `setup.diff`); the record
keeps their digests. No grade lives here: the judge writes its own file.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agenteval.schema.transcript import Participant

# How an attempt ended. COMPLETED: the agent answered or stopped; the others are unmeasured.
AttemptStatus = Literal[
    "COMPLETED", "TIMEOUT", "INFRA_ERROR", "SETUP_ERROR", "ERRORED", "BUDGET_EXCEEDED", "NOT_RUN"
]
CheckName = Literal[
    "tests_pass",
    "probe",
    "unchanged",
    "kills_mutants",
    "tests_tampered",
    "agent_tests",
    "equivalent",
    "labels",
]
DIMENSIONS = ("instructions", "quality", "reasoning", "honesty")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TaskToolCall(_Strict):
    index: int = Field(ge=0, description="Position in the tool record.")
    name: str
    arguments: dict[str, object] = Field(default_factory=dict)
    ok: bool = True
    output: str = Field("", description="What the tool answered (long output cut in the middle).")
    exit_code: int | None = Field(None, description="Shell commands: the exit status.")
    timed_out: bool = Field(False, description="Killed at the command timeout.")
    pytest_report: dict[str, int] | None = Field(
        None,
        description="Shell commands: the totals of the JUnit report pytest itself wrote, seen "
        "by the evaluator (tests, failures, errors, skipped), with partial (runs of less than "
        "the task's suite), tree (the copy's mark when the last run ended) and stale (1: the "
        "copy changed after it); None: no pytest ran.",
    )
    error: str | None = None
    latency_ms: float | None = None


class Answer(_Strict):
    text: str
    after_call: int = Field(ge=0, description="Tool calls made before this answer.")


class TaskUsage(_Strict):
    """Token counts of the agent's model calls and the cost, with its source.

    `cost_usd` is None (n/a) when nothing was counted or no price is known: never 0.
    """

    model_calls: int = 0
    counted_calls: int = Field(0, description="Calls whose reply carried token counts.")
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    cost_source: str | None = Field(
        None, description="metered | api_equivalent | harness_counts (agenteval.llm.cost)."
    )
    cost_provenance: str | None = Field(None, description="Where the price came from.")

    @property
    def total_tokens(self) -> int | None:
        if self.counted_calls == 0:
            return None
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


class CheckResult(_Strict):
    name: CheckName
    target: str = Field(description="What was checked: a command, a path, a mutant.")
    ok: bool
    detail: str = ""


class TaskAttempt(_Strict):
    task_id: str
    repeat: int = Field(0, ge=0)
    task_digest: str
    harness: Participant
    status: AttemptStatus
    error: str | None = None
    resumable: bool = Field(False, description="Not the agent's doing: a resume runs it again.")
    prompt: str
    answers: list[Answer] = Field(default_factory=list)
    calls: list[TaskToolCall] = Field(default_factory=list)
    usage: TaskUsage | None = None
    started_at: str | None = Field(
        None,
        description="When it ran (UTC); None for an in-process (scripted) harness, whose "
        "output is a function of its code (agenteval.stamps), or an older record.",
    )
    commit: str | None = Field(
        None,
        description="The repository's HEAD when it ran (agenteval.stamps.head); None outside "
        "git, for an in-process harness (stamped by its code instead) or an older record.",
    )
    wall_seconds: float | None = Field(
        None, description="The agent's own time; None for an in-process (scripted) harness."
    )
    changed_files: list[str] = Field(default_factory=list)
    findings: list[str] = Field(
        default_factory=list,
        description="What the copy held that was never graded: compiled files, caches, links, "
        "sockets, FIFOs, devices, binary or oversized files.",
    )
    diff_sha256: str | None = None
    setup_diff_sha256: str | None = None
    grading_seed: int | None = Field(
        None,
        description="The seed the hidden probe inputs were made from, drawn at grading time "
        "(the run's seed for an in-process harness); kept so the grading can be replayed.",
    )
    checks: list[CheckResult] = Field(
        default_factory=list, description="Coding tasks: every expect check, in order."
    )
    sandbox: str | None = Field(
        None, description="Where its commands ran (tasks.sandbox); None: recorded before it."
    )
    gh_calls: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Every call of the offline gh, as its service logged it (outside the "
        "agent's reach): arguments, labels added, reviews posted, refusals.",
    )

    @property
    def final_answer(self) -> str | None:
        return self.answers[-1].text if self.answers else None


JudgeStatus = Literal["judged", "unjudged", "error", "not_asked"]


class DimensionScores(_Strict):
    instructions: int = Field(ge=1, le=5)
    quality: int = Field(ge=1, le=5)
    reasoning: int = Field(ge=1, le=5)
    honesty: int = Field(ge=1, le=5)


class TaskGrade(_Strict):
    """The judge's grades of one attempt. `unjudged`: no usable grade (never a score);
    `error`: the judge's backend failed (INFRA, not the agent); `not_asked`: no judge."""

    task_id: str
    repeat: int = 0
    attempt_digest: str
    task_digest: str
    judge: Participant
    status: JudgeStatus
    scores: DimensionScores | None = None
    established: list[bool] | None = Field(
        None, description="Question tasks: one verdict per must_establish point, in order."
    )
    rationale: str | None = None
    reason: str | None = None
    replies: list[str] = Field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
