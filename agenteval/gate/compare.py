"""`agenteval compare`: a paired, noise-aware verdict on whether CURRENT is worse than BASELINE.

Exit codes (the CLI's and :attr:`Comparison.exit_code`):

* 0 — no regression.
* 2 — a regression: the overall judged pass rate fell significantly, a category fell
  significantly after Holm correction, or a scenario is in ``regressed``; with
  ``require_complete`` also an incomplete comparison: a scenario the baseline measured that the
  current run is missing, or a unit left unmeasured in either run.
* 3 — not comparable: the agent model differs (the models the units reported running; unless
  ``allow_model_change``: every delta would partly be the model swap), the measuring
  instrument differs (judge — its code file by file,
  prompts, rules, model — or simulator; a corpus change only when it cannot be confined to
  single scenarios), or with ``same_agent`` the agent differs, or either run's judge missed the
  controls gate on the controls mixed into that run (judge.controls_per_run) or was not
  self-consistent over its repeats (judge.repeats). Every reason is listed.
* 4 — an input could not be read (used by the CLI; 2 is taken by "regression").

Tests. Scenarios are paired by id; a scenario whose content or ground truth (manifest facts,
document bytes) differs is ``changed`` and left out. With one judged iteration per side the
pass/fail test is the exact McNemar test; otherwise a paired sign-flip permutation test on
per-scenario pass rates. The same test runs per category with Holm correction. The gate's rule
is two-sided p < 0.05 AND a negative mean difference — the rule whose false-alarm rate (<= 5%)
and power (>= 80% for a 0.2 drop over 40 scenarios at 3 repeats) tests/test_stats.py simulates.
Average scores get the same tests and are reported, but do not gate: adding a second gating
family would double the false-alarm budget.

Scenario buckets (regressed, improved, flaky, unchanged, unmeasured, changed, only_in_*): the
rules are in :mod:`agenteval.gate.buckets`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from agenteval.gate.buckets import (
    ALPHA,
    BUCKETS,
    Evidence,
    ScenarioRow,
    bucket_for,
    fisher_p,
    side_summary,
)
from agenteval.gate.runs import (
    InputError,
    LoadedRun,
    agent_differences,
    corpus_localised,
    describe,
    instrument_differences,
    judge_gate_misses,
    load_side,
    model_difference,
)
from agenteval.power import mde
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.status import UNMEASURED_STATUSES
from agenteval.scoring import SCORE_MAX, SCORE_MIN
from agenteval.stats import (
    adjust_pvalues,
    mcnemar_exact,
    mean_ci,
    paired_permutation_test,
)
from agenteval.uncertainty import ScenarioTally, tally

# Re-exported: callers load both sides through this module.
__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_NOT_COMPARABLE",
    "EXIT_OK",
    "EXIT_REGRESSION",
    "Comparison",
    "Endpoint",
    "InputError",
    "LoadedRun",
    "compare",
    "is_regression",
    "load_side",
    "paired_endpoint",
]

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE, EXIT_BAD_INPUT = 0, 2, 3, 4


# ----------------------------------------------------------------------------- tests


@dataclass
class Endpoint:
    """One paired test: a metric (judged pass rate or average score) over a scope."""

    metric: str
    scope: str
    n: int
    baseline: float | None = None
    current: float | None = None
    delta: float | None = None
    low: float | None = None
    high: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    test: str | None = None
    mde: float | None = None
    sd_diff: float | None = None
    sd_source: str | None = None
    regression: bool = False
    improvement: bool = False
    gating: bool = False
    notes: list[str] = field(default_factory=list)

    @property
    def p_decision(self) -> float | None:
        return self.p_value if self.p_holm is None else self.p_holm


def is_regression(p_value: float, mean_diff: float, alpha: float = ALPHA) -> bool:
    """The gate's rule: two-sided p < alpha and the current side is worse."""
    return p_value < alpha and mean_diff < 0


def _sd(values: Sequence[float]) -> float:
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _mde(ep: Endpoint, base: Sequence[float], cur: Sequence[float], diffs: list[float]) -> None:
    """MDE from the observed SD of differences; all-equal differences fall back conservatively."""
    if ep.n < 2:
        ep.notes.append("MDE not estimable from fewer than 2 pairs")
        return
    sd, source = _sd(diffs), "observed SD of per-scenario differences"
    if sd == 0.0:
        # Zero spread would claim any difference is detectable; assume instead the two sides'
        # per-scenario values are uncorrelated (an upper bound for positively correlated pairs).
        sd = math.sqrt(_sd(base) ** 2 + _sd(cur) ** 2)
        source = "conservative: sqrt(var_base + var_current), differences showed no spread"
    if sd == 0.0:
        ep.notes.append("MDE not estimable: no variation on either side")
        return
    ep.sd_diff, ep.sd_source, ep.mde = sd, source, mde(sd, ep.n)


def paired_endpoint(
    metric: str,
    scope: str,
    base: Sequence[float],
    cur: Sequence[float],
    *,
    mcnemar: bool = False,
    resamples: int = 10000,
    seed: int = 0,
) -> Endpoint:
    """Paired test of cur - base; ``mcnemar`` for 0/1 outcomes from one iteration per side."""
    ep = Endpoint(metric, scope, len(base), gating=metric == "judged_pass_rate")
    if not base:
        ep.notes.append("no paired scenarios")
        return ep
    diffs = [c - b for b, c in zip(base, cur, strict=True)]
    ep.baseline, ep.current = math.fsum(base) / ep.n, math.fsum(cur) / ep.n
    ep.delta = math.fsum(diffs) / ep.n
    if mcnemar:
        worse = sum(b > c for b, c in zip(base, cur, strict=True))
        better = sum(c > b for b, c in zip(base, cur, strict=True))
        ep.p_value, ep.test = mcnemar_exact(worse, better), f"exact McNemar (b={worse}, c={better})"
    else:
        result = paired_permutation_test(base, cur, n_resamples=resamples, seed=seed)
        ep.p_value, ep.test = result.p_value, f"paired permutation ({result.method})"
        nonzero = sum(d != 0 for d in diffs)
        if 0 < nonzero <= 5:
            # 2 / 2^m is the smallest two-sided p an exact sign-flip test can give.
            ep.notes.append(
                f"{nonzero} non-zero difference(s): the smallest attainable p is "
                f"{2.0 ** (1 - nonzero):.3g}"
            )
    if ep.n >= 2:
        ci = mean_ci(diffs)
        # A t interval can overshoot what a difference of rates (or 0-10 scores) can be.
        bound = 1.0 if metric == "judged_pass_rate" else SCORE_MAX - SCORE_MIN
        ep.low, ep.high = max(-bound, ci.low), min(bound, ci.high)
    _mde(ep, base, cur, diffs)
    ep.regression = is_regression(ep.p_value, ep.delta)
    ep.improvement = ep.p_value < ALPHA and ep.delta > 0
    return ep


def _holm(endpoints: list[Endpoint]) -> None:
    tested = [ep for ep in endpoints if ep.p_value is not None]
    for ep, adj in zip(tested, adjust_pvalues([ep.p_value or 1.0 for ep in tested]), strict=True):
        ep.p_holm = adj
        ep.regression = is_regression(adj, ep.delta or 0.0)
        ep.improvement = adj < ALPHA and (ep.delta or 0.0) > 0


# ----------------------------------------------------------------------------- comparison


@dataclass
class Comparison:
    exit_code: int
    verdict: str  # "no regression" | "regression" | "not comparable"
    kind: str  # "same agent" | "A/B"
    baseline: dict[str, Any]
    current: dict[str, Any]
    reasons: list[str] = field(default_factory=list)
    instrument_differences: list[str] = field(default_factory=list)
    agent_differences: list[str] = field(default_factory=list)
    method: str | None = None
    overall: list[Endpoint] = field(default_factory=list)
    categories: list[Endpoint] = field(default_factory=list)
    scenarios: list[ScenarioRow] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    noise: dict[str, Any] | None = None

    def bucket(self, name: str) -> list[str]:
        return [row.id for row in self.scenarios if row.bucket == name]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["buckets"] = {name: self.bucket(name) for name in BUCKETS}
        return data


def _as_run(side: Scorecard | LoadedRun, label: str) -> LoadedRun:
    return side if isinstance(side, LoadedRun) else LoadedRun(side, label)


def _row(
    sid: str, bucket: str, reason: str, b: ScenarioTally | None, c: ScenarioTally | None, tau: float
) -> ScenarioRow:
    present = b or c
    category = present.category if present is not None else ""
    return ScenarioRow(
        sid,
        category,
        bucket,
        reason,
        None if b is None else side_summary(b, tau),
        None if c is None else side_summary(c, tau),
    )


def _split(
    base: dict[str, ScenarioTally], cur: dict[str, ScenarioTally], tau: float
) -> tuple[list[str], list[ScenarioRow]]:
    """Ids that both runs judged with the same content, and rows for everything else."""
    paired: list[str] = []
    rows: list[ScenarioRow] = []
    for sid in dict.fromkeys([*base, *cur]):
        b, c = base.get(sid), cur.get(sid)
        if b is None or c is None:
            only = "only_in_current" if b is None else "only_in_baseline"
            rows.append(_row(sid, only, "not in the other run", b, c, tau))
        elif b.digest and c.digest and b.digest != c.digest:
            why = "scenario content changed (other digest): left out of the tests"
            rows.append(_row(sid, "changed", why, b, c, tau))
        elif b.ground_truth and c.ground_truth and b.ground_truth != c.ground_truth:
            why = "ground truth changed (manifest facts or document bytes): left out of the tests"
            rows.append(_row(sid, "changed", why, b, c, tau))
        elif b.n == 0 or c.n == 0:
            rows.append(_row(sid, *bucket_for(b, c, Evidence(tau=tau)), b, c, tau))
        else:
            paired.append(sid)
    return paired, rows


def _endpoints(
    ids: Sequence[str],
    base: dict[str, ScenarioTally],
    cur: dict[str, ScenarioTally],
    scope: str,
    opts: dict[str, Any],
) -> list[Endpoint]:
    """Pass-rate and score endpoints over ``ids``; McNemar when every pair is 1 vs 1."""
    single = bool(ids) and all(base[i].n == 1 and cur[i].n == 1 for i in ids)
    rates = ([base[i].rate or 0.0 for i in ids], [cur[i].rate or 0.0 for i in ids])
    scored = [i for i in ids if base[i].scores and cur[i].scores]
    means = (
        [base[i].score_mean or 0.0 for i in scored],
        [cur[i].score_mean or 0.0 for i in scored],
    )
    return [
        paired_endpoint("judged_pass_rate", scope, *rates, mcnemar=single, **opts),
        paired_endpoint("avg_score", scope, *means, **opts),
    ]


def _noise_spread(noise: Mapping[str, Any] | None, sid: str) -> float | None:
    if noise is None:
        return None
    entry = (noise.get("scenarios") or {}).get(sid) or {}
    spread = entry.get("pass_rate_spread")
    return None if spread is None else float(spread)


def _bucket_paired(
    ids: Sequence[str],
    base: dict[str, ScenarioTally],
    cur: dict[str, ScenarioTally],
    result: Comparison,
    noise: Mapping[str, Any] | None,
    tau: float,
) -> list[ScenarioRow]:
    raw = [fisher_p(base[i], cur[i]) for i in ids]
    holm = adjust_pvalues(raw) if raw else []
    overall = result.overall[0]
    by_cat = {ep.scope: ep for ep in result.categories if ep.metric == "judged_pass_rate"}
    rows = []
    for sid, p, p_adj in zip(ids, raw, holm, strict=True):
        b, c = base[sid], cur[sid]
        cat = by_cat.get(b.category)
        drop = overall.regression or bool(cat and cat.regression)
        rise = overall.improvement or bool(cat and cat.improvement)
        ev = Evidence(p_adj, drop, rise, _noise_spread(noise, sid), tau)
        bucket, reason = bucket_for(b, c, ev)
        row = ScenarioRow(
            sid,
            b.category,
            bucket,
            reason,
            side_summary(b, tau),
            side_summary(c, tau),
            p_value=p,
            p_holm=p_adj,
        )
        row.delta_rate = (c.rate or 0.0) - (b.rate or 0.0)
        if b.score_mean is not None and c.score_mean is not None:
            row.delta_score = c.score_mean - b.score_mean
        rows.append(row)
    return rows


def _noise_warnings(noise: Mapping[str, Any], base: Scorecard) -> list[str]:
    """The noise floor is only meaningful for the baseline's own configuration."""
    cfg = noise.get("config") or {}
    diffs = instrument_differences(base.config, cfg) + agent_differences(base.config, cfg)
    return [f"the noise floor was measured on another configuration: {d}" for d in diffs]


def _unmeasured(side: str, sid: str, t: ScenarioTally) -> str:
    statuses = sorted({s for s in t.statuses if s in UNMEASURED_STATUSES})
    shown = ", ".join(statuses)
    return f"{sid}: {t.unmeasured} of {t.runs} {side} iteration(s) unmeasured ({shown})"


def _completeness(
    base: dict[str, ScenarioTally], cur: dict[str, ScenarioTally], result: Comparison
) -> None:
    """Baseline scenarios the current run is missing, and units either run left unmeasured."""
    for sid, b in base.items():
        c = cur.get(sid)
        if b.unmeasured:
            result.incomplete.append(_unmeasured("baseline", sid, b))
        if c is None:
            result.incomplete.append(f"{sid}: missing from the current run")
        elif c.unmeasured:
            result.incomplete.append(_unmeasured("current", sid, c))
    for sid, c in cur.items():
        if sid not in base and c.unmeasured:
            result.incomplete.append(_unmeasured("current", sid, c))


def _gate(result: Comparison, require_complete: bool) -> None:
    reasons = []
    rate = result.overall[0]
    if rate.regression:
        reasons.append(
            f"overall judged pass rate fell by {-(rate.delta or 0):.3f} ({rate.test}, "
            f"p = {rate.p_value:.3g})"
        )
    for ep in result.categories:
        if ep.gating and ep.regression:
            reasons.append(
                f"category {ep.scope}: judged pass rate fell by {-(ep.delta or 0):.3f} "
                f"(Holm p = {ep.p_holm:.3g})"
            )
    regressed = result.bucket("regressed")
    if regressed:
        reasons.append(f"{len(regressed)} scenario(s) regressed: {', '.join(regressed)}")
    if require_complete and result.incomplete:
        reasons.append(
            f"--require-complete: {len(result.incomplete)} incomplete: "
            + "; ".join(result.incomplete[:5])
            + (" ..." if len(result.incomplete) > 5 else "")
        )
    elif result.incomplete:
        result.warnings.append(
            f"{len(result.incomplete)} scenario(s) incomplete in one run or the other "
            "(use --require-complete to fail on this)"
        )
    result.reasons = reasons
    result.exit_code = EXIT_REGRESSION if reasons else EXIT_OK
    result.verdict = "regression" if reasons else "no regression"


def compare(
    baseline: Scorecard | LoadedRun,
    current: Scorecard | LoadedRun,
    *,
    require_complete: bool = False,
    same_agent: bool = False,
    allow_model_change: bool = False,
    noise: Mapping[str, Any] | None = None,
    tau: float = 0.2,
    resamples: int = 10000,
    seed: int = 0,
) -> Comparison:
    """Compare two runs; see the module docstring for every rule."""
    b_run, c_run = _as_run(baseline, "baseline"), _as_run(current, "current")
    b_cfg, c_cfg = b_run.card.config, c_run.card.config
    result = Comparison(EXIT_OK, "no regression", "same agent", describe(b_run), describe(c_run))
    result.instrument_differences = instrument_differences(b_cfg, c_cfg)
    result.agent_differences = agent_differences(b_cfg, c_cfg)
    if corpus_localised(b_cfg, c_cfg):
        # Each scenario's facts and document bytes are known: a scenario whose ground truth
        # changed is left out (bucket `changed`), the others still measure the same thing.
        result.warnings.append(
            f"corpus differs ({b_cfg.get('corpus_digest')} -> {c_cfg.get('corpus_digest')}): "
            "scenarios whose ground truth changed are left out"
        )
    if result.agent_differences:
        result.kind = "A/B"
    refused = [f"the measuring instrument differs: {d}" for d in result.instrument_differences]
    model = model_difference(b_cfg, c_cfg)
    if model and not allow_model_change:
        refused.append(f"{model}: every delta would partly be the model swap "
                       "(--allow-model-change to compare anyway)")  # fmt: skip
    elif model:
        result.warnings.append(f"{model} (--allow-model-change)")
    if same_agent:
        refused += [f"the agent differs (--same-agent): {d}" for d in result.agent_differences]
    refused += judge_gate_misses(b_run.card, "baseline") + judge_gate_misses(c_run.card, "current")
    sides = (("baseline", b_run), ("current", c_run))
    uncalibrated = [name for name, run in sides if run.card.calibration is None]
    if uncalibrated and b_cfg.get("judge", {}).get("kind") != "code":
        result.warnings.append(
            f"no in-run calibration for the {' and '.join(uncalibrated)} run's judge "
            "(set judge.controls_per_run: 20-30 to check a model judge in every run)"
        )
    if refused:
        result.exit_code, result.verdict, result.reasons = (
            EXIT_NOT_COMPARABLE,
            "not comparable",
            refused,
        )
        return result
    base, cur = tally(b_run.card), tally(c_run.card)
    paired, other_rows = _split(base, cur, tau)
    opts = {"resamples": resamples, "seed": seed}
    result.overall = _endpoints(paired, base, cur, "overall", opts)
    result.method = result.overall[0].test
    for cat in sorted({base[i].category for i in paired}):
        ids = [i for i in paired if base[i].category == cat]
        result.categories += _endpoints(ids, base, cur, cat, opts)
    for metric in ("judged_pass_rate", "avg_score"):
        _holm([ep for ep in result.categories if ep.metric == metric and ep.n])
    rows = other_rows + _bucket_paired(paired, base, cur, result, noise, tau)
    order = {sid: n for n, sid in enumerate(dict.fromkeys([*base, *cur]))}
    result.scenarios = sorted(rows, key=lambda r: order[r.id])
    if noise is not None:
        result.noise = {k: noise.get(k) for k in ("runs", "iterations", "run_metrics")}
        result.noise["scenarios_flipping"] = noise.get("scenarios_flipping")
        result.warnings += _noise_warnings(noise, b_run.card)
    _completeness(base, cur, result)
    _gate(result, require_complete)
    return result
