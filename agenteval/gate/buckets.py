"""Which bucket each scenario of a comparison falls in, and why.

Buckets (decided in this order by :func:`bucket_for`):

* ``unmeasured``: no judged iteration on one side (an infrastructure status) — never a regression.
* ``unchanged``: the same judged pass rate on both sides.
* ``flaky``: with a noise floor, a change no larger than that scenario's run-to-run pass-rate
  spread; without one, any change that meets none of the rules below.
* ``regressed`` / ``improved``: (a) stable_pass -> stable_fail (or back) by
  :func:`agenteval.stats.classify_stability`; (b) a per-scenario Fisher exact test significant
  after Holm correction over the paired scenarios; or (c) a complete reversal (every judged
  repeat PASS on one side and FAIL on the other, >= 3 judged repeats per side) inside an overall
  or category change that is itself significant in the same direction. Why (c) needs that
  corroboration: with 3 repeats per side a scenario whose pass probability p never changed still
  reverses with probability p^3 (1-p)^3 (up to 1/64 at p = 0.5); over a 40-scenario suite of
  flaky scenarios some reversal happens about a third of the time, so a lone reversal is not
  evidence. Tied to a significant aggregate drop, the gate keeps the aggregate test's error rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agenteval.stats import classify_stability
from agenteval.uncertainty import ScenarioTally

ALPHA = 0.05
MIN_REVERSAL_REPEATS = 3
BUCKETS = (
    "regressed",
    "improved",
    "flaky",
    "unchanged",
    "unmeasured",
    "changed",
    "only_in_baseline",
    "only_in_current",
)


@dataclass
class ScenarioRow:
    id: str
    category: str
    bucket: str
    reason: str
    baseline: dict[str, Any] | None
    current: dict[str, Any] | None
    delta_rate: float | None = None
    delta_score: float | None = None
    p_value: float | None = None
    p_holm: float | None = None


def side_summary(t: ScenarioTally, tau: float) -> dict[str, Any]:
    return {
        "k": t.k,
        "n": t.n,
        "runs": t.runs,
        "pass_rate": t.rate,
        "score_mean": t.score_mean,
        "stability": classify_stability(t.k, t.n, tau),
        "unmeasured": t.unmeasured,
    }


def complete_reversal(base: ScenarioTally, cur: ScenarioTally) -> str | None:
    """'drop' / 'rise' when every judged repeat flipped, with >= 3 judged repeats per side."""
    if min(base.n, cur.n) < MIN_REVERSAL_REPEATS:
        return None
    if base.k == base.n and cur.k == 0:
        return "drop"
    if base.k == 0 and cur.k == cur.n:
        return "rise"
    return None


@dataclass(frozen=True)
class Evidence:
    """What decides a scenario's bucket beyond its own counts."""

    p_holm: float = 1.0  # per-scenario Fisher exact, Holm-adjusted over the paired scenarios
    aggregate_drop: bool = False  # overall or its category fell significantly
    aggregate_rise: bool = False
    noise_spread: float | None = None  # its run-to-run pass-rate spread in the noise floor
    tau: float = 0.2


def bucket_for(base: ScenarioTally, cur: ScenarioTally, ev: Evidence) -> tuple[str, str]:
    """The bucket of a scenario present, with unchanged content, in both runs; and why."""
    if base.n == 0 or cur.n == 0:
        sides = [name for name, t in (("baseline", base), ("current run", cur)) if t.n == 0]
        where = " or the ".join(sides)
        return "unmeasured", f"no judged iteration in the {where} (not a measurement)"
    delta = (cur.rate or 0.0) - (base.rate or 0.0)
    counts = f"{base.k}/{base.n} -> {cur.k}/{cur.n}"
    if delta == 0:
        return "unchanged", f"{counts} passed"
    if ev.noise_spread is not None and abs(delta) <= ev.noise_spread + 1e-9:
        return (
            "flaky",
            f"{counts}: within this scenario's noise floor (spread {ev.noise_spread:.2f})",
        )
    name, worse = ("regressed", True) if delta < 0 else ("improved", False)
    stable = ("stable_pass", "stable_fail") if worse else ("stable_fail", "stable_pass")
    classes = (classify_stability(base.k, base.n, ev.tau), classify_stability(cur.k, cur.n, ev.tau))
    if classes == stable:
        return name, f"{counts}: {stable[0]} -> {stable[1]}"
    if ev.p_holm < ALPHA:
        return name, f"{counts}: Fisher exact p (Holm) = {ev.p_holm:.3g}"
    reversal = complete_reversal(base, cur)
    corroborated = ev.aggregate_drop if worse else ev.aggregate_rise
    if reversal and corroborated:
        return name, f"{counts}: complete reversal within a significant aggregate change"
    if reversal:
        bound = _reversal_bound(base.n, cur.n)
        return "flaky", (
            f"{counts}: complete reversal, but no significant aggregate change; by chance "
            f"alone a reversal has probability up to {bound:.3g} per scenario"
        )
    return "flaky", f"{counts}: change not significant"


def _reversal_bound(nb: int, nc: int) -> float:
    """max over p of p^nb (1-p)^nc: the chance of a complete reversal if nothing changed."""
    p = nb / (nb + nc)
    return float(p**nb * (1 - p) ** nc)


def fisher_p(base: ScenarioTally, cur: ScenarioTally) -> float:
    from scipy.stats import fisher_exact

    table = [[base.k, base.n - base.k], [cur.k, cur.n - cur.k]]
    return float(fisher_exact(table).pvalue)
