"""Tests for agenteval.stats: reference values, edge cases, properties and a gate simulation."""

from __future__ import annotations

import itertools
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from agenteval import stats
from agenteval.power import mde, required_n
from agenteval.stats import (
    adjust_pvalues,
    classify_stability,
    clustered_se,
    exact_interval,
    mcnemar_exact,
    mean_ci,
    mean_pass_at_k,
    mean_pass_hat_k,
    paired_permutation_test,
    paired_t,
    pass_at_k,
    pass_hat_k,
    variance_components,
    wilson_interval,
)

TOL = 1e-6


def test_wilson_and_exact_reference_values() -> None:
    assert wilson_interval(17, 20) == pytest.approx((0.639581, 0.947631), abs=TOL)
    assert exact_interval(17, 20) == pytest.approx((0.621073, 0.967929), abs=TOL)


def test_intervals_with_no_trials_are_the_unit_interval() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert exact_interval(0, 0) == (0.0, 1.0)


def test_intervals_pin_the_ends_for_all_or_nothing() -> None:
    assert wilson_interval(0, 7)[0] == 0.0
    assert wilson_interval(7, 7)[1] == 1.0
    assert exact_interval(0, 7)[0] == 0.0
    assert exact_interval(7, 7)[1] == 1.0
    # Clopper-Pearson for k = 0 has the closed form 1 - (alpha/2)^(1/n).
    assert exact_interval(0, 7)[1] == pytest.approx(1 - 0.025 ** (1 / 7), abs=1e-12)


@pytest.mark.parametrize(
    ("k", "n", "conf", "match"),
    [(5, 3, 0.95, "k"), (-1, 3, 0.95, "k"), (1, -2, 0.95, "n"), (1, 3, 1.0, "conf")],
)
def test_interval_validation(k: int, n: int, conf: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        wilson_interval(k, n, conf)
    with pytest.raises(ValueError, match=match):
        exact_interval(k, n, conf)


def test_counts_must_be_integers() -> None:
    with pytest.raises(ValueError, match="integer"):
        wilson_interval(2.0, 4)  # type: ignore[arg-type]
    assert wilson_interval(np.int64(2), np.int64(4)) == wilson_interval(2, 4)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=2000),
    frac=st.floats(min_value=0.0, max_value=1.0),
    conf=st.floats(min_value=0.5, max_value=0.9999),
)
def test_interval_properties(n: int, frac: float, conf: float) -> None:
    k = round(frac * n)
    for low, high in (wilson_interval(k, n, conf), exact_interval(k, n, conf)):
        assert not (math.isnan(low) or math.isnan(high))
        assert 0.0 <= low <= high <= 1.0
        if n > 0:
            assert low <= k / n <= high


@pytest.mark.parametrize(
    ("k", "n", "label"),
    [
        (3, 3, "uncertain"),  # Wilson 90% lower bound 0.526 < 0.8
        (0, 3, "uncertain"),  # upper bound 0.474 > 0.2
        (2, 4, "uncertain"),  # (0.182, 0.818) crosses both band edges
        (10, 10, "uncertain"),  # lower bound 0.787, just short of 0.8
        (11, 11, "stable_pass"),  # lower bound 0.803: first all-pass count that qualifies
        (0, 11, "stable_fail"),
        (5, 10, "flaky"),  # (0.269, 0.731) lies inside (0.2, 0.8)
        (9, 10, "uncertain"),
        (0, 0, "uncertain"),
        (50, 50, "stable_pass"),
        (25, 50, "flaky"),
    ],
)
def test_classify_stability_edges(k: int, n: int, label: str) -> None:
    assert classify_stability(k, n, tau=0.2, conf=0.90) == label


def test_classify_stability_rule_matches_wilson_bounds() -> None:
    low, high = wilson_interval(10, 10, 0.90)
    assert low < 0.8 <= wilson_interval(11, 11, 0.90)[0]
    assert high == 1.0
    with pytest.raises(ValueError, match="tau"):
        classify_stability(1, 2, tau=0.5)


SCENARIO_PASSES = [4, 3, 0, 2, 3]  # 5 scenarios x 4 repeats


def test_pass_metrics_reference_values() -> None:
    counts = [(4, c) for c in SCENARIO_PASSES]
    assert sum(SCENARIO_PASSES) / 20 == pytest.approx(0.6)
    assert mean_pass_at_k(counts, 1) == pytest.approx(0.6, abs=TOL)
    assert mean_pass_at_k(counts, 2) == pytest.approx(0.766667, abs=TOL)
    assert mean_pass_hat_k(counts, 2) == pytest.approx(0.433333, abs=TOL)
    assert mean_pass_at_k(counts, 4) == pytest.approx(0.8, abs=TOL)
    assert mean_pass_hat_k(counts, 4) == pytest.approx(0.2, abs=TOL)
    assert pass_at_k(10, 3, 5) == pytest.approx(0.916667, abs=TOL)


def test_pass_metrics_validation() -> None:
    with pytest.raises(ValueError, match="k must satisfy"):
        pass_at_k(4, 2, 5)
    with pytest.raises(ValueError, match="k must satisfy"):
        pass_hat_k(4, 2, 0)
    with pytest.raises(ValueError, match="<= n"):
        pass_at_k(4, 5, 1)
    with pytest.raises(ValueError, match="at least one"):
        mean_pass_at_k([], 1)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(min_value=1, max_value=60))
def test_pass_metrics_match_binomial_ratios(data: st.DataObject, n: int) -> None:
    c = data.draw(st.integers(min_value=0, max_value=n))
    k = data.draw(st.integers(min_value=1, max_value=n))
    at_k, hat_k = pass_at_k(n, c, k), pass_hat_k(n, c, k)
    assert at_k == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-12)
    assert hat_k == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-12)
    # pass^k <= pass@1 = c/n <= pass@k.
    assert 0.0 <= hat_k <= c / n + 1e-12
    assert c / n <= at_k + 1e-12 <= 1.0 + 1e-12


def test_pass_at_k_is_stable_for_large_n() -> None:
    # C(2000, 1000) overflows a float; the product form must not.
    value = pass_at_k(2000, 10, 1000)
    assert 0.99 < value <= 1.0
    assert pass_hat_k(2000, 1990, 1000) > 0.0


def test_mcnemar_reference_and_edges() -> None:
    assert mcnemar_exact(2, 10) == pytest.approx(0.038574, abs=TOL)
    assert mcnemar_exact(10, 2) == mcnemar_exact(2, 10)
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(5, 5) == 1.0  # capped at 1
    assert mcnemar_exact(0, 1) == 1.0
    with pytest.raises(ValueError, match="b must be >= 0"):
        mcnemar_exact(-1, 3)


@given(b=st.integers(0, 400), c=st.integers(0, 400))
def test_mcnemar_is_a_probability(b: int, c: int) -> None:
    p = mcnemar_exact(b, c)
    assert 0.0 < p <= 1.0


RAW_P = [0.001, 0.008, 0.039, 0.041, 0.042, 0.060, 0.074, 0.205]


def test_holm_reference() -> None:
    adj = adjust_pvalues(RAW_P, "holm")
    assert adj == pytest.approx([0.008, 0.056, 0.234, 0.234, 0.234, 0.234, 0.234, 0.234], abs=TOL)
    assert sum(p <= 0.05 for p in adj) == 1


def test_bh_reference() -> None:
    adj = adjust_pvalues(RAW_P, "bh")
    expected = [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.084571, 0.205]
    assert adj == pytest.approx(expected, abs=TOL)
    assert sum(p <= 0.05 for p in adj) == 2


@pytest.mark.parametrize("method", ["holm", "bh"])
def test_adjustment_keeps_input_order(method: str) -> None:
    order = [5, 0, 7, 2, 6, 1, 4, 3]
    shuffled = [RAW_P[i] for i in order]
    expected = adjust_pvalues(RAW_P, method)  # type: ignore[arg-type]
    assert adjust_pvalues(shuffled, method) == [expected[i] for i in order]  # type: ignore[arg-type]


def test_adjustment_edges() -> None:
    assert adjust_pvalues([]) == []
    assert adjust_pvalues([0.5, 0.9], "holm") == [1.0, 1.0]
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        adjust_pvalues([0.1, float("nan")])
    with pytest.raises(ValueError, match="method"):
        adjust_pvalues([0.1], "bonferroni")  # type: ignore[arg-type]


@given(
    ps=st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=40),
    method=st.sampled_from(["holm", "bh"]),
)
def test_adjustment_properties(ps: list[float], method: str) -> None:
    adj = adjust_pvalues(ps, method)  # type: ignore[arg-type]
    assert len(adj) == len(ps)
    for raw, a in zip(ps, adj, strict=True):
        assert raw <= a <= 1.0
    # A smaller raw p never receives a larger adjusted p.
    pairs = sorted(zip(ps, adj, strict=True))
    assert all(a1 <= a2 for (_, a1), (_, a2) in itertools.pairwise(pairs))


def test_mde_reference_and_round_trip() -> None:
    assert mde(1.5, 50) == pytest.approx(0.594306, abs=TOL)
    for n in (1, 7, 50, 333):
        assert required_n(mde(0.8, n), 0.8) == n
    n = required_n(0.1, 0.45)
    assert mde(0.45, n) <= 0.1 < mde(0.45, n - 1)


def test_power_validation() -> None:
    assert required_n(0.2, 0.0) == 1
    assert required_n(-0.2, 0.5) == required_n(0.2, 0.5)
    with pytest.raises(ValueError, match="delta"):
        required_n(0.0, 1.0)
    with pytest.raises(ValueError, match="sd_diff"):
        mde(-1.0, 10)
    with pytest.raises(ValueError, match="power"):
        mde(1.0, 10, power=1.0)
    with pytest.raises(ValueError, match="n must be >= 1"):
        mde(1.0, 0)


def test_clustered_se_hand_example() -> None:
    values = [1, 0, 1, 1, 0, 0]
    clusters = ["a", "a", "b", "b", "c", "c"]
    # Mean 0.5; cluster residual sums are 0, +1, -1, so sum e_g^2 = 2.
    uncorrected = math.sqrt(2) / 6
    expected = uncorrected * math.sqrt(3 / 2)  # small-sample factor C/(C-1), C = 3
    assert clustered_se(values, clusters) == pytest.approx(expected, abs=1e-12)
    assert expected == pytest.approx(0.288675, abs=TOL)
    # Equal cluster sizes: same as the ordinary SE of the cluster means (0.5, 1, 0).
    assert expected == pytest.approx(np.std([0.5, 1.0, 0.0], ddof=1) / math.sqrt(3), abs=1e-12)
    # Ignoring the clustering would understate the uncertainty here.
    assert np.std(values, ddof=1) / math.sqrt(6) < expected


def test_clustered_se_with_singletons_is_ordinary_se() -> None:
    values = np.random.default_rng(3).normal(size=25)
    ordinary = values.std(ddof=1) / math.sqrt(values.size)
    assert clustered_se(values, range(25)) == pytest.approx(ordinary, rel=1e-12)


def test_clustered_se_rejects_unidentified_cases() -> None:
    with pytest.raises(ValueError, match="at least 2 clusters"):
        clustered_se([1.0, 0.0, 1.0], ["a", "a", "a"])
    with pytest.raises(ValueError, match="same length"):
        clustered_se([1.0, 0.0], ["a"])
    with pytest.raises(ValueError, match="NaN"):
        clustered_se([1.0, float("nan")], ["a", "b"])


def test_mean_ci_t_unclustered_matches_scipy() -> None:
    values = np.random.default_rng(1).normal(2.0, 1.0, size=30)
    ci = mean_ci(values)
    low, high = sps.t.interval(0.95, 29, loc=values.mean(), scale=sps.sem(values))
    assert (ci.low, ci.high) == pytest.approx((low, high), abs=1e-10)
    assert ci.half_width == pytest.approx((high - low) / 2, abs=1e-10)
    assert (ci.n, ci.n_clusters, ci.method) == (30, None, "t")


def test_mean_ci_t_clustered_uses_c_minus_one_df() -> None:
    ci = mean_ci([1, 0, 1, 1, 0, 0], ["a", "a", "b", "b", "c", "c"])
    se = math.sqrt(2) / 6 * math.sqrt(1.5)
    assert ci.se == pytest.approx(se, abs=1e-12)
    assert ci.half_width == pytest.approx(sps.t.ppf(0.975, 2) * se, abs=1e-12)
    assert (ci.mean, ci.n, ci.n_clusters) == (0.5, 6, 3)


def test_mean_ci_bootstrap_is_deterministic_given_seed() -> None:
    values = np.random.default_rng(2).binomial(1, 0.6, size=60).astype(float)
    clusters = np.repeat(np.arange(20), 3)
    first = mean_ci(values, clusters, method="bootstrap", seed=11)
    assert mean_ci(values, clusters, method="bootstrap", seed=11) == first
    assert mean_ci(values, clusters, method="bootstrap", seed=12) != first
    assert first.low <= first.mean <= first.high
    assert (first.n, first.n_clusters, first.method) == (60, 20, "bootstrap")


def test_mean_ci_bootstrap_resamples_whole_clusters() -> None:
    # Each cluster is constant, so any cluster resample has mean 0, 0.5 or 1; resampling
    # single observations would also produce 0.25 and 0.75.
    ci = mean_ci([1, 1, 0, 0], ["a", "a", "b", "b"], method="bootstrap", resamples=500)
    assert ci.low in (0.0, 0.5, 1.0)
    assert ci.high in (0.0, 0.5, 1.0)


def test_mean_ci_bootstrap_agrees_with_t_on_large_sample() -> None:
    values = np.random.default_rng(4).normal(size=400)
    t_ci = mean_ci(values)
    boot = mean_ci(values, method="bootstrap", resamples=4000)
    assert boot.se == pytest.approx(t_ci.se, rel=0.1)
    assert boot.low == pytest.approx(t_ci.low, abs=0.03)
    assert boot.high == pytest.approx(t_ci.high, abs=0.03)


def test_mean_ci_validation() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        mean_ci([1.0])
    with pytest.raises(ValueError, match="at least 2"):
        mean_ci([1.0, 2.0], ["a", "a"], method="bootstrap")
    with pytest.raises(ValueError, match="method"):
        mean_ci([1.0, 2.0], method="jackknife")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="one-dimensional"):
        mean_ci([[1.0, 2.0]])


@settings(max_examples=100, deadline=None)
@given(
    values=st.lists(st.floats(-1e6, 1e6), min_size=2, max_size=30),
    method=st.sampled_from(["t", "bootstrap"]),
)
def test_mean_ci_never_nan(values: list[float], method: str) -> None:
    ci = mean_ci(values, method=method, resamples=50)  # type: ignore[arg-type]
    fields = (ci.mean, ci.se, ci.low, ci.high, ci.half_width)
    assert all(math.isfinite(f) for f in fields)
    assert ci.low <= ci.high


def test_variance_components_hand_example() -> None:
    between, within = variance_components([1, 1, 1, 0, 0, 0], ["a"] * 3 + ["b"] * 3)
    # MSB = 3 * 2 * 0.25 / 1 = 1.5, MSW = 0, n0 = 3.
    assert (between, within) == pytest.approx((0.5, 0.0))


def test_variance_components_clamps_between_at_zero() -> None:
    between, within = variance_components([0, 1, 1, 0], ["a", "a", "b", "b"])
    assert between == 0.0
    assert within == pytest.approx(0.5)


def test_variance_components_recovers_simulated_truth() -> None:
    rng = np.random.default_rng(5)
    sizes = rng.integers(2, 8, size=400)  # unbalanced on purpose
    effects = rng.normal(0.0, 0.3, size=400)
    clusters = np.repeat(np.arange(400), sizes)
    values = effects[clusters] + rng.normal(0.0, 0.5, size=clusters.size)
    between, within = variance_components(values, clusters)
    assert between == pytest.approx(0.09, abs=0.02)
    assert within == pytest.approx(0.25, abs=0.02)


def test_variance_components_validation() -> None:
    with pytest.raises(ValueError, match="at least 2 clusters"):
        variance_components([1.0, 2.0], ["a", "a"])
    with pytest.raises(ValueError, match="2\\+ observations"):
        variance_components([1.0, 2.0], ["a", "b"])


@pytest.mark.parametrize(
    ("diffs", "p"),
    [
        ([1, 1, 1], 0.25),  # only +++ and --- reach |T| = 3: 2 of 8
        ([1, 1, 1, 0, 0], 0.25),  # zero differences change nothing
        ([1, 2, 3], 0.25),  # |T| = 6 only for +++ and ---
        ([1, -1, 2], 0.75),  # |T| >= 2 in 6 of 8 patterns
        ([0.1, 0.2, 0.3], 0.25),  # rounding in 0.1 + 0.2 must not lose the tie
    ],
)
def test_permutation_exact_hand_cases(diffs: list[float], p: float) -> None:
    base = np.zeros(len(diffs))
    result = paired_permutation_test(base, base + np.asarray(diffs))
    assert result.p_value == pytest.approx(p, abs=1e-12)
    assert result.method == "exact"
    assert result.n == len(diffs)
    assert result.mean_diff == pytest.approx(float(np.mean(diffs)))


def test_permutation_all_zero_differences() -> None:
    result = paired_permutation_test([1, 0, 1], [1, 0, 1])
    assert (result.p_value, result.mean_diff, result.method) == (1.0, 0.0, "exact")


def test_permutation_switches_to_monte_carlo_above_20() -> None:
    rng = np.random.default_rng(6)
    d20 = rng.normal(0.3, 1.0, size=20)
    assert paired_permutation_test(np.zeros(20), d20).method == "exact"
    assert paired_permutation_test(np.zeros(21), rng.normal(size=21)).method == "monte_carlo"


def test_monte_carlo_p_is_close_to_exact() -> None:
    d = np.random.default_rng(2).normal(0.4, 1.0, size=21)  # exact p is about 0.06
    exact = stats._exact_sign_flip_p(d)
    resamples = 20000
    mc = paired_permutation_test(np.zeros(21), d, n_resamples=resamples, seed=3)
    assert mc.method == "monte_carlo"
    assert 0.01 < exact < 0.5  # a non-trivial p, so the comparison means something
    assert mc.p_value == pytest.approx(exact, abs=4 * math.sqrt(exact / resamples) + 1e-3)
    again = paired_permutation_test(np.zeros(21), d, n_resamples=resamples, seed=3)
    assert again == mc


def test_monte_carlo_p_is_never_zero() -> None:
    result = paired_permutation_test(np.zeros(30), np.ones(30), n_resamples=999)
    assert result.p_value == pytest.approx(1 / 1000)


def test_permutation_validation() -> None:
    with pytest.raises(ValueError, match="same length"):
        paired_permutation_test([1, 2], [1])
    with pytest.raises(ValueError, match="empty"):
        paired_permutation_test([], [])
    with pytest.raises(ValueError, match="n_resamples"):
        paired_permutation_test([1, 2], [2, 3], n_resamples=0)


@settings(max_examples=100, deadline=None)
@given(
    pairs=st.lists(st.tuples(st.floats(-100, 100), st.floats(-100, 100)), min_size=1, max_size=30),
)
def test_paired_tests_never_nan(pairs: list[tuple[float, float]]) -> None:
    base, cand = (list(x) for x in zip(*pairs, strict=True))
    perm = paired_permutation_test(base, cand, n_resamples=200)
    assert 0.0 < perm.p_value <= 1.0
    assert math.isfinite(perm.mean_diff)
    if len(pairs) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy precision notes are fine
            t = paired_t(base, cand)
        assert 0.0 <= t.p_value <= 1.0


def test_paired_t_matches_scipy() -> None:
    rng = np.random.default_rng(8)
    base = rng.normal(size=15)
    cand = base + rng.normal(0.4, 1.0, size=15)
    result = paired_t(base, cand)
    assert result.p_value == pytest.approx(sps.ttest_rel(cand, base).pvalue, abs=1e-12)
    assert (result.n, result.method) == (15, "t")
    assert result.mean_diff == pytest.approx(float(np.mean(cand - base)))


def test_paired_t_degenerate_differences() -> None:
    assert paired_t([1, 2, 3], [1, 2, 3]).p_value == 1.0
    assert paired_t([1, 2, 3], [2, 3, 4]).p_value == 0.0
    # Differences equal only up to rounding (0.3 vs 0.30000000000000004) count as identical.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert paired_t([0.1, 0.2, 0.7], [0.4, 0.5, 1.0]).p_value == 0.0
    with pytest.raises(ValueError, match="at least 2 pairs"):
        paired_t([1.0], [2.0])


# ----------------------------------------------------------------------------- gate simulation
#
# Gate under test: per-scenario pass rates (3 repeats per side, 40 scenarios), paired
# permutation test, "regression" = two-sided p < 0.05 AND mean difference < 0. Because the
# sign-flip null is symmetric this is a one-sided test at level 0.025, so the expected false
# regression rate is about 2.5% (lower still, as 3-repeat pass rates make the test discrete).

N_SCENARIOS, REPEATS, TRIALS, RESAMPLES = 40, 3, 200, 2000
SCENARIO_P = np.random.default_rng(2024).uniform(0.3, 0.95, size=N_SCENARIOS)


def _regression_rate(drop: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    flagged = 0
    for trial in range(TRIALS):
        base = rng.binomial(REPEATS, SCENARIO_P) / REPEATS
        cand = rng.binomial(REPEATS, SCENARIO_P - drop) / REPEATS
        result = paired_permutation_test(base, cand, n_resamples=RESAMPLES, seed=trial)
        flagged += result.p_value < 0.05 and result.mean_diff < 0
    return flagged / TRIALS


def test_gate_false_regression_rate_is_at_most_5_percent() -> None:
    rate = _regression_rate(drop=0.0, seed=100)
    assert rate <= 0.05, f"false-regression rate {rate:.3f} over {TRIALS} unchanged runs"


def test_gate_detects_a_drop_of_0_2_at_least_80_percent() -> None:
    rate = _regression_rate(drop=0.2, seed=200)
    assert rate >= 0.80, f"power {rate:.3f} over {TRIALS} runs with a 0.2 drop"
