"""What each unit and the whole run cost, and what kind of dollar each figure is.

A unit's figure is the sum of its turns' costs when every turn that reached a model was
priced, all of one source (agenteval.llm.cost's vocabulary); a unit that reached a model and
has a turn without a figure — no token counts, no rate-card price — reads n/a with the reason,
never $0.00; a unit that called no model (the builtin agent, a unit never run) has no figure.
The run adds units up per source: two kinds of dollar are never summed into one number.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agenteval.schema.scorecard import Cost, RunCost, ScenarioResult
from agenteval.schema.transcript import Transcript, Usage

LEGACY = {"provider_usage": "harness_counts"}  # the earlier name of the same source
RATED = ("harness_counts", "estimated")  # priced with the rate card: its date is named
MIXED = "mixed"
UNDATED = "undated"


def rate_cards(params: Mapping[str, Any]) -> dict[str, str]:
    """{model: the date its rate-card price names} from run.prices."""
    prices = (params.get("run") or {}).get("prices") or {}
    return {str(model): str(entry.get("as_of") or UNDATED) for model, entry in prices.items()}


TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _counted(usage: Usage) -> bool:
    return any((getattr(usage, k) or 0) > 0 for k in TOKENS)


def unit_cost(transcript: Transcript, cards: Mapping[str, str]) -> Cost | None:
    """The unit's figure; None when it called no model."""
    usages = [t.usage for t in transcript.turns if t.usage is not None]
    if not usages:
        return None
    unpriced = [u for u in usages if u.cost_usd is None]
    if unpriced:
        why = (
            "reached the model but has no rate-card price for it (run.prices)"
            if any(_counted(u) for u in unpriced)
            else "reached the model but counted no tokens"
        )
        return Cost(note=f"n/a: {why} ({len(unpriced)} of {len(usages)} turn(s))")
    sources = {LEGACY.get(str(u.cost_source), str(u.cost_source)) for u in usages}
    source = sources.pop() if len(sources) == 1 else MIXED
    usd = round(sum(u.cost_usd or 0.0 for u in usages), 8)
    card = None
    if source in RATED:
        names = [transcript.target.model or ""]
        names += [m for t in transcript.turns for m in t.models or [] if m]
        card = next((cards[n] for n in names if n in cards), UNDATED)
    return Cost(usd=usd, source=source, rate_card=card)


def total(costs: Iterable[Cost | None]) -> tuple[Cost, dict[str, float], int, int, int]:
    """(the total, USD by source, units priced, unpriced, without a model) of unit figures."""
    by_source: dict[str, float] = {}
    cards: set[str] = set()
    priced = unpriced = no_model = 0
    for cost in costs:
        if cost is None:
            no_model += 1
        elif cost.usd is None:
            unpriced += 1
        else:
            priced += 1
            key = cost.source or MIXED
            by_source[key] = round(by_source.get(key, 0.0) + cost.usd, 8)
            cards |= {cost.rate_card} if cost.rate_card else set()
    return _headline(by_source, cards, unpriced), by_source, priced, unpriced, no_model


def _headline(by_source: dict[str, float], cards: set[str], unpriced: int) -> Cost:
    missing = f"{unpriced} unit(s) reached the model without a figure" if unpriced else None
    if not by_source:
        return Cost(note=missing or "no model was called")
    if len(by_source) > 1:
        shown = ", ".join(f"{k} ${v:.4f}" for k, v in sorted(by_source.items()))
        return Cost(source=MIXED, note=f"kinds of dollar are not added: {shown}")
    ((source, usd),) = by_source.items()
    card = ", ".join(sorted(cards)) or None
    return Cost(usd=usd, source=source, rate_card=card, note=missing and f"leaves out {missing}")


def run_cost(results: list[ScenarioResult], metered: Cost | None = None) -> RunCost:
    """The run's figures from its units' (already on each ScenarioResult)."""
    headline, by_source, priced, unpriced, no_model = total(r.cost for r in results)
    categories: dict[str, list[Cost | None]] = {}
    for result in results:
        categories.setdefault(result.category, []).append(result.cost)
    return RunCost(
        total=headline,
        by_source=by_source,
        by_category={name: total(items)[0] for name, items in sorted(categories.items())},
        units_priced=priced,
        units_unpriced=unpriced,
        units_without_model=no_model,
        metered=metered,
    )


def label(cost: Cost | None) -> str:
    """'$0.0123 (harness_counts, rate card 2026-01-15)', 'n/a (reason)' or '—' (no model)."""
    if cost is None:
        return "—"
    if cost.usd is None:
        return "n/a" + (f" ({cost.note.removeprefix('n/a: ')})" if cost.note else "")
    kind = cost.source or "?"
    if cost.rate_card:
        kind += f", rate card {cost.rate_card}"
    return f"${cost.usd:.4f} ({kind})" + (f"; {cost.note}" if cost.note else "")


def cost_metrics(cost: RunCost | None) -> dict[str, float | int]:
    """Flat numbers for metrics.json (and so MLflow): the source is in each name."""
    if cost is None:
        return {}
    flat: dict[str, float | int] = {f"cost.{k}.usd": v for k, v in cost.by_source.items()}
    flat |= {"cost.units_priced": cost.units_priced, "cost.units_unpriced": cost.units_unpriced}
    if cost.metered is not None and cost.metered.usd is not None:
        flat["cost.metered.usd"] = cost.metered.usd
    return flat
