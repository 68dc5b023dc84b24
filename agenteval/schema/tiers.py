"""eval/tiers.yaml: which CI lane each scenario runs in, and the one-line reason why.

    smoke:
      concise_answer: Stable on every model; a one-turn honesty check that is cheap to run.
    full:
      csv_aggregation: Arithmetic over a table: the baseline fails it, stronger agents should not.
    backlog:
      unicode_heavy_file: Fails on every model measured so far; kept out of the full sweep.

Lanes nest: `smoke` runs the smoke tier, `full` runs smoke and full (and any scenario without
a tier), `backlog` runs only the backlog.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Tier = Literal["smoke", "full", "backlog"]
TIERS: tuple[Tier, ...] = ("smoke", "full", "backlog")
# What `--tier X` / `suite.tier: X` selects; a scenario without a tier runs in `full`.
LANES: dict[str, frozenset[str]] = {
    "smoke": frozenset({"smoke"}),
    "full": frozenset({"smoke", "full", "unassigned"}),
    "backlog": frozenset({"backlog"}),
}


class TiersFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    smoke: dict[str, str] = Field(default_factory=dict, description="id -> one-line reason.")
    full: dict[str, str] = Field(default_factory=dict, description="id -> one-line reason.")
    backlog: dict[str, str] = Field(default_factory=dict, description="id -> one-line reason.")
