"""What the agent said and did in one scenario iteration. No grades live here."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agenteval.schema.status import Status


class Usage(BaseModel):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | None = Field(None, description="None means unknown (n/a), never 0.")
    cost_source: str | None = Field(
        None, description="harness_counts | api_equivalent | estimated (agenteval.llm.cost)"
    )


class ToolCall(BaseModel):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    result: Any = None
    error: str | None = None
    latency_ms: float | None = None
    fenced: bool = Field(
        False,
        description="The call tried to read outside the suite's corpus (the answer key, "
        "scenarios, run results, reports...): refused by the agent's tools, or, for an "
        "external agent's reported step, a path argument outside the corpus.",
    )


class TranscriptTurn(BaseModel):
    turn: int
    user_message: str
    response: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    latency_ms: float | None = None
    usage: Usage | None = None
    models: list[str | None] | None = Field(
        None,
        description="The models the agent's backend reported for this turn's replies (each "
        "once; null for a reply that named none); absent when the target cannot say.",
    )
    simulator_fault: str | None = Field(
        None, description="Set when the simulated user, not the agent, got this turn wrong."
    )


class Participant(BaseModel):
    """Who produced something: enough to tell two instruments or two agents apart."""

    kind: str
    model: str | None = None
    protocol: str | None = None
    config_digest: str | None = None
    details: dict[str, Any] = Field(default_factory=dict)

    def same_as(self, other: Participant) -> bool:
        """The same instrument or agent: kind, model, protocol and configuration digest.
        `details` only explain the digest (which file, which setting) and are not compared."""
        fields = ("kind", "model", "protocol", "config_digest")
        return all(getattr(self, f) == getattr(other, f) for f in fields)


class Attempt(BaseModel):
    """An earlier attempt at the same unit that ended unmeasured and was run again."""

    status: str
    error: str | None = None
    started_at: str | None = None


class Transcript(BaseModel):
    scenario_id: str
    iteration: int = 0
    seed: int = 0
    scenario_digest: str
    status: str = Field(description="COMPLETED, or an unmeasured status such as TIMEOUT.")
    error: str | None = None
    target: Participant
    simulator: Participant
    documents: dict[str, str | None] = Field(
        default_factory=dict,
        description="sha256 of every document this conversation read: the scenario's own and "
        "each file the agent indexed. The transcript is reused only while all are unchanged.",
    )
    setup_calls: list[ToolCall] = Field(default_factory=list)
    turns: list[TranscriptTurn] = Field(default_factory=list)
    started_at: str | None = None
    commit: str | None = Field(
        None,
        description="The repository's HEAD when this unit ran (agenteval.stamps); null outside "
        "git and for an in-process agent, whose output is a function of its code digest.",
    )
    duration_s: float | None = None
    cost_usd: float | None = Field(None, description="Known cost of the agent's calls; None = n/a.")
    attempts: int = Field(
        1, ge=1, description="Times this unit was run; > 1 when an earlier attempt was retried."
    )
    earlier_attempts: list[Attempt] = Field(
        default_factory=list, description="How each earlier attempt ended (oldest first)."
    )
    resumable: bool = Field(
        False,
        description="Not the agent's fault and worth retrying: a resumed run runs it again "
        "(quota or credential stop, run budget reached before it started).",
    )

    @property
    def fenced_reads(self) -> int:
        """Tool calls that tried to read outside the corpus, setup and turns together."""
        calls = self.setup_calls + [c for turn in self.turns for c in turn.tool_calls]
        return sum(call.fenced for call in calls)

    @property
    def unmeasured_status(self) -> Status | None:
        return None if self.status == "COMPLETED" else Status(self.status)
