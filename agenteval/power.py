"""Power analysis of paired comparisons: minimum detectable effect and pairs needed.

Pure core, like `stats`, whose argument checks it shares; normal approximation throughout.
"""

from __future__ import annotations

import math
from statistics import NormalDist

from agenteval.stats import _as_count, _check_open_unit

_NORMAL = NormalDist()


def _z_sum(sd_diff: float, alpha: float, power: float) -> float:
    """z_{1-alpha/2} + z_{power}, after validating the shared power-analysis arguments."""
    if not (math.isfinite(sd_diff) and sd_diff >= 0.0):
        raise ValueError(f"sd_diff must be a finite number >= 0, got {sd_diff!r}")
    alpha = _check_open_unit(alpha, "alpha")
    power = _check_open_unit(power, "power")
    return _NORMAL.inv_cdf(1.0 - alpha / 2.0) + _NORMAL.inv_cdf(power)


def mde(sd_diff: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable effect of a two-sided paired comparison (normal approximation).

    MDE = (z_{1-alpha/2} + z_{power}) * sd_diff / sqrt(n), where sd_diff is the standard
    deviation of per-pair differences. Source: Chow, Shao & Wang (2008), "Sample Size
    Calculations in Clinical Research", Sec. 3.1; Cohen (1988), ch. 2.
    """
    if _as_count(n, "n") < 1:
        raise ValueError("n must be >= 1")
    return _z_sum(sd_diff, alpha, power) * sd_diff / math.sqrt(n)


def required_n(delta: float, sd_diff: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Number of pairs needed to detect a mean difference ``delta`` (inverse of :func:`mde`).

    n = ceil(((z_{1-alpha/2} + z_{power}) * sd_diff / delta)^2), at least 1. Sources: mde.
    """
    if not (math.isfinite(delta) and delta != 0.0):
        raise ValueError(f"delta must be a finite non-zero number, got {delta!r}")
    exact = (_z_sum(sd_diff, alpha, power) * sd_diff / abs(delta)) ** 2
    # Subtract a hair before ceil so that a value that is an integer up to rounding (e.g. from
    # mde(sd, n) fed back in) maps to that integer rather than the next one.
    return max(1, math.ceil(exact - 1e-9))
