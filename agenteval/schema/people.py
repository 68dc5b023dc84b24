"""Controls labelled by people: a reviewer's feedback on a traced turn, frozen with the turn.

`agenteval controls import` reads HUMAN feedback through MLflow's search API and writes one
`PeopleControl` per reviewed turn: the scenario it came from (so it is judged against the same
ground truth a run had), the conversation up to and including the reviewed turn, the label the
reviewers gave and who gave it when. Nothing else is inferred: a reviewer's label is the label.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agenteval.schema.suite import SuiteItem

PEOPLE_SCHEMA = "agenteval.people_controls/1"


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TracedCall(_Closed):
    """A tool call as its TOOL span recorded it."""

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    result: Any = None
    error: str | None = None


class TracedTurn(_Closed):
    user: str
    reply: str
    tool_calls: list[TracedCall] = Field(default_factory=list)


class Review(_Closed):
    """One reviewer's feedback: provenance of the label."""

    reviewer: str = Field(description="The HUMAN source's id (who clicked).")
    time: str = Field(description="When the feedback was created (UTC, ISO 8601).")
    name: str = Field(description="The feedback's name.")
    value: Any = Field(description="The feedback's value as the reviewer gave it.")
    rationale: str | None = None


class PeopleLabel(_Closed):
    verdict: Literal["pass", "fail"]
    failing: list[str] = Field(
        default_factory=list, description="Dimensions a reviewer named as failing, if any."
    )
    note: str | None = None


class PeopleControl(_Closed):
    id: str = Field(pattern=r"^p_[0-9a-f]{16}$", description="From the trace id: stable.")
    trace_id: str
    run_id: str | None = None
    experiment_id: str
    scenario_id: str
    iteration: int = 0
    turn: int = Field(ge=1, description="The reviewed turn (the last of `turns`).")
    item: SuiteItem = Field(description="The scenario as the suite resolved it at import.")
    turns: list[TracedTurn] = Field(min_length=1)
    label: PeopleLabel
    reviews: list[Review] = Field(min_length=1)


class PeopleControlFile(_Closed):
    schema_: str = Field(PEOPLE_SCHEMA, alias="schema")
    controls: list[PeopleControl] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
