"""pass@k and pass^k against their closed forms, and the QA series built on them.

Property tests: the estimators equal the hypergeometric closed forms, are unbiased for
1-(1-p)^k and p^k under binomial sampling, pass^k is 0 as soon as the failures make every
k-subset contain one, and k > n is refused instead of reported.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agenteval.benchmarks.qa.metrics import Observation, pass_hat_series, qa_metrics, tallies
from agenteval.stats import pass_at_k, pass_hat_k


@st.composite
def n_c_k(draw: st.DrawFn, max_n: int = 40) -> tuple[int, int, int]:
    n = draw(st.integers(1, max_n))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@settings(max_examples=300, deadline=None)
@given(n_c_k())
def test_pass_at_k_is_the_closed_form(case: tuple[int, int, int]) -> None:
    n, c, k = case
    exact = 1 - Fraction(comb(n - c, k), comb(n, k))
    assert pass_at_k(n, c, k) == pytest.approx(float(exact), abs=1e-12)


@settings(max_examples=300, deadline=None)
@given(n_c_k())
def test_pass_hat_k_is_the_closed_form_and_zero_when_failures_force_it(
    case: tuple[int, int, int],
) -> None:
    n, c, k = case
    exact = Fraction(comb(c, k), comb(n, k))
    value = pass_hat_k(n, c, k)
    assert value == pytest.approx(float(exact), abs=1e-12)
    if n - c > n - k:  # more failures than a k-subset can avoid: every subset has one
        assert value == 0.0
    if n == k and c < n:  # k attempts, one observed failure: the estimate is exactly 0
        assert value == 0.0
        assert (c / n) ** k > 0 or c == 0  # what the peer defect would have reported


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 12),
    st.integers(1, 12),
    st.fractions(min_value=0, max_value=1, max_denominator=20),
)
def test_estimators_are_unbiased_under_binomial_sampling(n: int, k: int, p: Fraction) -> None:
    if k > n:
        return
    weights = [comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1)]
    mean_pass = sum(float(w) * pass_at_k(n, c, k) for c, w in enumerate(weights))
    mean_hat = sum(float(w) * pass_hat_k(n, c, k) for c, w in enumerate(weights))
    assert mean_pass == pytest.approx(float(1 - (1 - p) ** k), abs=1e-9)
    assert mean_hat == pytest.approx(float(p**k), abs=1e-9)


@given(st.integers(1, 30))
def test_nothing_passed_is_zero_and_everything_passed_is_one(n: int) -> None:
    for k in range(1, n + 1):
        assert pass_at_k(n, 0, k) == 0.0 and pass_hat_k(n, 0, k) == 0.0
        assert pass_at_k(n, n, k) == 1.0 and pass_hat_k(n, n, k) == 1.0


@given(st.integers(1, 20), st.integers(1, 10))
def test_k_greater_than_n_is_refused(n: int, extra: int) -> None:
    for estimator in (pass_at_k, pass_hat_k):
        with pytest.raises(ValueError, match="k must satisfy"):
            estimator(n, 0, n + extra)
        with pytest.raises(ValueError):
            estimator(n, 0, 0)


def obs(task: str, values: list[int | None], status: str = "evaluated") -> list[Observation]:
    return [
        Observation(task, 1, i, status if v is None else "evaluated", v)
        for i, v in enumerate(values)
    ]


def test_series_refuse_more_draws_than_attempts() -> None:
    tasks = tallies(obs("t1", [1, 0]) + obs("t2", [1, 1]))
    with pytest.raises(ValueError, match="attempts per task"):
        pass_hat_series(tasks, 3, 2, 0.95)


def test_metrics_with_no_pass_report_zero_and_a_failure_zeroes_pass_hat() -> None:
    none_passed = qa_metrics(obs("t1", [0, 0, 0]) + obs("t2", [0, 0, 0]), attempts=3)
    assert none_passed["correct.pass@3"]["value"] == 0.0
    assert none_passed["correct.pass@3"]["high"] > 0  # Wilson: no spread is not certainty
    one_failure = qa_metrics(obs("t1", [1, 1, 0]) + obs("t2", [1, 1, 1]), attempts=3)
    assert one_failure["correct.pass^3"]["value"] == 0.5  # t1 contributes 0, t2 contributes 1
    assert one_failure["correct.pass@3"]["value"] == 1.0
    assert one_failure["correct.avg@3"]["value"] == pytest.approx(5 / 6)


def test_each_series_counts_its_own_evaluated_error_unavailable_total() -> None:
    rows = (
        obs("ok", [1, 0, 1])
        + obs("err", [1, None, None], status="error")
        + obs("gone", [None, None, None], status="unavailable")
        + obs("part", [0, 1, None], status="unavailable")
    )
    metrics = qa_metrics(rows, attempts=3)
    first = metrics["correct.native@1"]
    assert (first["evaluated"], first["error"], first["unavailable"], first["total"]) == (
        3, 0, 1, 4,
    )  # fmt: skip
    at3 = metrics["correct.pass@3"]
    assert (at3["evaluated"], at3["error"], at3["unavailable"], at3["total"]) == (1, 1, 2, 4)
    at2 = metrics["series"]["correct.pass@2"]
    assert (at2["evaluated"], at2["error"], at2["unavailable"]) == (2, 1, 1)
    # Unbiased pass@2 of (n=3, c=2) and of (n=2, c=1): means of 1 and 1.
    assert at2["value"] == pytest.approx((1.0 + 1.0) / 2)
