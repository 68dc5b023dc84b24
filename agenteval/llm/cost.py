"""Pricing completions from a per-model price table (the rate card).

Every cost carries its source (`CostSource`). `harness_counts` is priced from the token counts
the provider reported for each call, with the rate card's price for the model (a price names
the date of the card it was read from, `as_of`); `estimated` is priced from a characters/4
guess and only exists when the caller asked for estimates. No usage, usage that counted no
tokens, or no price for the model means cost None ("n/a"), never 0: a zero would read as
"free" and drag averages down. The other sources are not priced here: `api_equivalent` is a
harness's own reported cost, `metered` a billing API's (agenteval.llm.billing).

A whole agent run's cost (coding tasks) carries one of the three run-level sources with its
provenance, a sentence saying where the number came from (`RunCost` below).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from agenteval.llm.types import CostSource, Usage

CHARS_PER_TOKEN = 4


class ModelPrice(BaseModel):
    """US dollars per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float
    output_per_mtok: float
    # Absent cache rates fall back to the input rate: an upper bound is safer than
    # pretending cached tokens were free.
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    as_of: str | None = None  # the date of the rate card the price comes from

    @field_validator("as_of", mode="before")
    @classmethod
    def _date_text(cls, value: Any) -> Any:
        return value.isoformat() if isinstance(value, date) else value

    def cost(self, usage: Usage) -> float:
        read_rate = (
            self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        )
        write_rate = (
            self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        )
        total = (
            usage.input_tokens * self.input_per_mtok
            + usage.output_tokens * self.output_per_mtok
            + usage.cache_read_tokens * read_rate
            + usage.cache_write_tokens * write_rate
        )
        return total / 1_000_000


class PriceTable:
    """Model name -> ModelPrice, built from the `prices` mapping in run params."""

    def __init__(self, prices: Mapping[str, ModelPrice | Mapping[str, Any]] | None = None) -> None:
        self._prices: dict[str, ModelPrice] = {}
        for model, entry in (prices or {}).items():
            self._prices[model] = (
                entry if isinstance(entry, ModelPrice) else ModelPrice.model_validate(dict(entry))
            )

    def price_for(self, *models: str) -> ModelPrice | None:
        """First price found among the candidate names (configured name, reported name)."""
        for model in models:
            if model and model in self._prices:
                return self._prices[model]
        return None

    def __bool__(self) -> bool:
        return bool(self._prices)


def estimate_tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN) if chars > 0 else 0


def price_completion(
    prices: PriceTable | None,
    models: tuple[str, ...],
    usage: Usage | None,
    estimated: Usage | None,
) -> tuple[float | None, CostSource | None]:
    """(cost_usd, cost_source) for one call."""
    price = prices.price_for(*models) if prices else None
    if price is None:
        return None, None
    if usage is not None and not usage.is_empty():
        return price.cost(usage), "harness_counts"
    if estimated is not None and not estimated.is_empty():
        return price.cost(estimated), "estimated"
    return None, None  # nothing counted: n/a, not a free call


# -- whole runs: (cost, source, provenance) ------------------------------------------------
RunCost = tuple[float | None, CostSource | None, str | None]
NO_COST: RunCost = (None, None, None)


def harness_counts_cost(
    prices: PriceTable | None, models: tuple[str, ...], usage: Usage
) -> RunCost:
    """The harness's own token counts priced with the rate card; n/a without counts or price."""
    price = prices.price_for(*models) if prices else None
    if price is None or usage.is_empty():
        return NO_COST
    name = next(m for m in models if m and prices is not None and prices.price_for(m) is price)
    when = f"as of {price.as_of}" if price.as_of else "undated"
    return price.cost(usage), "harness_counts", f"rate card run.prices[{name}] ({when})"


def api_equivalent_cost(total_usd: float | None, harness: str) -> RunCost:
    """A harness's own list-price total (Claude Code's total_cost_usd)."""
    if total_usd is None:
        return NO_COST
    provenance = f"{harness}'s own total_cost_usd: list price of the tokens, not money spent"
    return float(total_usd), "api_equivalent", provenance


def metered_cost(before_usd: float, after_usd: float, meter: str) -> RunCost:
    """What the provider's billing meter counted between two snapshots of one fixed window."""
    spent = after_usd - before_usd
    if spent < 0:
        raise ValueError(f"the {meter} meter went backwards ({before_usd} -> {after_usd})")
    return spent, "metered", f"{meter} billing meter, snapshots before and after the run"
