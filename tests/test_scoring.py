"""The scoring rules as numeric vectors: recompute, pass rules, statuses, caps, aggregates."""

from __future__ import annotations

import math

import pytest

from agenteval.findings import BINDING_FINDINGS, CODE_FINDINGS
from agenteval.schema.status import Status
from agenteval.schema.transcript import Participant
from agenteval.schema.verdict import TurnVerdict, Verdict
from agenteval.scoring import (
    DEFAULT_WEIGHTS,
    DIMENSIONS,
    REASK_CAP,
    ScenarioInfo,
    ScoringRules,
    capped,
    dimension_means,
    score_scenario,
    summarize,
    turn_score,
)

RULES = ScoringRules()
ALL_TEN = dict.fromkeys(DIMENSIONS, 10.0)


def verdict(turns: list[dict[str, float | None]], status: str = "JUDGED", **kw: object) -> Verdict:
    return Verdict(
        scenario_id="s",
        scenario_digest="d",
        transcript_digest="t",
        judge=Participant(kind="test"),
        status=status,
        turns=[TurnVerdict(turn=i + 1, scores=s, **kw) for i, s in enumerate(turns)],  # type: ignore[arg-type]
    )


def info(turns: int = 1, category: str = "rag") -> ScenarioInfo:
    return ScenarioInfo("s", category, "high", turns)


def test_default_weights_sum_to_one_and_match_the_rubric() -> None:
    assert math.isclose(sum(DEFAULT_WEIGHTS.values()), 1.0)
    assert DEFAULT_WEIGHTS["correctness"] == 0.25 and DEFAULT_WEIGHTS["error_recovery"] == 0.05


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        (ALL_TEN, 10.0),
        (dict.fromkeys(DIMENSIONS, 0.0), 0.0),
        # 0.25*8 + 0.2*6 + 0.2*7 + 0.15*9 + 0.1*5 + 0.05*10 + 0.05*4 = 7.15
        (dict(zip(DIMENSIONS, [8, 6, 7, 9, 5, 10, 4], strict=True)), 7.15),
        # only correctness (.25) and efficiency (.10) judged: (.25*8 + .1*3) / .35
        ({"correctness": 8.0, "efficiency": 3.0, "personality": None}, round(2.3 / 0.35, 4)),
        ({d: None for d in DIMENSIONS}, None),
    ],
)
def test_turn_score_is_weighted_mean_over_judged_dimensions(scores, expected) -> None:
    assert turn_score(scores, RULES) == expected


def test_pass_needs_score_and_correctness_on_every_turn() -> None:
    good = dict(ALL_TEN)
    weak_correctness = dict(ALL_TEN, correctness=3.9)  # score 8.475 but correctness < 4
    result = score_scenario(info(2), "COMPLETED", verdict([good, weak_correctness]), RULES)
    assert result.status == Status.FAIL
    assert result.score == pytest.approx((10 + 8.475) / 2, abs=1e-4)
    assert [t.passed for t in result.turns] == [True, False]


def test_threshold_boundary_is_inclusive() -> None:
    six = dict.fromkeys(DIMENSIONS, 6.0)
    assert score_scenario(info(), "COMPLETED", verdict([six]), RULES).status == Status.PASS
    just_below = dict(six, efficiency=5.9)  # 6 - 0.1*0.1 = 5.99
    result = score_scenario(info(), "COMPLETED", verdict([just_below]), RULES)
    assert result.status == Status.FAIL and result.score == pytest.approx(5.99)


def test_judge_status_is_overridden_both_ways_with_a_warning() -> None:
    failing = dict.fromkeys(DIMENSIONS, 2.0)
    up = score_scenario(info(), "COMPLETED", verdict([ALL_TEN], status="FAIL"), RULES)
    down = score_scenario(info(), "COMPLETED", verdict([failing], status="PASS"), RULES)
    assert up.status == Status.PASS and "judge said FAIL" in up.warnings[0]
    assert down.status == Status.FAIL and "judge said PASS" in down.warnings[0]


def test_blocked_by_architecture_is_never_upgraded() -> None:
    evidence = ["turn 2 needs turn 1 (1 turn(s) back) but the agent keeps 0 earlier turn(s)"]
    result = score_scenario(info(), "COMPLETED", verdict([ALL_TEN]), RULES, blocked_by=evidence)
    assert result.status == Status.BLOCKED_BY_ARCHITECTURE
    assert result.warnings and "review" in result.warnings[0]
    assert result.root_cause == "blocked by architecture: " + evidence[0]


def test_a_judges_blocked_without_evidence_is_a_fail_with_a_warning() -> None:
    result = score_scenario(
        info(), "COMPLETED", verdict([ALL_TEN], status=Status.BLOCKED_BY_ARCHITECTURE), RULES
    )
    assert result.status == Status.FAIL
    assert "without evidence" in result.warnings[0]


def test_blocked_never_raises_an_average() -> None:
    evidence = ["turn 1 expects tool 'query_documents', which the agent does not have"]
    blocked = score_scenario(info(), "COMPLETED", verdict([ALL_TEN]), RULES, blocked_by=evidence)
    failed = score_scenario(info(), "COMPLETED", verdict([dict(ALL_TEN, correctness=0.0)]), RULES)
    assert capped(blocked.status, blocked.score, RULES) == RULES.fail_cap
    summary = summarize([blocked, failed], RULES)
    assert summary.blocked == 1 and summary.failed == 1
    assert summary.avg_score == pytest.approx(RULES.fail_cap)  # 10.0 and 7.5 both capped


@pytest.mark.parametrize(
    "status",
    [
        "TIMEOUT",
        "BUDGET_EXCEEDED",
        "INFRA_ERROR",
        "SETUP_ERROR",
        "SKIPPED_NO_DOCUMENT",
        "ERRORED",
        "NOT_RUN",
    ],
)
def test_infrastructure_statuses_from_inference_are_never_overridden(status: str) -> None:
    result = score_scenario(info(), status, verdict([ALL_TEN], status="PASS"), RULES)
    assert result.status == status and result.score is None


@pytest.mark.parametrize("status", ["NOT_JUDGED", "ERRORED", "INFRA_ERROR", "TIMEOUT"])
def test_unmeasured_judge_statuses_pass_through(status: str) -> None:
    result = score_scenario(info(), "COMPLETED", verdict([ALL_TEN], status=status), RULES)
    assert result.status == status and result.score is None


def test_turn_mismatch_is_errored_and_a_pass_without_turns_is_impossible() -> None:
    assert score_scenario(info(2), "COMPLETED", verdict([ALL_TEN]), RULES).status == Status.ERRORED
    empty = score_scenario(info(1), "COMPLETED", verdict([], status="PASS"), RULES)
    assert empty.status == Status.ERRORED


def test_missing_verdict_is_errored() -> None:
    assert score_scenario(info(), "COMPLETED", None, RULES).status == Status.ERRORED


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0, 10.5])
def test_out_of_range_scores_never_reach_aggregates(bad: float) -> None:
    result = score_scenario(info(), "COMPLETED", verdict([dict(ALL_TEN, completeness=bad)]), RULES)
    assert result.status == Status.ERRORED and result.score is None


def test_missing_correctness_means_not_judged() -> None:
    scores = dict(ALL_TEN, correctness=None)
    assert score_scenario(info(), "COMPLETED", verdict([scores]), RULES).status == Status.NOT_JUDGED


def test_simulator_fault_turns_are_not_charged_to_the_agent() -> None:
    bad = dict.fromkeys(DIMENSIONS, 0.0)
    v = verdict([ALL_TEN, bad])
    v.turns[1].simulator_fault = "leaked objective"
    result = score_scenario(info(2), "COMPLETED", v, RULES)
    # neither a FAIL nor a PASS: the simulator's error leaves the scenario unmeasured
    assert result.status == Status.SIMULATOR_ERROR and result.score is None
    assert result.root_cause is not None and "leaked objective" in result.root_cause
    summary = summarize([result], RULES)
    assert summary.simulator_error == 1 and summary.judged_pass_rate is None


def test_discrepancy_recorded_beyond_tolerance() -> None:
    v = verdict([ALL_TEN, ALL_TEN])
    v.turns[0].reported_score = 9.8  # within 0.25
    v.turns[1].reported_score = 9.7  # beyond
    result = score_scenario(info(2), "COMPLETED", v, RULES)
    assert [t.discrepancy for t in result.turns] == [False, True]
    assert summarize([result], RULES).discrepancies == 1


def test_fail_is_capped_in_averages_and_unmeasured_excluded() -> None:
    high_fail = dict(ALL_TEN, correctness=0.0)  # score 7.5 but FAIL
    results = [
        score_scenario(info(), "COMPLETED", verdict([high_fail]), RULES),
        score_scenario(info(), "COMPLETED", verdict([ALL_TEN]), RULES),
        score_scenario(info(), "TIMEOUT", None, RULES),
    ]
    assert results[0].status == Status.FAIL and results[0].score == 7.5
    assert capped(results[0].status, results[0].score, RULES) == 5.99
    summary = summarize(results, RULES)
    assert summary.avg_score == pytest.approx((5.99 + 10) / 2, abs=1e-4)
    assert (summary.total, summary.passed, summary.failed, summary.timeout) == (3, 1, 1, 1)
    assert summary.pass_rate == pytest.approx(1 / 3, abs=1e-4)
    assert summary.judged_pass_rate == 0.5


def test_summary_by_category_and_empty_input() -> None:
    a = score_scenario(info(category="a"), "COMPLETED", verdict([ALL_TEN]), RULES)
    b = score_scenario(info(category="b"), "SKIPPED_NO_DOCUMENT", None, RULES)
    summary = summarize([a, b], RULES)
    assert summary.by_category["a"].judged_pass_rate == 1.0
    assert summary.by_category["b"].judged_pass_rate is None
    assert summary.by_category["b"].unmeasured == 1
    empty = summarize([], RULES)
    assert empty.total == 0 and empty.pass_rate is None and empty.avg_score is None


def test_rules_from_params_and_bad_weights() -> None:
    rules = ScoringRules.from_params({"weights": {"personality": 0.0}, "pass_threshold": 7})
    assert rules.pass_threshold == 7.0 and rules.weights["personality"] == 0.0
    with pytest.raises(ValueError, match="unknown dimension"):
        ScoringRules(weights={"charm": 1.0})
    with pytest.raises(ValueError):
        ScoringRules(weights=dict.fromkeys(DIMENSIONS, 0.0))


def test_dimension_means_skip_unjudged() -> None:
    a = score_scenario(info(), "COMPLETED", verdict([dict(ALL_TEN, personality=None)]), RULES)
    means = dimension_means([a])
    assert means["correctness"] == 10.0 and "personality" not in means


@pytest.mark.parametrize(
    ("given", "reasked", "kept"),
    [(10.0, True, REASK_CAP), (2.0, True, 2.0), (None, True, None), (10.0, False, 10.0),
     (10.0, None, 10.0)],
)  # fmt: skip
def test_a_reask_caps_context_retention_in_the_recompute(
    given: float | None, reasked: bool | None, kept: float | None
) -> None:
    """Any judge's verdict: the flag caps, never raises, and leaves a left-out score out."""
    second = {**ALL_TEN, "context_retention": given}
    result = score_scenario(
        info(turns=2), "COMPLETED", verdict([ALL_TEN, second], reasked=reasked), RULES
    )
    assert result.turns[1].scores["context_retention"] == kept
    assert result.turns[0].scores["context_retention"] == (REASK_CAP if reasked else 10.0)


def test_the_reask_cap_is_a_binding_rule_of_the_table() -> None:
    rule = CODE_FINDINGS["reasked"]
    assert rule.dimension == "context_retention" and rule.score is None
    assert "reasked" in BINDING_FINDINGS and REASK_CAP == 4.0
