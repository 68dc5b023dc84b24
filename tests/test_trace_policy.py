"""tracking.traces: which conversations become traces, and the verdict table that keeps every
verdict when only some are traced (pure functions; the logged run is in test_track.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agenteval.params import ParamsError, load_params
from agenteval.schema.scorecard import ScenarioResult, Scorecard, TurnResult
from agenteval.tracking.policy import TracePolicy, trace_policy
from agenteval.tracking.verdicts import trace_link, verdict_table

ROOT = Path(__file__).resolve().parents[1]


def result(name: str, status: str, iteration: int = 0, turns: int = 2) -> ScenarioResult:
    rows = [
        TurnResult(turn=t, scores={"correctness": 1.0, "grounding": None}, score=0.9, passed=True)
        for t in range(1, turns + 1)
    ]
    return ScenarioResult(id=name, iteration=iteration, category="c", status=status,
                          score=0.9 if rows else None, turns=rows,
                          root_cause=None if status == "PASS" else f"{name} broke")  # fmt: skip


def suite(passing: int, failing: int) -> list[ScenarioResult]:
    found = [result(f"p{i}", "PASS") for i in range(passing)]
    return found + [result(f"f{i}", "FAIL") for i in range(failing)] + [result("e", "ERRORED")]


def test_sample_is_every_non_pass_and_k_passing() -> None:
    results = suite(40, 5)
    chosen = TracePolicy("sample", 10).choose(results)
    failing = {(r.id, r.iteration) for r in results if r.status != "PASS"}
    assert failing <= chosen and len(chosen) == len(failing) + 10
    assert TracePolicy("failures", 10).choose(results) == failing
    assert TracePolicy("none", 10).choose(results) == set()
    assert len(TracePolicy("all", 10).choose(results)) == len(results)


def test_sample_is_the_same_scenarios_in_every_run() -> None:
    """Two runs of one suite are compared on the same examples: the sample depends on the
    scenario and iteration, never on the order, the run, or which others failed."""
    results = suite(40, 5)
    first = TracePolicy("sample", 10).choose(results)
    again = TracePolicy("sample", 10).choose(list(reversed(results)))
    assert first == again
    # Another run where three of the sampled scenarios failed and one more scenario passes:
    # the passing sample keeps every pass it had.
    sampled_pass = sorted(k for k in first if k[0].startswith("p"))
    flipped = {name for name, _ in sampled_pass[:3]}
    other = [result(r.id, "FAIL") if r.id in flipped else r for r in results]
    other.append(result("p_new", "PASS"))
    kept = TracePolicy("sample", 10).choose(other)
    assert set(sampled_pass[3:]) <= kept and {(n, 0) for n in flipped} <= kept


def test_a_small_run_is_traced_whole_and_says_so() -> None:
    results = suite(3, 1)
    policy = TracePolicy("sample", 50)
    chosen = policy.choose(results)
    assert len(chosen) == len(results)
    assert "every one" in policy.describe(results, chosen)


def test_a_sample_never_reads_as_the_whole_run() -> None:
    results = suite(40, 2)
    policy = TracePolicy("sample", 5)
    said = policy.describe(results, policy.choose(results))
    assert "8 of 43 conversations" in said and "5 of 40 PASS" in said
    assert "SAMPLE" in said and "verdicts.json" in said and "sample:5" in said
    none = TracePolicy("none", 5)
    assert "none traced" in none.describe(results, set())


def test_policy_from_params_older_booleans_and_refusals(tmp_path: Path) -> None:
    params = load_params(ROOT / "params.yaml")
    assert trace_policy(params["tracking"]) == TracePolicy("sample", 50)
    assert trace_policy({"traces": True}).mode == "all"
    assert trace_policy({"traces": False}).mode == "none"
    assert trace_policy({"traces": "all"}, override="failures").mode == "failures"
    assert load_params(ROOT / "params.yaml", ["tracking.traces=false"])
    with pytest.raises(ParamsError, match=r"tracking\.traces"):
        load_params(ROOT / "params.yaml", ["tracking.traces=some"])
    with pytest.raises(ParamsError, match=r"tracking\.trace_sample"):
        load_params(ROOT / "params.yaml", ["tracking.trace_sample=-1"])
    with pytest.raises(ValueError, match=r"tracking\.traces"):
        trace_policy({"traces": "most"})


def test_verdict_table_has_every_turn_and_links_only_real_traces() -> None:
    results = [result("a", "PASS"), result("b", "FAIL", turns=1), result("c", "ERRORED", turns=0)]
    card = Scorecard.model_construct(scenarios=results)
    table = verdict_table(card, {("b", 0, 1): "tr-b1"}, "7")
    assert table["scenario_id"] == ["a", "a", "b", "c"] and table["turn"] == [1, 2, 1, None]
    assert table["status"] == ["PASS", "PASS", "FAIL", "ERRORED"]
    assert table["root_cause"] == [None, None, "b broke", "c broke"]
    assert table["correctness"] == [1.0, 1.0, 1.0, None]
    assert table["grounding"] == [None] * 4  # not judged: never a zero
    assert table["trace_id"] == [None, None, "tr-b1", None]
    assert table["trace"][2] == trace_link("7", "tr-b1") and "tr-b1" in table["trace"][2]
    assert len({len(column) for column in table.values()}) == 1
