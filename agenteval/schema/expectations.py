"""Expectations: gate limits every one of several runs met, and what main measured.

Written by `agenteval propose RUN... --out FILE`, read by `agenteval gate RUN --expect FILE`.
The limits belong to one agent model, one scenario set and one judge: a file is never applied
to a run that differs in any of the three (see agenteval.gate.expectations).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SCHEMA = "agenteval.expectations/1"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Identity(_Strict):
    """What the limits are tied to."""

    agent: dict[str, Any] = Field(description="Agent kind and model.")
    suite: dict[str, Any] = Field(description="Scenario-set digest and size.")
    judge: dict[str, Any] = Field(description="Judge kind, model, config digest and rules.")


class DrawMeasure(_Strict):
    """One draw: one iteration index of one run, over the whole suite."""

    source: str
    iteration: int
    passed: int
    judged: int
    unmeasured: int
    judged_pass_rate: float | None = None
    avg_score: float | None = None
    total_tokens: float | None = Field(None, description="Per iteration (run total / iterations).")
    cost_usd: float | None = Field(None, description="Per iteration (run total / iterations).")


class ScenarioMeasure(_Strict):
    k: int = Field(description="Draws in which it passed.")
    n: int = Field(description="Draws in which it was judged.")
    draws: int
    score_mean: float | None = None


class Limits(_Strict):
    min_passed: int = Field(description="Worst draw's passes minus the flip headroom.")
    min_avg_score: float | None = Field(None, description="Worst draw's average minus headroom.")
    max_unmeasured: int = Field(description="Worst draw's unmeasured scenarios (no headroom).")
    max_total_tokens: float | None = Field(None, description="Most expensive draw x headroom.")
    max_cost_usd: float | None = Field(None, description="Most expensive draw x headroom.")


class Headroom(_Strict):
    flips: int = Field(description="Scenarios that may flip PASS -> FAIL in one noisy draw.")
    score: float = Field(description="Average-score points one noisy draw may lose.")
    usage_factor: float = Field(description="Factor tokens and cost may grow by.")


class Expectations(_Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: str = Field(SCHEMA, alias="schema")
    identity: Identity
    proposed_at: str
    measured_on: dict[str, Any] = Field(description="Runs, draws and the commit proposed from.")
    headroom: Headroom
    limits: Limits
    measured: list[DrawMeasure] = Field(description="Every draw the limits were proposed from.")
    scenarios: dict[str, ScenarioMeasure]
