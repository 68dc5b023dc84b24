"""Tests for noise.json, the noise floor, the stats stage and the ± summary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from gate_cards import make_card

from agenteval.fileio import read_json, write_json
from agenteval.gate.noise import measure_noise
from agenteval.params import load_params
from agenteval.power import mde
from agenteval.report import load_noise, write_report
from agenteval.schema.scorecard import Scorecard
from agenteval.stats import clustered_se, variance_components, wilson_interval
from agenteval.uncertainty import clustered_wilson, noise_floor, noise_report

ROOT = Path(__file__).resolve().parent.parent


def _no_nan(data: object) -> None:
    json.dumps(data, allow_nan=False)  # raises on NaN or infinity anywhere


def test_noise_report_per_scenario_and_overall() -> None:
    card = make_card(
        {"a": "PPP", "b": "PFP", "c": "FFF", "d": "PPF"},
        categories={"a": "x", "b": "x", "c": "y", "d": "y"},
        scores={"a": [9.0, 8.0, 7.0], "b": [8.0, 5.0, 9.0], "d": [7.0, 6.5, 3.0]},
    )
    report = noise_report(card, resamples=200)
    _no_nan(report)
    b = report["scenarios"]["b"]
    assert (b["k"], b["n"], b["runs"]) == (2, 3, 3)
    assert b["wilson"] == pytest.approx(list(wilson_interval(2, 3)), abs=1e-6)
    assert b["stability"] == "uncertain"
    assert b["score_mean"] == pytest.approx((8.0 + 5.0 + 9.0) / 3, abs=1e-6)
    outcomes = [1, 1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0]
    ids = [s for s in "abcd" for _ in range(3)]
    rate = report["overall"]["judged_pass_rate"]
    assert rate["value"] == pytest.approx(7 / 12, abs=1e-6)
    assert rate["se"] == pytest.approx(clustered_se(outcomes, ids), abs=1e-6)
    low, high, n_eff = clustered_wilson(outcomes, ids)
    assert (rate["low"], rate["high"]) == (pytest.approx(low, abs=1e-6), pytest.approx(high))
    assert rate["method"] == "wilson" and rate["n_eff"] == pytest.approx(n_eff, abs=1e-6)
    assert 0.0 <= rate["low"] < 7 / 12 < rate["high"] <= 1.0
    assert rate["bootstrap"]["resamples"] == 200
    assert set(report["categories"]) == {"x", "y"}
    assert report["categories"]["x"]["judged_pass_rate"]["value"] == pytest.approx(5 / 6, abs=1e-6)


def test_fail_scores_are_capped_like_the_scorecard_average() -> None:
    card = make_card({"a": "FP", "b": "PP"}, scores={"a": [9.5, 8.0]})
    a = noise_report(card, resamples=0)["scenarios"]["a"]
    assert a["score_mean"] == pytest.approx((5.99 + 8.0) / 2, abs=1e-6)


def test_variance_components_and_mde() -> None:
    card = make_card(
        {"a": "PPP", "b": "PFP", "c": "FFF", "d": "PPF"},
        scores={"a": [9.0, 8.0, 7.0], "b": [8.0, 5.0, 9.0], "c": [2.0, 3.0, 1.0]},
    )
    report = noise_report(card, resamples=0)
    scores = [9.0, 8.0, 7.0, 8.0, 5.0, 9.0, 2.0, 3.0, 1.0, 8.0, 8.0, 4.0]
    between, within = variance_components(scores, [s for s in "abcd" for _ in range(3)])
    assert report["overall"]["score_variance"] == {
        "between": pytest.approx(between, abs=1e-6),
        "within": pytest.approx(within, abs=1e-6),
    }
    m = report["mde"]["judged_pass_rate"]
    rates = [1.0, 2 / 3, 0.0, 2 / 3]
    mean = sum(rates) / 4
    sd = math.sqrt(sum((r - mean) ** 2 for r in rates) / 3)
    assert m["n_pairs"] == 4
    assert m["mde"] == pytest.approx(mde(math.sqrt(2) * sd, 4), abs=1e-6)
    assert m["repeat_noise_only"]["mde"] < m["mde"]  # pairing removes between-scenario spread


def test_one_iteration_is_reported_without_nan() -> None:
    report = noise_report(make_card({"a": "P", "b": "F", "c": "P"}), resamples=50)
    _no_nan(report)
    assert report["overall"]["score_variance"]["between"] is None
    assert "2+ iterations" in report["overall"]["score_variance"]["note"]
    assert report["mde"]["judged_pass_rate"]["repeat_noise_only"] is None
    assert report["mde"]["judged_pass_rate"]["mde"] is not None
    assert any("1 iteration" in note for note in report["notes"])
    assert report["scenarios"]["a"]["score_sd"] is None


def test_tiny_and_unmeasured_suites_say_why() -> None:
    one = noise_report(make_card({"a": "PPF"}), resamples=50)
    _no_nan(one)
    assert one["overall"]["judged_pass_rate"]["se"] is None
    assert "too few scenarios" in one["overall"]["judged_pass_rate"]["note"]
    assert one["mde"]["judged_pass_rate"]["mde"] is None
    nothing = noise_report(make_card({"a": "TT", "b": "EN"}), resamples=50)
    _no_nan(nothing)
    assert nothing["overall"]["judged_pass_rate"]["value"] is None
    assert nothing["scenarios"]["a"]["wilson"] is None
    same = noise_report(make_card({"a": "PP", "b": "PP"}), resamples=50)
    assert same["mde"]["judged_pass_rate"]["mde"] is None  # no spread: MDE unknown, not 0


def test_noise_floor_flip_rates_and_spreads() -> None:
    first = make_card({"a": "PPP", "b": "PPF", "c": "FFF"}, seed=0)
    second = make_card({"a": "PPP", "b": "FFF", "c": "FFT"}, seed=1)
    floor = noise_floor([first, second])
    _no_nan(floor)
    a, b, c = (floor["scenarios"][s] for s in "abc")
    assert (a["flipped"], a["flip_rate"], a["pass_rate_spread"]) == (False, 0.0, 0.0)
    assert b["flipped"] and b["pass_rates"] == pytest.approx([2 / 3, 0.0], abs=1e-6)
    assert b["pass_rate_spread"] == pytest.approx(2 / 3, abs=1e-6)
    assert b["flip_rate"] == pytest.approx(2 * 2 * 4 / (6 * 5), abs=1e-6)
    assert (c["k"], c["n"]) == (0, 5)
    assert floor["scenarios_flipping"] == 1
    assert floor["seeds"] == [[0, 1, 2], [1000, 1001, 1002]]
    run_rate = floor["run_metrics"]["judged_pass_rate"]
    assert run_rate["values"] == pytest.approx([5 / 9, 3 / 8], abs=1e-4)
    assert run_rate["min"] == pytest.approx(3 / 8, abs=1e-4)
    assert run_rate["spread"] == pytest.approx(run_rate["max"] - run_rate["min"], abs=1e-6)
    with pytest.raises(ValueError, match="at least 2 runs"):
        noise_floor([first])


def test_measure_noise_runs_the_pipeline_with_other_seeds(tmp_path: Path) -> None:
    params = load_params(
        ROOT / "params.yaml",
        [
            "suite.ids=[minutes_pronoun_chain, missing_file_then_recover, empty_file]",
            "suite.iterations=2",
            "target.params.temperature=0.5",
            "run.concurrency=2",
        ],
    )
    floor = measure_noise(params, 2, tmp_path, ROOT)
    assert (tmp_path / "noise_floor.json").is_file()
    assert floor["runs"] == 2 and set(floor["scenarios"]) == {
        "minutes_pronoun_chain",
        "missing_file_then_recover",
        "empty_file",
    }
    assert floor["seeds"] == [[0, 1], [1000, 1001]]
    assert read_json(tmp_path / "run-2" / "params.json")["suite"]["seed"] == 1
    with pytest.raises(ValueError, match="at least 2"):
        measure_noise(params, 1, tmp_path / "one", ROOT)


def test_stats_stage_and_summary_show_bounded_intervals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stages import stats as stage

    card = make_card({"a": "PPF", "b": "PFF", "d": "PFP", "c": "PPP"}, categories={"c": "other"})
    write_json(tmp_path / "reports" / "scorecard.json", card)
    (tmp_path / "params.yaml").write_text("stats:\n  bootstrap_resamples: 100\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert stage.main() == 0
    noise = read_json(tmp_path / "reports" / "noise.json")
    assert noise["overall"]["judged_pass_rate"]["bootstrap"]["resamples"] == 100
    reloaded = Scorecard.model_validate(read_json(tmp_path / "reports" / "scorecard.json"))
    assert load_noise(reloaded, tmp_path / "reports") is not None
    write_report(reloaded, tmp_path / "reports")
    summary = (tmp_path / "reports" / "summary.md").read_text(encoding="utf-8")
    rate = noise["overall"]["judged_pass_rate"]
    assert f"pass rate (judged): 66.7% [{rate['low']:.1%}, {rate['high']:.1%}]" in summary
    table = summary.split("## By category")[1].split("## Scenarios")[0]
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line[:2] == "| "}
    assert "[" in rows["general"]  # three scenarios: an interval
    assert "too few scenarios" in rows["other"]  # one scenario: said, not a degenerate ±
    assert "±" not in summary


def test_summary_ignores_a_noise_json_from_another_scorecard(tmp_path: Path) -> None:
    old = make_card({"a": "PPF", "b": "PFF"})
    write_json(tmp_path / "noise.json", noise_report(old, resamples=0))
    new = make_card({"a": "PPP", "b": "PFF"})
    assert load_noise(new, tmp_path) is None
    write_report(new, tmp_path)
    text = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "[" not in text.split("## Scenarios")[0] and "too few" not in text


def test_small_groups_get_bounded_intervals_or_too_few_scenarios() -> None:
    """The numbers the old t interval printed as `50% ± 635%` and `0% ± 0%`."""
    two = noise_report(make_card({"a": "P", "b": "F"}), resamples=0)["overall"]
    assert two["judged_pass_rate"]["low"] is None
    assert two["judged_pass_rate"]["note"].startswith("too few scenarios")
    none_pass = noise_report(make_card({s: "F" for s in "abcde"}), resamples=0)["overall"]
    rate = none_pass["judged_pass_rate"]
    assert rate["value"] == 0.0 and rate["low"] == 0.0
    assert rate["high"] == pytest.approx(wilson_interval(0, 5)[1], abs=1e-6)  # not zero width
    scores = none_pass["avg_score"]
    assert scores["low"] is None and scores["note"].startswith("no spread observed")
    edge = make_card({s: "P" for s in "abc"}, scores={"a": [10.0], "b": [10.0], "c": [9.0]})
    score = noise_report(edge, resamples=0)["overall"]["avg_score"]
    assert score["low"] >= 0.0 and score["high"] == 10.0  # the t interval clipped to 0..10


def test_repeats_shrink_the_effective_sample_size() -> None:
    ids = [s for s in "abcd" for _ in range(3)]
    same = [1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0]  # each scenario always the same
    low, high, n_eff = clustered_wilson(same, ids)
    assert n_eff == pytest.approx(4.0, rel=0.35)  # ~ one trial per scenario, not 12
    assert (low, high) != pytest.approx(wilson_interval(6, 12))
    mixed = [1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0]
    assert clustered_wilson(mixed, ids)[2] == pytest.approx(12.0)  # deff floored at 1
    assert clustered_wilson([1, 1, 1, 1], ["a", "a", "b", "b"])[2] == 2.0
    with pytest.raises(ValueError):
        clustered_wilson([0.5], ["a"])
