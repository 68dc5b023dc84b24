"""How noisy a run is: intervals for every headline number, and the run-to-run noise floor.

Two products:

* :func:`noise_report` reads one scorecard and writes ``reports/noise.json`` (the ``stats`` DVC
  stage): per scenario k/N with a Wilson interval, a stability class and the score's mean and
  SD; per category and overall the judged pass rate (Wilson interval on the effective sample
  size, clustered by scenario) and the average score (FAIL and BLOCKED capped, as in
  :func:`agenteval.scoring.capped`; t interval clustered by scenario, clipped to 0..10), each
  bounded to its metric's range and given only from MIN_INTERVAL_SCENARIOS scenarios on
  ("too few scenarios" below); between- and within-scenario variance of the score; and the
  minimum detectable effect (MDE) of a paired comparison of this size.
* :func:`noise_floor` reduces R scorecards of one configuration (run by
  :func:`agenteval.gate.noise.measure_noise`) to ``noise_floor.json``, which
  ``agenteval compare --noise`` reads.

Nothing here is NaN: a statistic that the data cannot identify (one scenario, one iteration)
is ``None`` with a ``note`` saying why, because a reader can act on "unknown" but not on NaN.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval.fileio import digest_of
from agenteval.power import mde
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.status import JUDGED_STATUSES, Status
from agenteval.scoring import CAPPED_STATUSES, FAIL_SCORE_CAP, SCORE_MAX, SCORE_MIN
from agenteval.stats import (
    classify_stability,
    clustered_se,
    mean_ci,
    variance_components,
    wilson_bounds,
    wilson_interval,
)

SCHEMA = "agenteval.noise/1"
FLOOR_SCHEMA = "agenteval.noise_floor/1"
# Conventional design values for the MDE: two-sided 5% test, 80% power.
MDE_ALPHA, MDE_POWER = 0.05, 0.8
# Six decimals keep JSON diffs readable and are far below any difference worth reporting.
DIGITS = 6
# Below this many scenarios a group gets no interval: with 2, the t quantile is 12.7 and an
# interval says nothing but its width ("50% ± 635%"); "too few scenarios" says it honestly.
MIN_INTERVAL_SCENARIOS = 3
TOO_FEW = "too few scenarios for an interval ({n} < {min})"


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


@dataclass
class ScenarioTally:
    """One scenario's iterations in one scorecard, reduced to what the statistics need."""

    id: str
    category: str
    digest: str | None
    runs: int = 0
    outcomes: list[float] = field(default_factory=list)  # 1.0 PASS, 0.0 FAIL/BLOCKED
    scores: list[float] = field(default_factory=list)  # capped scores of judged iterations
    statuses: list[str] = field(default_factory=list)
    ground_truth: str | None = None  # facts and document bytes graded against

    @property
    def k(self) -> int:
        return int(sum(self.outcomes))

    @property
    def n(self) -> int:
        return len(self.outcomes)

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def score_mean(self) -> float | None:
        return math.fsum(self.scores) / len(self.scores) if self.scores else None

    @property
    def unmeasured(self) -> int:
        return self.runs - self.n


def fail_cap_of(card: Scorecard) -> float:
    rules = (card.config.get("judge") or {}).get("rules") or {}
    return float(rules.get("fail_cap", FAIL_SCORE_CAP))


def tally(card: Scorecard) -> dict[str, ScenarioTally]:
    """Group a scorecard's rows by scenario id, in first-seen order."""
    cap = fail_cap_of(card)
    digests = card.config.get("scenarios") or {}
    truths = card.config.get("ground_truth") or {}
    out: dict[str, ScenarioTally] = {}
    for row in card.scenarios:
        t = out.get(row.id)
        if t is None:
            digest = digests.get(row.id, row.scenario_digest)
            truth = truths.get(row.id, row.ground_truth_digest)
            t = out[row.id] = ScenarioTally(row.id, row.category, digest, ground_truth=truth)
        t.runs += 1
        t.statuses.append(row.status)
        if row.status not in JUDGED_STATUSES:
            continue
        t.outcomes.append(1.0 if row.status == Status.PASS else 0.0)
        if row.score is not None:
            # The same cap as scoring.capped: a FAIL or BLOCKED never lifts the average.
            t.scores.append(min(row.score, cap) if row.status in CAPPED_STATUSES else row.score)
    return out


def _sd(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def scenario_stats(t: ScenarioTally, conf: float, tau: float) -> dict[str, Any]:
    """k/N, Wilson interval, stability class and score spread of one scenario."""
    row: dict[str, Any] = {"category": t.category, "k": t.k, "n": t.n, "runs": t.runs}
    row["pass_rate"] = _r(t.rate)
    if t.n:
        low, high = wilson_interval(t.k, t.n, conf)
        row["wilson"] = [_r(low), _r(high)]
    else:
        row["wilson"] = None
        row["note"] = "no judged iteration: nothing to estimate"
    # classify_stability keeps its own 90% interval: the class is a screening label and its
    # documented thresholds (e.g. 11/11 for stable_pass) are stated at that level.
    row["stability"] = classify_stability(t.k, t.n, tau)
    row["score_mean"] = _r(t.score_mean)
    row["score_sd"] = _r(_sd(t.scores))
    if t.n and len(t.scores) < 2:
        row["score_sd_note"] = "one judged iteration: no within-scenario spread"
    return row


def clustered_wilson(
    outcomes: Sequence[float], clusters: Sequence[str], conf: float = 0.95
) -> tuple[float, float, float]:
    """Wilson interval of a pass rate whose 0/1 outcomes are clustered by scenario:
    (low, high, effective n).

    Repeats of one scenario are correlated, so they carry less than one trial's information
    each. The Wilson interval is computed on the effective sample size n / deff, with the
    design effect deff = clustered variance / binomial variance of the mean (never below 1).
    When every outcome is equal the variance ratio is undefined and n_eff is the number of
    scenarios, the conservative end. Bounded to [0, 1] by construction, unlike p +/- t*SE.
    Source: Kish (1965), Survey Sampling, Sec. 8.2; Dean & Pagano (2015), J. Survey Stat.
    Methodol. 3(4), which finds Wilson with the effective sample size well calibrated.
    """
    ids = list(clusters)
    if not outcomes or any(v not in (0.0, 1.0) for v in outcomes) or len(ids) != len(outcomes):
        raise ValueError("outcomes must be 0 or 1, one per cluster label, at least one")
    p, n, n_clusters = math.fsum(outcomes) / len(outcomes), float(len(outcomes)), len(set(ids))
    if n_clusters == len(outcomes):
        n_eff = n  # one outcome per scenario: independent trials
    elif p in (0.0, 1.0) or n_clusters < 2:
        n_eff = float(n_clusters)
    else:
        deff = max(1.0, clustered_se(outcomes, ids) ** 2 / (p * (1.0 - p) / n))
        n_eff = n / deff
    low, high = wilson_bounds(p, n_eff, conf)
    return low, high, n_eff


def _interval(
    values: Sequence[float], clusters: Sequence[str], conf: float, rate: bool
) -> dict[str, Any]:
    """The mean with an interval bounded to the metric's range: Wilson on the effective sample
    size for a pass rate (`rate`), a scenario-clustered t interval clipped to 0..10 for a score.
    `low`/`high` are None, with a `note` saying why, when the data cannot give one."""
    if not values:
        return {"value": None, "note": "no judged iteration"}
    out: dict[str, Any] = {"value": _r(math.fsum(values) / len(values)), "n": len(values)}
    n_scenarios = out["n_scenarios"] = len(set(clusters))
    out.update(method="wilson" if rate else "t", se=None, low=None, high=None, half_width=None)
    if n_scenarios < MIN_INTERVAL_SCENARIOS:
        out["note"] = TOO_FEW.format(n=n_scenarios, min=MIN_INTERVAL_SCENARIOS)
        return out
    ci = mean_ci(values, clusters, conf, "t")
    out["se"] = _r(ci.se)
    if rate:
        low, high, n_eff = clustered_wilson(values, clusters, conf)
        out.update(low=_r(low), high=_r(high), n_eff=_r(n_eff))
    elif ci.se == 0.0:
        out["note"] = "no spread observed: no interval (a zero width would claim exactness)"
    else:
        # The t interval can cross 0 or 10 for scores near the edge; the metric cannot.
        low, high = max(SCORE_MIN, ci.low), min(SCORE_MAX, ci.high)
        out.update(low=_r(low), high=_r(high), half_width=_r(ci.half_width))
    return out


def _bootstrap(
    values: Sequence[float], clusters: Sequence[str], conf: float, resamples: int, seed: int
) -> dict[str, Any] | None:
    if len(set(clusters)) < MIN_INTERVAL_SCENARIOS:
        return None
    ci = mean_ci(values, clusters, conf, "bootstrap", resamples=resamples, seed=seed)
    return {"low": _r(ci.low), "high": _r(ci.high), "resamples": resamples, "seed": seed}


def _variance(scores: Sequence[float], clusters: Sequence[str]) -> dict[str, Any]:
    """Between- and within-scenario variance of the score (one-way random effects)."""
    n_clusters = len(set(clusters))
    if n_clusters < 2 or len(scores) <= n_clusters:
        why = "fewer than 2 scenarios" if n_clusters < 2 else "no scenario has 2+ iterations"
        return {"between": None, "within": None, "note": f"not identified: {why}"}
    between, within = variance_components(scores, clusters)
    return {"between": _r(between), "within": _r(within)}


def _flat(
    tallies: Iterable[ScenarioTally],
) -> tuple[list[float], list[str], list[float], list[str]]:
    outcomes: list[float] = []
    o_ids: list[str] = []
    scores: list[float] = []
    s_ids: list[str] = []
    for t in tallies:
        outcomes += t.outcomes
        o_ids += [t.id] * t.n
        scores += t.scores
        s_ids += [t.id] * len(t.scores)
    return outcomes, o_ids, scores, s_ids


def group_stats(
    tallies: Sequence[ScenarioTally], conf: float, resamples: int, seed: int
) -> dict[str, Any]:
    """Headline numbers of a group of scenarios (a category or the whole run)."""
    outcomes, o_ids, scores, s_ids = _flat(tallies)
    pass_rate = _interval(outcomes, o_ids, conf, rate=True)
    avg_score = _interval(scores, s_ids, conf, rate=False)
    if resamples >= 2:
        pass_rate["bootstrap"] = _bootstrap(outcomes, o_ids, conf, resamples, seed)
        avg_score["bootstrap"] = _bootstrap(scores, s_ids, conf, resamples, seed)
    return {
        "scenarios": len(tallies),
        "judged_pass_rate": pass_rate,
        "avg_score": avg_score,
        "score_variance": _variance(scores, s_ids),
    }


def _mde_for(means: Sequence[float], within: float | None, repeats: float) -> dict[str, Any]:
    """MDE of a paired comparison of len(means) scenarios; see :func:`mde_report`."""
    n = len(means)
    out: dict[str, Any] = {"n_pairs": n}
    sd_means = _sd(means)
    if sd_means is None:
        return out | {"mde": None, "note": "fewer than 2 measured scenarios"}
    conservative = math.sqrt(2.0) * sd_means
    if conservative == 0.0:
        out.update(mde=None, note="no variation across scenarios: the SD of differences is unknown")
    else:
        out.update(mde=_r(mde(conservative, n, MDE_ALPHA, MDE_POWER)), sd_diff=_r(conservative))
    if within is None or repeats < 2:
        out["repeat_noise_only"] = None
        out["repeat_noise_note"] = "needs 2+ iterations per scenario"
    else:
        sd_noise = math.sqrt(2.0 * within / repeats)
        value = mde(sd_noise, n, MDE_ALPHA, MDE_POWER) if sd_noise > 0 else None
        out["repeat_noise_only"] = {"sd_diff": _r(sd_noise), "mde": _r(value)}
    return out


def _harmonic(values: Sequence[int]) -> float:
    positive = [v for v in values if v > 0]
    return len(positive) / math.fsum(1.0 / v for v in positive) if positive else 0.0


def mde_report(tallies: Sequence[ScenarioTally]) -> dict[str, Any]:
    """MDE at 80% power (two-sided alpha .05) for a paired comparison at this n.

    One run has no per-scenario differences, so the SD of differences is estimated:

    * ``mde`` (headline, conservative): sd_diff = sqrt(2) * SD of per-scenario means, i.e. the
      two runs' per-scenario means treated as uncorrelated. Pairing only lowers the SD when the
      correlation is positive, so this bounds the true SD from above in the usual case.
    * ``repeat_noise_only`` (optimistic): sd_diff = sqrt(2 * within / r), the repeat-to-repeat
      noise alone (within-scenario variance, r = harmonic mean of iterations); it assumes the
      change moves every scenario by the same amount.

    ``compare`` reports the MDE from the observed SD of differences instead.
    """
    measured = [t for t in tallies if t.n]
    scored = [t for t in tallies if t.scores]
    outcomes, o_ids, scores, s_ids = _flat(measured)
    rate_within = _within(outcomes, o_ids)
    score_within = _within(scores, s_ids)
    return {
        "alpha": MDE_ALPHA,
        "power": MDE_POWER,
        "judged_pass_rate": _mde_for(
            [t.rate or 0.0 for t in measured], rate_within, _harmonic([t.n for t in measured])
        ),
        "avg_score": _mde_for(
            [t.score_mean or 0.0 for t in scored],
            score_within,
            _harmonic([len(t.scores) for t in scored]),
        ),
    }


def _within(values: Sequence[float], clusters: Sequence[str]) -> float | None:
    n_clusters = len(set(clusters))
    if n_clusters < 2 or len(values) <= n_clusters:
        return None
    return variance_components(values, clusters)[1]


def noise_report(
    card: Scorecard, conf: float = 0.95, tau: float = 0.2, resamples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """Every headline number of one scorecard with its uncertainty (``reports/noise.json``)."""
    tallies = tally(card)
    by_category: dict[str, list[ScenarioTally]] = {}
    for t in tallies.values():
        by_category.setdefault(t.category, []).append(t)
    notes = []
    if int(card.config.get("iterations") or 1) < 2:
        notes.append(
            "1 iteration: within-scenario noise is not measured; intervals reflect "
            "between-scenario spread only and stability classes stay 'uncertain'"
        )
    return {
        "schema": SCHEMA,
        # Lets the report tell a current noise.json from one left over from another scorecard.
        "scorecard_digest": digest_of(card),
        "conf": conf,
        "min_interval_scenarios": MIN_INTERVAL_SCENARIOS,
        "stability_tau": tau,
        "iterations": card.config.get("iterations"),
        "seeds": card.config.get("seeds"),
        "overall": group_stats(list(tallies.values()), conf, resamples, seed),
        "categories": {
            name: group_stats(rows, conf, resamples, seed)
            for name, rows in sorted(by_category.items())
        },
        "mde": mde_report(list(tallies.values())),
        "scenarios": {t.id: scenario_stats(t, conf, tau) for t in tallies.values()},
        "notes": notes,
    }


# ----------------------------------------------------------------------------- noise floor


def _spread(values: Sequence[float | None]) -> dict[str, Any]:
    seen = [v for v in values if v is not None]
    if not seen:
        return {
            "values": list(values),
            "mean": None,
            "sd": None,
            "min": None,
            "max": None,
            "spread": None,
        }
    return {
        "values": [_r(v) for v in values],
        "mean": _r(math.fsum(seen) / len(seen)),
        "sd": _r(_sd(seen)),
        "min": _r(min(seen)),
        "max": _r(max(seen)),
        "spread": _r(max(seen) - min(seen)),
    }


def flip_rate(k: int, n: int) -> float | None:
    """P(two repeats of the unchanged configuration disagree) = 2 p (1 - p), unbiased form."""
    return 2.0 * k * (n - k) / (n * (n - 1)) if n >= 2 else None


def _floor_scenario(rows: Sequence[ScenarioTally | None]) -> dict[str, Any]:
    present = [t for t in rows if t is not None]
    k = sum(t.k for t in present)
    n = sum(t.n for t in present)
    scores = [s for t in present for s in t.scores]
    rates = [None if t is None else t.rate for t in rows]
    spread = _spread(rates)
    return {
        "category": present[0].category,
        "digest": present[0].digest,
        "k": k,
        "n": n,
        "pass_rates": spread["values"],
        "pass_rate_spread": spread.get("spread"),
        "flipped": 0 < k < n,
        "flip_rate": _r(flip_rate(k, n)),
        "score_mean": _r(math.fsum(scores) / len(scores)) if scores else None,
        "score_sd": _r(_sd(scores)),
    }


def _metric(card: Scorecard, name: str, category: str | None = None) -> float | None:
    source = card.summary if category is None else card.summary.by_category.get(category)
    value = None if source is None else getattr(source, name)
    return None if value is None else float(value)


def noise_floor(cards: Sequence[Scorecard]) -> dict[str, Any]:
    """Run-to-run noise of R scorecards of one configuration (``noise_floor.json``)."""
    if len(cards) < 2:
        raise ValueError(f"a noise floor needs at least 2 runs, got {len(cards)}")
    tallies = [tally(card) for card in cards]
    ids = list(dict.fromkeys(i for t in tallies for i in t))
    scenarios = {i: _floor_scenario([t.get(i) for t in tallies]) for i in ids}
    categories = sorted({c for card in cards for c in card.summary.by_category})
    metrics = ("judged_pass_rate", "avg_score")
    first = cards[0].config
    return {
        "schema": FLOOR_SCHEMA,
        "runs": len(cards),
        "iterations": first.get("iterations"),
        "seeds": [card.config.get("seeds") for card in cards],
        "config": {key: first.get(key) for key in ("target", "simulator", "judge")}
        | {"corpus_digest": first.get("corpus_digest")},
        "run_metrics": {m: _spread([_metric(c, m) for c in cards]) for m in metrics},
        "category_metrics": {
            cat: {m: _spread([_metric(c, m, cat) for c in cards]) for m in metrics}
            for cat in categories
        },
        "scenarios_flipping": sum(s["flipped"] for s in scenarios.values()),
        "scenarios": scenarios,
    }
