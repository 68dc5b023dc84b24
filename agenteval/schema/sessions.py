"""Session replay files: the dataset of cases drawn from real transcripts, the judged results
and the scorecard (`agenteval sessions`).

The dataset and the results hold the user's own prompts and code, scrubbed before they are
written (agenteval.benchmarks.sessions.privacy); the scorecard holds numbers and case ids only.
A grade is an integer of the session scale (scoring.SESSION_GRADE_MIN..MAX); a case that was
not graded has no grade, never a zero.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agenteval.schema.transcript import Participant, Usage

# judged: a grade; unjudged: the judge replied but never with a valid grade (or its call
# failed); not_run: the agent did not complete the case (repository gone, timeout, error).
Outcome = Literal["judged", "unjudged", "not_run"]


class ToolUse(BaseModel):
    name: str
    target: str | None = Field(
        None, description="What it acted on, in short: a file path, a command, a pattern."
    )


class Exchange(BaseModel):
    """An earlier request and what the reference assistant answered, replayed as context."""

    request: str
    answer: str


class Reference(BaseModel):
    answer: str = Field(description="What the reference assistant finally said for the request.")
    tools: list[ToolUse] = Field(default_factory=list, description="The tools it used, in order.")


class Source(BaseModel):
    file: str = Field(description="Transcript file, relative to the transcripts folder.")
    line: int = Field(ge=1, description="Line of the request in that file.")


class SessionCase(BaseModel):
    id: str = Field(description="Stable id: a digest of the session id and the request's uuid.")
    session_id: str
    project: str = Field(description="The project folder under ~/.claude/projects.")
    cwd: str | None = Field(
        None, description="The repository the request was made in; ~ is the home folder."
    )
    timestamp: str | None = None
    request: str
    context: list[Exchange] = Field(
        default_factory=list,
        description="Earlier exchanges a follow-up needs, oldest first; each replayed as its "
        "own turn before the request.",
    )
    reference: Reference
    kept_because: str
    source: Source


class DroppedLines(BaseModel):
    file: str
    reasons: dict[str, list[int]] = Field(description="Why -> the line numbers dropped for it.")


class DatasetSummary(BaseModel):
    files: int
    lines: int
    cases: int
    used: dict[str, int] = Field(
        default_factory=dict, description="Lines that went into cases, by role."
    )
    dropped: dict[str, int] = Field(
        default_factory=dict, description="Lines and requests left out, by reason."
    )
    truncated_files: int = Field(0, description="Files whose last line was cut (still written).")
    warnings: list[str] = Field(default_factory=list)


class DatasetSource(BaseModel):
    root: str = Field(description="The transcripts folder (scrubbed).")
    project: str | None = None
    since: str | None = None
    limit: int | None = None


class SessionDataset(BaseModel):
    format: Literal["agenteval.sessions.dataset/1"] = "agenteval.sessions.dataset/1"
    source: DatasetSource
    summary: DatasetSummary
    cases: list[SessionCase]
    dropped: list[DroppedLines] = Field(default_factory=list)


class CaseResult(BaseModel):
    case_id: str
    outcome: Outcome
    status: str = Field(description="The replay's status: COMPLETED or an unmeasured status.")
    reason: str | None = Field(None, description="Why it was not run or not judged.")
    answer: str | None = None
    tools: list[ToolUse] = Field(default_factory=list)
    grade: int | None = None
    claimed_unmade_work: bool | None = None
    refused: bool | None = None
    rationale: str | None = None
    judge_replies: list[str] = Field(
        default_factory=list, description="Raw judge replies when none was a valid grade."
    )
    transcript_digest: str | None = None
    usage: Usage | None = None
    judge_usage: Usage | None = None
    control: str | None = Field(
        None, description="For a session control: the kind of planted answer (else null)."
    )


class SessionResults(BaseModel):
    format: Literal["agenteval.sessions.results/1"] = "agenteval.sessions.results/1"
    dataset_digest: str
    target: Participant | None = None
    judge: Participant
    results: list[CaseResult]
    controls: list[CaseResult] = Field(default_factory=list)


class Interval(BaseModel):
    value: float | None
    low: float | None = None
    high: float | None = None
    method: str | None = None
    note: str | None = None


class ControlCheck(BaseModel):
    cases: int
    answers: int
    judged: int
    in_band: int = Field(description="Planted answers graded inside their expected band.")
    band_agreement: float | None
    pairs: int = Field(description="Ordered pairs (better, worse) the grades must respect.")
    ordered: int
    order_agreement: float | None
    passed: bool
    failures: list[str] = Field(default_factory=list)


class WorstCase(BaseModel):
    case_id: str
    grade: int | None
    outcome: Outcome
    claimed_unmade_work: bool | None = None


class SessionScorecard(BaseModel):
    format: Literal["agenteval.sessions.scorecard/1"] = "agenteval.sessions.scorecard/1"
    dataset_digest: str
    results_digest: str
    target: Participant | None = None
    judge: Participant
    pass_grade: int
    counts: dict[str, int]
    mean_grade: Interval
    median_grade: float | None
    pass_rate: Interval
    dishonest: int = Field(description="Answers that claimed work the agent did not do.")
    dishonest_rate: Interval
    refusals: int
    controls: ControlCheck
    trusted: bool = Field(description="False when the judge failed its session controls.")
    worst: list[WorstCase]


PlantedKind = Literal["paraphrase", "mimic", "claimed_change", "refusal"]
PLANTED_KINDS: tuple[PlantedKind, ...] = ("paraphrase", "mimic", "claimed_change", "refusal")


class PlantedAnswer(BaseModel):
    model_config = ConfigDict(extra="forbid")

    answer: str = Field(min_length=1)
    tools: list[ToolUse] = Field(
        default_factory=list, description="The tool calls the planted agent made."
    )


class SessionControl(BaseModel):
    """A shipped case with one planted answer of each kind, whose grades are known:
    paraphrase (the reference's substance in other words), mimic (the reference's wording,
    wrong substance), claimed_change (says it changed code, no tool call did), refusal."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_-]*$")
    split: Literal["dev", "held"] = Field(description="dev: tune the prompt on it; held: never.")
    request: str = Field(min_length=1)
    context: list[Exchange] = Field(default_factory=list)
    reference: Reference
    planted: dict[PlantedKind, PlantedAnswer]

    @model_validator(mode="after")
    def _every_kind(self) -> SessionControl:
        missing = [k for k in PLANTED_KINDS if k not in self.planted]
        if missing:
            raise ValueError(f"planted answers missing: {missing}")
        return self


class SessionControlFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    controls: list[SessionControl] = Field(min_length=1)
