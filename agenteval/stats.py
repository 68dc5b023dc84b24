"""Pure statistics core for agenteval: intervals, pass@k, paired tests, power.

Random functions take an explicit seed. Nothing returns NaN for valid input: bad input, and
statistics that are not identified (e.g. a clustered SE from one cluster), raise ValueError.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from types import ModuleType
from typing import Literal

import numpy as np
import numpy.typing as npt

Stability = Literal["stable_pass", "flaky", "stable_fail", "uncertain"]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.intp]

# Beyond this many non-zero pairs, enumerating 2**m sign flips is too big: use Monte Carlo.
_EXACT_MAX_PAIRS = 20
# Max elements per random-draw matrix, so resampling memory stays bounded for any resamples.
_CHUNK_ELEMENTS = 2_000_000
_NORMAL = NormalDist()


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (numpy's linear rule) of `values`; None for none."""
    if not values:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def _special() -> ModuleType:
    """scipy.special on first use: what scipy.stats' ppf/cdf call, without its 0.7 s import."""
    import scipy.special

    module: ModuleType = scipy.special
    return module


@dataclass(frozen=True)
class MeanCI:
    """Mean, SE and interval; ``n_clusters`` is None if unclustered, half_width = (high-low)/2."""

    mean: float
    se: float
    low: float
    high: float
    half_width: float
    n: int
    n_clusters: int | None
    method: Literal["t", "bootstrap"]


@dataclass(frozen=True)
class PairedTest:
    """Result of a paired two-sided test of the mean difference ``cand - base``."""

    mean_diff: float
    p_value: float
    n: int
    method: Literal["exact", "monte_carlo", "t"]


def _as_count(x: int, name: str) -> int:
    # operator.index accepts numpy integers but rejects floats such as 3.0, which would
    # otherwise hide a caller passing a rate where a count is expected.
    try:
        value = operator.index(x)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {x!r}") from None
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def _check_k_n(k: int, n: int) -> tuple[int, int]:
    k, n = _as_count(k, "k"), _as_count(n, "n")
    if k > n:
        raise ValueError(f"k (successes) must be <= n (trials), got k={k}, n={n}")
    return k, n


def _check_open_unit(x: float, name: str) -> float:
    if not (isinstance(x, int | float) and 0.0 < float(x) < 1.0):
        raise ValueError(f"{name} must be strictly between 0 and 1, got {x!r}")
    return float(x)


def _as_values(values: npt.ArrayLike, name: str = "values") -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return arr


def _cluster_codes(clusters: Iterable[Hashable], n: int) -> tuple[IntArray, int]:
    """Map arbitrary hashable cluster labels to 0..C-1 in order of first appearance."""
    mapping: dict[Hashable, int] = {}
    codes = [mapping.setdefault(c, len(mapping)) for c in clusters]
    if len(codes) != n:
        raise ValueError(f"values and clusters must have the same length, got {n} and {len(codes)}")
    return np.asarray(codes, dtype=np.intp), len(mapping)


def wilson_interval(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    With z = Phi^{-1}(1 - (1-conf)/2): centre = (k + z^2/2) / (n + z^2) and
    half-width = z / (n + z^2) * sqrt(k (n-k) / n + z^2 / 4).
    Source: E. B. Wilson (1927), JASA 22(158); Agresti & Coull (1998), Am. Stat. 52(2).
    n = 0 carries no information, so the whole unit interval (0.0, 1.0) is returned.
    """
    k, n = _check_k_n(k, n)
    if n == 0:
        _check_open_unit(conf, "conf")
        return 0.0, 1.0
    return wilson_bounds(k / n, float(n), conf)


def wilson_bounds(p: float, n: float, conf: float = 0.95) -> tuple[float, float]:
    """Wilson bounds of proportion ``p`` over ``n`` (maybe effective, non-integer) trials."""
    z = _NORMAL.inv_cdf(0.5 + _check_open_unit(conf, "conf") / 2.0)
    z2 = z * z  # centre and half-width as in wilson_interval, with k = p * n
    centre = (p * n + z2 / 2.0) / (n + z2)
    half = z / (n + z2) * math.sqrt(p * (1.0 - p) * n + z2 / 4.0)
    # Exactly 0 (p=0) and 1 (p=1) mathematically: pinned, so rounding never leaves [0, 1].
    low = 0.0 if p == 0 else max(0.0, min(centre - half, p))
    high = 1.0 if p == 1 else min(1.0, max(centre + half, p))
    return low, high


def exact_interval(k: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson "exact" interval for a binomial proportion.

    With alpha = 1 - conf: low = Beta^{-1}(alpha/2; k, n-k+1) (0 when k = 0) and
    high = Beta^{-1}(1 - alpha/2; k+1, n-k) (1 when k = n).
    Source: C. J. Clopper & E. S. Pearson (1934), Biometrika 26(4). n = 0 gives (0.0, 1.0).
    """
    k, n = _check_k_n(k, n)
    alpha = 1.0 - _check_open_unit(conf, "conf")
    if n == 0:
        return 0.0, 1.0
    low = 0.0 if k == 0 else float(_special().betaincinv(k, n - k + 1, alpha / 2.0))
    high = 1.0 if k == n else float(_special().betaincinv(k + 1, n - k, 1.0 - alpha / 2.0))
    return low, high


def classify_stability(k: int, n: int, tau: float = 0.2, conf: float = 0.90) -> Stability:
    """Label a scenario from k passes in n runs using the Wilson interval (L, U) at ``conf``.

    Bands: fail [0, tau], flaky (tau, 1 - tau), pass [1 - tau, 1]. A label needs the whole
    interval inside one band, i.e. the data must rule out the other two bands:
    ``stable_pass`` if L >= 1 - tau; ``stable_fail`` if U <= tau; ``flaky`` if L > tau and
    U < 1 - tau; otherwise (and always for n = 0) ``uncertain``. With the defaults an all-pass
    record needs n >= 11 (n / (n + z^2) >= 0.8, z = 1.645): 10/10 stays ``uncertain`` because
    a true pass rate of 0.78 is still compatible with it. Interval: Wilson (1927).
    """
    if not (isinstance(tau, int | float) and 0.0 < tau < 0.5):
        raise ValueError(f"tau must be strictly between 0 and 0.5, got {tau!r}")
    low, high = wilson_interval(k, n, conf)
    if n == 0:
        return "uncertain"
    if low >= 1.0 - tau:
        return "stable_pass"
    if high <= tau:
        return "stable_fail"
    if low > tau and high < 1.0 - tau:
        return "flaky"
    return "uncertain"


def _check_pass_k(n: int, c: int, k: int) -> tuple[int, int, int]:
    c, n = _check_k_n(c, n)
    k = _as_count(k, "k")
    if not 1 <= k <= n:
        raise ValueError(f"k must satisfy 1 <= k <= n, got k={k}, n={n}")
    return n, c, k


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c passed.

    pass@k = 1 - C(n-c, k) / C(n, k) (at least one of k draws without replacement passes),
    evaluated as 1 - prod_{i=n-c+1}^{n} (1 - k/i) to avoid huge binomial coefficients.
    Source: M. Chen et al. (2021), arXiv:2107.03374, eq. 1.
    """
    n, c, k = _check_pass_k(n, c, k)
    if n - c < k:
        return 1.0  # every k-subset must contain a passing sample
    prod = 1.0
    for i in range(n - c + 1, n + 1):
        prod *= 1.0 - k / i
    return 1.0 - prod


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k = C(c, k) / C(n, k): probability that k draws without replacement all pass.

    Evaluated as prod_{i=0}^{k-1} (c - i) / (n - i). Source: S. Yao et al. (2024),
    "tau-bench", arXiv:2406.12045 (pass^k metric).
    """
    n, c, k = _check_pass_k(n, c, k)
    if c < k:
        return 0.0
    prod = 1.0
    for i in range(k):
        prod *= (c - i) / (n - i)
    return prod


def _task_mean(counts: Sequence[tuple[int, int]], metric: Callable[[int, int], float]) -> float:
    if len(counts) == 0:
        raise ValueError("counts must contain at least one (n, c) pair")
    return math.fsum(metric(n, c) for n, c in counts) / len(counts)


def mean_pass_at_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """Average of :func:`pass_at_k` over tasks given as ``(n, c)`` pairs (Chen et al. 2021)."""
    return _task_mean(counts, lambda n, c: pass_at_k(n, c, k))


def mean_pass_hat_k(counts: Sequence[tuple[int, int]], k: int) -> float:
    """Average of :func:`pass_hat_k` over tasks given as ``(n, c)`` pairs (Yao et al. 2024)."""
    return _task_mean(counts, lambda n, c: pass_hat_k(n, c, k))


def clustered_se(values: npt.ArrayLike, clusters: Iterable[Hashable]) -> float:
    """Cluster-robust standard error of the mean, clustered by e.g. scenario id.

    With N values, mean ybar, C clusters and e_g = sum_{i in g} (y_i - ybar):
    SE^2 = C / (C - 1) * sum_g e_g^2 / N^2. With one value per cluster this is the ordinary
    s / sqrt(N); with equal cluster sizes it is the ordinary SE of the C cluster means.
    Source: A. C. Cameron & D. L. Miller (2015), J. Human Resources 50(2); for evals,
    E. Miller (2024), "Adding Error Bars to Evals", arXiv:2411.00640.
    C < 2 raises ``ValueError``: one cluster leaves the between-cluster variation unidentified
    (the formula divides by zero), and returning 0 would claim precision the data lack.
    """
    y = _as_values(values)
    codes, n_clusters = _cluster_codes(clusters, y.size)
    if n_clusters < 2:
        raise ValueError(f"clustered_se needs at least 2 clusters, got {n_clusters}")
    resid_sums = np.bincount(codes, weights=y - y.mean(), minlength=n_clusters)
    var = n_clusters / (n_clusters - 1) * float(np.sum(resid_sums**2)) / y.size**2
    return math.sqrt(var)


def _cluster_totals(y: FloatArray, codes: IntArray, c: int) -> tuple[FloatArray, FloatArray]:
    """Per-cluster sums and sizes (sizes as floats, since they are only used in arithmetic)."""
    sums = np.bincount(codes, weights=y, minlength=c).astype(np.float64)
    sizes = np.bincount(codes, minlength=c).astype(np.float64)
    return sums, sizes


def _bootstrap_means(sums: FloatArray, sizes: FloatArray, resamples: int, seed: int) -> FloatArray:
    """Means of ``resamples`` bootstrap samples that draw whole units with replacement.

    A unit is a cluster (or a single observation when unclustered); each resampled mean is
    total of drawn sums / total of drawn sizes, which handles unequal cluster sizes.
    """
    rng = np.random.default_rng(seed)
    units = sums.size
    out = np.empty(resamples, dtype=np.float64)
    step = max(1, _CHUNK_ELEMENTS // units)
    for start in range(0, resamples, step):
        stop = min(resamples, start + step)
        idx = rng.integers(0, units, size=(stop - start, units))
        out[start:stop] = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    return out


def mean_ci(
    values: npt.ArrayLike,
    clusters: Iterable[Hashable] | None = None,
    conf: float = 0.95,
    method: Literal["t", "bootstrap"] = "t",
    resamples: int = 2000,
    seed: int = 0,
) -> MeanCI:
    """Mean with a confidence interval, optionally clustered by scenario.

    ``method="t"``: mean +/- t_{1-(1-conf)/2, df} * SE, with SE = :func:`clustered_se` and
    df = C - 1 when clusters are given (Cameron & Miller 2015, Sec. VI.C), else SE = s/sqrt(n)
    and df = n - 1 (Student 1908).
    ``method="bootstrap"``: percentile bootstrap (Efron & Tibshirani 1993, ch. 13) with
    ``numpy.random.default_rng(seed)``; with clusters, whole clusters are resampled (Davison &
    Hinkley 1997, Sec. 3.8) to keep within-scenario correlation. ``se`` = SD of boot means.
    At least two observations (two clusters when clustered) are required; fewer raise
    ``ValueError`` because no spread can be estimated.
    """
    y = _as_values(values)
    conf = _check_open_unit(conf, "conf")
    if method not in ("t", "bootstrap"):
        raise ValueError(f"method must be 't' or 'bootstrap', got {method!r}")
    # Unclustered data is handled as singleton clusters, which gives the ordinary estimators.
    codes, units = _cluster_codes(range(y.size) if clusters is None else clusters, y.size)
    n_clusters = None if clusters is None else units
    if units < 2:
        raise ValueError(f"mean_ci needs at least 2 values/clusters, got {units}")
    mean = float(y.mean())
    alpha = 1.0 - conf
    if method == "t":
        # With singleton clusters clustered_se equals s / sqrt(n), so one call covers both.
        se = clustered_se(y, codes)
        half = float(_special().stdtrit(units - 1, 1.0 - alpha / 2.0)) * se
        low, high = mean - half, mean + half
    else:
        if _as_count(resamples, "resamples") < 2:
            raise ValueError(f"resamples must be >= 2, got {resamples}")
        sums, sizes = _cluster_totals(y, codes, units)
        boot = _bootstrap_means(sums, sizes, resamples, seed)
        se = float(boot.std(ddof=1))
        low, high = (float(q) for q in np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0]))
        half = (high - low) / 2.0
    return MeanCI(mean, se, low, high, half, int(y.size), n_clusters, method)


def variance_components(values: npt.ArrayLike, clusters: Iterable[Hashable]) -> tuple[float, float]:
    """Between- and within-scenario variance by one-way random-effects ANOVA (method of moments).

    With C groups of sizes n_g (N in total), group means ybar_g and grand mean ybar:
        MSB = sum_g n_g (ybar_g - ybar)^2 / (C - 1)
        MSW = sum_g sum_i (y_gi - ybar_g)^2 / (N - C)
        n0  = (N - sum_g n_g^2 / N) / (C - 1)
        within = MSW,   between = max(0, (MSB - MSW) / n0)
    The between estimate can be negative by chance and is clamped to 0. Source: Searle,
    Casella & McCulloch (1992), "Variance Components", Sec. 3.5-3.6. Needs C >= 2 and N > C.
    """
    y = _as_values(values)
    codes, c = _cluster_codes(clusters, y.size)
    if c < 2:
        raise ValueError(f"variance_components needs at least 2 clusters, got {c}")
    if y.size <= c:
        raise ValueError("variance_components needs at least one cluster with 2+ observations")
    sums, sizes = _cluster_totals(y, codes, c)
    group_means = sums / sizes
    msb = float(np.sum(sizes * (group_means - y.mean()) ** 2)) / (c - 1)
    msw = float(np.sum((y - group_means[codes]) ** 2)) / (y.size - c)
    n0 = (y.size - float(np.sum(sizes**2)) / y.size) / (c - 1)
    return max(0.0, (msb - msw) / n0), msw


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar test on the discordant pair counts b and c.

    Under H0 the discordant pairs split 50/50, so with X ~ Binomial(b + c, 1/2):
    p = min(1, 2 * P(X <= min(b, c))); b + c = 0 gives p = 1. Source: Q. McNemar (1947),
    Psychometrika 12(2); exact form: Fagerland et al. (2013), BMC Med. Res. Methodol. 13:91.
    """
    b, c = _as_count(b, "b"), _as_count(c, "c")
    if b + c == 0:
        return 1.0
    return min(1.0, 2.0 * float(_special().bdtr(min(b, c), b + c, 0.5)))


def _paired(base: npt.ArrayLike, cand: npt.ArrayLike) -> tuple[FloatArray, FloatArray]:
    x, y = _as_values(base, "base"), _as_values(cand, "cand")
    if x.size != y.size:
        raise ValueError(f"base and cand must have the same length, got {x.size} and {y.size}")
    if x.size == 0:
        raise ValueError("base and cand must not be empty")
    return x, y


def _tolerance(d: FloatArray) -> float:
    # Sums of the same numbers in other orders differ by rounding; this slack keeps a resampled
    # statistic equal to the observed one from being counted as smaller.
    return 1e-9 * float(np.sum(np.abs(d)))


def _exact_sign_flip_p(d: FloatArray) -> float:
    """Two-sided p over all 2^m sign patterns of the differences d (m small)."""
    sums = np.zeros(1, dtype=np.float64)
    for value in d:
        sums = np.concatenate((sums + value, sums - value))
    observed = abs(float(d.sum()))
    return float(np.mean(np.abs(sums) >= observed - _tolerance(d)))


def _monte_carlo_sign_flip_p(d: FloatArray, n_resamples: int, seed: int) -> float:
    """Two-sided Monte Carlo sign-flip p with the (1 + hits) / (1 + R) correction."""
    rng = np.random.default_rng(seed)
    observed = abs(float(d.sum())) - _tolerance(d)
    hits = 0
    step = max(1, _CHUNK_ELEMENTS // d.size)
    for start in range(0, n_resamples, step):
        rows = min(step, n_resamples - start)
        signs = rng.integers(0, 2, size=(rows, d.size)) * 2.0 - 1.0
        hits += int(np.count_nonzero(np.abs(signs @ d) >= observed))
    return (1 + hits) / (1 + n_resamples)


def paired_permutation_test(
    base: npt.ArrayLike, cand: npt.ArrayLike, n_resamples: int = 10000, seed: int = 0
) -> PairedTest:
    """Two-sided paired permutation (sign-flip) test of the mean difference d = cand - base.

    Under H0 each difference is symmetric about 0, so its sign is exchangeable. The statistic
    is T = sum_i d_i; the p-value is P(|T*| >= |T_obs|) over sign flips T* = sum_i s_i d_i.
    Zero differences are dropped (they contribute nothing to T or T*). With m <= 20 non-zero
    differences all 2^m patterns are enumerated (method "exact"); above that ``n_resamples``
    seeded random patterns are used with p = (1 + hits) / (1 + n_resamples) (method
    "monte_carlo"), which keeps the test valid and p > 0. All differences zero gives p = 1.
    The null is symmetric, so the one-sided p in the observed direction is half the exact
    two-sided p. Sources: Pitman (1937), JRSS Suppl. 4(1); Fisher (1935), "The Design of
    Experiments", Sec. 21; Phipson & Smyth (2010), Stat. Appl. Genet. Mol. Biol. 9(1).
    """
    x, y = _paired(base, cand)
    d = y - x
    if _as_count(n_resamples, "n_resamples") < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    mean_diff = float(d.mean())
    nonzero = d[d != 0.0]
    if nonzero.size == 0:
        return PairedTest(mean_diff, 1.0, int(d.size), "exact")
    if nonzero.size <= _EXACT_MAX_PAIRS:
        return PairedTest(mean_diff, _exact_sign_flip_p(nonzero), int(d.size), "exact")
    p = _monte_carlo_sign_flip_p(nonzero, n_resamples, seed)
    return PairedTest(mean_diff, p, int(d.size), "monte_carlo")


def paired_t(base: npt.ArrayLike, cand: npt.ArrayLike) -> PairedTest:
    """Two-sided paired t-test of the mean difference d = cand - base.

    t = dbar / (s_d / sqrt(n)) with n - 1 degrees of freedom, as ``scipy.stats.ttest_rel``
    (Student 1908). Needs n >= 2. If s_d = 0 (all differences equal up to a relative 1e-12) t
    is undefined: p = 1.0 when that common difference is 0 (no evidence of change), else 0.0
    (the limit of p as s_d -> 0 with a fixed non-zero mean). Never NaN.
    """
    x, y = _paired(base, cand)
    d = y - x
    if d.size < 2:
        raise ValueError(f"paired_t needs at least 2 pairs, got {d.size}")
    mean_diff = float(d.mean())
    # Differences that agree up to rounding (e.g. 0.3 vs 0.30000000000000004) are treated as
    # identical; otherwise scipy would divide by a rounding-noise standard deviation.
    tol = 1e-12 * max(1.0, float(np.max(np.abs(d))))
    if float(np.ptp(d)) <= tol:
        return PairedTest(mean_diff, 1.0 if abs(mean_diff) <= tol else 0.0, int(d.size), "t")
    t = mean_diff / (float(d.std(ddof=1)) / math.sqrt(d.size))
    p = float(2.0 * _special().stdtr(d.size - 1, -abs(t)))  # as scipy.stats.ttest_rel
    if not math.isfinite(p):  # only reachable through extreme cancellation; same limit rule
        p = 1.0 if mean_diff == 0.0 else 0.0
    return PairedTest(mean_diff, p, int(d.size), "t")


def adjust_pvalues(ps: Sequence[float], method: Literal["holm", "bh"] = "holm") -> list[float]:
    """Multiplicity-adjusted p-values, returned in the input order.

    With p_(1) <= ... <= p_(m) sorted ascending:
    * ``"holm"`` (family-wise error; S. Holm 1979, Scand. J. Statist. 6(2)), step-down:
      adj_(i) = max_{j <= i} min(1, (m - j + 1) p_(j))
    * ``"bh"`` (false discovery rate; Y. Benjamini & Y. Hochberg 1995, JRSS B 57(1)), step-up:
      adj_(i) = min_{j >= i} min(1, m / j * p_(j))
    The running max/min enforces monotonicity so a smaller raw p never gets a larger adjusted p.
    """
    if method not in ("holm", "bh"):
        raise ValueError(f"method must be 'holm' or 'bh', got {method!r}")
    p = np.asarray(ps, dtype=np.float64)
    if p.ndim != 1:
        raise ValueError("ps must be a flat sequence of p-values")
    if p.size == 0:
        return []
    if not np.all((p >= 0.0) & (p <= 1.0)):  # also rejects NaN
        raise ValueError("every p-value must lie in [0, 1]")
    m = p.size
    order = np.argsort(p, kind="stable")
    ranks = np.arange(1, m + 1, dtype=np.float64)
    if method == "holm":
        adj_sorted = np.maximum.accumulate(np.minimum(1.0, (m - ranks + 1.0) * p[order]))
    else:
        scaled = np.minimum(1.0, m / ranks * p[order])
        adj_sorted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m, dtype=np.float64)
    out[order] = adj_sorted
    return [float(v) for v in out]
