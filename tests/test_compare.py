"""Tests for agenteval.gate.compare: instrument checks, buckets, tests, gate, inputs and outputs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gate_cards import make_card, with_config
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.fileio import write_json
from agenteval.gate.buckets import Evidence, bucket_for
from agenteval.gate.compare import (
    EXIT_NOT_COMPARABLE,
    EXIT_OK,
    EXIT_REGRESSION,
    InputError,
    compare,
    is_regression,
    load_side,
    paired_endpoint,
)
from agenteval.gate.report import markdown, plot_rows, verdict_line, write_outputs
from agenteval.stats import adjust_pvalues, mcnemar_exact, paired_permutation_test
from agenteval.uncertainty import ScenarioTally, tally


def _t(letters: str) -> ScenarioTally:
    return tally(make_card({"s": letters}))["s"]


# ----------------------------------------------------------------------------- instrument


def test_every_instrument_difference_is_listed_and_refused() -> None:
    base = make_card({"a": "PPP", "b": "FFF"})
    rules = dict(base.config["judge"]["rules"], pass_threshold=7.0)
    cur = make_card(
        {"a": "PPP", "b": "FFF"},
        config={
            **with_config("judge", model="judge-x", rules=rules),
            **with_config("simulator", kind="llm"),
            "corpus_digest": "corpus-2",
        },
    )
    result = compare(base, cur)
    assert result.exit_code == EXIT_NOT_COMPARABLE and result.verdict == "not comparable"
    diffs = result.instrument_differences
    assert "judge.model: None -> 'judge-x'" in diffs
    assert "judge.rules.pass_threshold: 6.0 -> 7.0" in diffs
    assert "simulator.kind: 'scripted' -> 'llm'" in diffs
    assert any(d.startswith("corpus_digest:") for d in diffs)
    assert len(result.reasons) == len(diffs) == 4
    text = markdown(result)
    assert "NOT COMPARABLE (exit 3)" in text and "judge.rules.pass_threshold" in text


def test_another_agent_is_an_ab_comparison_unless_same_agent() -> None:
    base = make_card({"a": "PPP", "b": "FFF"})
    other = with_config("target", config_digest="agent-b", details={"knobs": {"top_k": 1}})
    cur = make_card({"a": "PPP", "b": "FFF"}, config=other)
    ab = compare(base, cur)
    assert (ab.exit_code, ab.kind) == (EXIT_OK, "A/B")
    assert "target.config_digest: 'agent-a' -> 'agent-b'" in ab.agent_differences
    gated = compare(base, cur, same_agent=True)
    assert gated.exit_code == EXIT_NOT_COMPARABLE
    assert all(r.startswith("the agent differs (--same-agent)") for r in gated.reasons)
    assert "no statistics were computed" in markdown(gated)
    assert compare(base, make_card({"a": "PPP", "b": "FFF"}), same_agent=True).exit_code == 0


# ----------------------------------------------------------------------------- buckets


def test_bucket_unmeasured_and_unchanged() -> None:
    assert bucket_for(_t("TTT"), _t("PPP"), Evidence())[0] == "unmeasured"
    assert bucket_for(_t("PPP"), _t("EEN"), Evidence())[0] == "unmeasured"
    assert bucket_for(_t("PFP"), _t("FPP"), Evidence())[0] == "unchanged"


def test_bucket_stable_transitions() -> None:
    name, reason = bucket_for(_t("P" * 11), _t("F" * 11), Evidence())
    assert name == "regressed" and "stable_pass -> stable_fail" in reason
    assert bucket_for(_t("F" * 11), _t("P" * 11), Evidence())[0] == "improved"


def test_bucket_significant_scenario_test() -> None:
    name, reason = bucket_for(_t("PPPPPPPPPF"), _t("PFFFFFFFFF"), Evidence(p_holm=0.01))
    assert name == "regressed" and "Fisher" in reason
    assert bucket_for(_t("FFFF"), _t("PPPF"), Evidence(p_holm=0.01))[0] == "improved"


def test_bucket_complete_reversal_needs_corroboration() -> None:
    lone, reason = bucket_for(_t("PPP"), _t("FFF"), Evidence())
    assert lone == "flaky" and "0.0156" in reason  # (1/2)^3 (1/2)^3 = 1/64
    assert bucket_for(_t("PPP"), _t("FFF"), Evidence(aggregate_drop=True))[0] == "regressed"
    assert bucket_for(_t("FFF"), _t("PPP"), Evidence(aggregate_rise=True))[0] == "improved"
    # A drop does not corroborate a rise, and fewer than 3 repeats is never a reversal.
    assert bucket_for(_t("FFF"), _t("PPP"), Evidence(aggregate_drop=True))[0] == "flaky"
    assert bucket_for(_t("PP"), _t("FF"), Evidence(aggregate_drop=True))[0] == "flaky"


def test_bucket_noise_floor_has_the_last_word() -> None:
    ev = Evidence(p_holm=0.001, aggregate_drop=True, noise_spread=1.0)
    name, reason = bucket_for(_t("PPP"), _t("FFF"), ev)
    assert name == "flaky" and "noise floor" in reason
    narrow = Evidence(aggregate_drop=True, noise_spread=1 / 3)
    assert bucket_for(_t("PPP"), _t("FFF"), narrow)[0] == "regressed"
    assert bucket_for(_t("PPP"), _t("PPF"), narrow)[0] == "flaky"


def test_only_in_one_run_and_changed_content_are_left_out() -> None:
    base = make_card({"a": "PPP", "b": "PPP", "c": "FFF", "old": "PPP"})
    cur = make_card({"a": "PPP", "b": "FFF", "c": "FFF", "new": "FFF"}, digests={"b": "edited"})
    result = compare(base, cur)
    assert result.bucket("changed") == ["b"]
    assert result.bucket("only_in_baseline") == ["old"]
    assert result.bucket("only_in_current") == ["new"]
    assert result.overall[0].n == 2  # a and c only
    assert result.exit_code == EXIT_OK


def test_unmeasured_is_never_a_regression_but_require_complete_fails() -> None:
    base = make_card({"a": "PPP", "b": "PPP", "c": "FFF", "gone": "PPP", "never": "NNN"})
    cur = make_card({"a": "PPP", "b": "TTT", "c": "FFE", "never": "NNN"})
    result = compare(base, cur)
    assert result.exit_code == EXIT_OK
    assert result.bucket("unmeasured") == ["b", "never"]
    assert result.incomplete == [
        "b: 3 of 3 current iteration(s) unmeasured (TIMEOUT)",
        "c: 1 of 3 current iteration(s) unmeasured (INFRA_ERROR)",
        "gone: missing from the current run",
        "never: 3 of 3 baseline iteration(s) unmeasured (NOT_JUDGED)",
        "never: 3 of 3 current iteration(s) unmeasured (NOT_JUDGED)",
    ]  # a comparison is complete only when both runs measured every unit
    assert any("--require-complete" in w for w in result.warnings)
    strict = compare(base, cur, require_complete=True)
    assert strict.exit_code == EXIT_REGRESSION
    assert "--require-complete: 5 incomplete" in strict.reasons[0]


def test_require_complete_fails_on_a_baseline_with_unmeasured_units() -> None:
    base = make_card({"a": "PPE", "b": "FFF"})
    cur = make_card({"a": "PPP", "b": "FFF"})
    assert compare(base, cur).exit_code == EXIT_OK
    strict = compare(base, cur, require_complete=True)
    assert strict.exit_code == EXIT_REGRESSION
    assert strict.incomplete == ["a: 1 of 3 baseline iteration(s) unmeasured (INFRA_ERROR)"]


def test_another_agent_model_is_not_comparable_unless_allowed() -> None:
    base = make_card({"a": "PPP", "b": "FFF"}, config={"agent_models": ["model-a"]})
    cur = make_card({"a": "PPP", "b": "FFF"}, config={"agent_models": ["model-b"]})
    refused = compare(base, cur)
    assert refused.exit_code == EXIT_NOT_COMPARABLE
    assert refused.reasons == [
        "agent model model-a -> model-b: every delta would partly be the model swap "
        "(--allow-model-change to compare anyway)"
    ]
    allowed = compare(base, cur, allow_model_change=True)
    assert allowed.exit_code == EXIT_OK
    assert "agent model model-a -> model-b (--allow-model-change)" in allowed.warnings
    # a scorecard from before the models were read back: its configured model stands in
    old = make_card({"a": "PPP", "b": "FFF"})
    assert compare(old, make_card({"a": "PPP", "b": "FFF"}, config={
        "agent_models": ["builtin-bm25"]})).exit_code == EXIT_OK  # fmt: skip


# ----------------------------------------------------------------------------- tests


def test_single_iteration_uses_exact_mcnemar() -> None:
    rows_b = {f"s{i}": "P" for i in range(12)} | {"x": "F", "y": "F"}
    rows_c = {f"s{i}": ("F" if i < 10 else "P") for i in range(12)} | {"x": "P", "y": "F"}
    result = compare(make_card(rows_b), make_card(rows_c))
    rate = result.overall[0]
    assert rate.test == "exact McNemar (b=10, c=1)"
    assert rate.p_value == pytest.approx(mcnemar_exact(10, 1))
    assert rate.regression and result.exit_code == EXIT_REGRESSION
    # Single flips cannot be complete reversals: named as flaky, the aggregate test decides.
    assert result.bucket("regressed") == []


def test_repeats_use_the_paired_permutation_test_on_rates_and_scores() -> None:
    base = make_card({"a": "PPP", "b": "PPF", "c": "FFF", "d": "PFF"})
    cur = make_card({"a": "PPF", "b": "PPF", "c": "PFF", "d": "FFF"})
    rate, score = compare(base, cur).overall
    expected = paired_permutation_test([1, 2 / 3, 0, 1 / 3], [2 / 3, 2 / 3, 1 / 3, 0])
    assert rate.p_value == pytest.approx(expected.p_value)
    assert rate.delta == pytest.approx(expected.mean_diff)
    assert rate.test == "paired permutation (exact)"
    assert score.metric == "avg_score" and score.n == 4 and not score.gating


def test_categories_are_holm_corrected_and_gate() -> None:
    cats = {f"t{i}": "tools" for i in range(8)} | {f"r{i}": "rag" for i in range(8)}
    base = make_card({s: "PPP" for s in cats} | {"u": "PFF"}, categories=cats)
    cur_rows = {s: ("FFF" if s.startswith("t") else "PPP") for s in cats} | {"u": "PFF"}
    result = compare(base, make_card(cur_rows, categories=cats))
    rates = {ep.scope: ep for ep in result.categories if ep.metric == "judged_pass_rate"}
    raw = [rates[c].p_value or 1.0 for c in ("general", "rag", "tools")]
    assert [rates[c].p_holm for c in ("general", "rag", "tools")] == adjust_pvalues(raw)
    assert rates["tools"].regression and not rates["rag"].regression
    assert any("category tools" in r for r in result.reasons)
    assert sorted(result.bucket("regressed")) == sorted(s for s in cats if s.startswith("t"))


def test_gate_rule_is_two_sided_p_and_a_drop() -> None:
    assert is_regression(0.01, -0.2) and not is_regression(0.01, 0.2)
    assert not is_regression(0.05, -0.2)


def test_mde_is_always_reported_and_falls_back_when_differences_do_not_vary() -> None:
    ep = paired_endpoint("judged_pass_rate", "overall", [1.0, 0.0, 1.0, 0.5], [1.0, 0.0, 1.0, 0.5])
    assert ep.p_value == 1.0 and ep.mde is not None and ep.mde > 0
    assert ep.sd_source is not None and ep.sd_source.startswith("conservative")
    line = verdict_line(ep)
    assert "No significant change" in line and f"{ep.mde:.3f}" in line
    flat = paired_endpoint("judged_pass_rate", "overall", [1.0, 1.0], [1.0, 1.0])
    assert flat.mde is None and "MDE unknown" not in verdict_line(flat)
    assert "no variation" in verdict_line(flat)
    assert paired_endpoint("avg_score", "x", [], []).p_value is None


def test_interval_of_a_rate_difference_stays_within_minus_one_and_one() -> None:
    ep = paired_endpoint("judged_pass_rate", "c", [1.0, 1.0, 0.0], [0.0, 0.0, 0.0])
    assert ep.low is not None and ep.high is not None
    assert -1.0 <= ep.low <= (ep.delta or 0) <= ep.high <= 1.0


# ----------------------------------------------------------------------------- gate simulation
#
# The same experiment as tests/test_stats.py (40 scenarios, 3 repeats, fixed per-scenario pass
# probabilities, 200 trials) run end to end through compare(): the whole gate must raise the
# flag exactly when the simulated rule does, so its error rates are the ones measured there.

N_SCENARIOS, REPEATS, TRIALS, RESAMPLES = 40, 3, 200, 2000
SCENARIO_P = np.random.default_rng(2024).uniform(0.3, 0.95, size=N_SCENARIOS)


def _letters(passes: int) -> str:
    return "P" * passes + "F" * (REPEATS - passes)


def _gate_rate(drop: float, seed: int) -> float:
    rng = np.random.default_rng(seed)
    ids = [f"s{i:02d}" for i in range(N_SCENARIOS)]
    flagged = 0
    for trial in range(TRIALS):
        base = rng.binomial(REPEATS, SCENARIO_P)
        cand = rng.binomial(REPEATS, SCENARIO_P - drop)
        result = compare(
            make_card({s: _letters(k) for s, k in zip(ids, base, strict=True)}),
            make_card({s: _letters(k) for s, k in zip(ids, cand, strict=True)}),
            resamples=RESAMPLES,
            seed=trial,
        )
        simulated = paired_permutation_test(
            base / REPEATS, cand / REPEATS, n_resamples=RESAMPLES, seed=trial
        )
        rule = simulated.p_value < 0.05 and simulated.mean_diff < 0
        assert (result.exit_code == EXIT_REGRESSION) == rule, f"trial {trial}"
        flagged += rule
    return flagged / TRIALS


def test_compare_gate_matches_the_simulated_error_rates() -> None:
    assert _gate_rate(drop=0.0, seed=100) <= 0.05
    assert _gate_rate(drop=0.2, seed=200) >= 0.80


# ----------------------------------------------------------------------------- inputs


def test_load_side_reads_directories_and_files(tmp_path: Path) -> None:
    card = make_card({"a": "PPP"})
    write_json(tmp_path / "run" / "scorecard.json", card)
    write_json(tmp_path / "repo" / "reports" / "scorecard.json", card)
    assert load_side(tmp_path / "run").source.endswith("run/scorecard.json")
    assert load_side(str(tmp_path / "repo")).source.endswith("reports/scorecard.json")
    assert load_side(tmp_path / "run" / "scorecard.json").card == card
    (tmp_path / "bad.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "wrong.json").write_text('{"summary": 1}', encoding="utf-8")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a readable scorecard"):
        load_side(tmp_path / "bad.json")
    with pytest.raises(InputError, match="summary"):
        load_side(tmp_path / "wrong.json")
    with pytest.raises(InputError, match=r"no scorecard\.json"):
        load_side(tmp_path / "empty")
    with pytest.raises(InputError, match="not a run directory"):
        load_side(tmp_path / "missing")


def test_load_side_reads_an_mlflow_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mlflow

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    missing = "0123456789abcdef0123456789abcdef"
    with pytest.raises(InputError, match="no tracking database"):
        load_side(missing)
    assert not (tmp_path / "mlflow.db").exists()  # looking must not create a store
    card = make_card({"a": "PPF", "b": "FFF"})
    write_json(tmp_path / "scorecard.json", card)
    # A client of its own: the fluent API keeps the active experiment of whatever test ran
    # before in this process, which need not exist in this fresh database.
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    run = client.create_run(client.create_experiment("compare"))
    client.log_artifact(run.info.run_id, str(tmp_path / "scorecard.json"), artifact_path="reports")
    client.set_terminated(run.info.run_id)
    # load_side reads the default, sqlite:///<cwd>/mlflow.db, which is that database
    loaded = load_side(run.info.run_id)
    assert loaded.card == card
    assert loaded.source == f"mlflow:{run.info.run_id}/reports/scorecard.json"
    assert load_side(f"runs:/{run.info.run_id}").card == card
    with pytest.raises(InputError, match="not found"):
        load_side(missing)


# ----------------------------------------------------------------------------- outputs


def test_writers_and_plot_data(tmp_path: Path) -> None:
    cats = {"a": "x", "b": "x", "c": "y", "d": "y"}
    base = make_card({"a": "PPP", "b": "PFP", "c": "FFF", "d": "PPP"}, categories=cats)
    cur = make_card({"a": "PPP", "b": "PPF", "c": "FPF", "d": "PPP"}, categories=cats)
    result = compare(base, cur)
    paths = write_outputs(result, tmp_path, png=True)
    assert {p.name for p in paths} == {
        "compare.json",
        "compare.md",
        "category_delta.json",
        "category_delta.png",
    }
    data = json.loads((tmp_path / "compare.json").read_text(encoding="utf-8"))
    assert data["exit_code"] == 0 and data["buckets"]["unchanged"] == ["a", "b", "d"]
    assert data["overall"][0]["mde"] is not None
    rows = plot_rows(result)
    assert [r["category"] for r in rows] == ["(overall)", "x", "y"]
    assert rows[2]["delta"] == pytest.approx(1 / 6, abs=1e-6)
    text = (tmp_path / "compare.md").read_text(encoding="utf-8")
    assert "NO REGRESSION (exit 0)" in text and "80% power to detect" in text


# ----------------------------------------------------------------------------- CLI


def test_cli_exit_codes(tmp_path: Path) -> None:
    runner = CliRunner()
    base = make_card({f"s{i}": "PPP" for i in range(8)})
    same = make_card({f"s{i}": "PPP" for i in range(8)}, seed=1)
    worse = make_card({f"s{i}": "FFF" for i in range(8)})
    judge = make_card({f"s{i}": "PPP" for i in range(8)}, config=with_config("judge", model="x"))
    for name, card in {"base": base, "same": same, "worse": worse, "judge": judge}.items():
        write_json(tmp_path / name / "scorecard.json", card)
    out = str(tmp_path / "out")

    def run(*args: str) -> tuple[int, str]:
        result = runner.invoke(app, [*args, "--out", out, "--no-png"])
        return result.exit_code, result.output

    assert run("compare", str(tmp_path / "base"), str(tmp_path / "same"))[0] == 0
    code, text = run("compare", str(tmp_path / "base"), str(tmp_path / "worse"))
    assert code == 2 and "8 scenario(s) regressed" in text
    code, text = run("compare", str(tmp_path / "base"), str(tmp_path / "judge"))
    assert code == 3 and "judge.model" in text
    code, text = run("compare", str(tmp_path / "base"), str(tmp_path / "nope"))
    assert code == 4 and "not a run directory" in text
    (tmp_path / "floor.json").write_text("[]", encoding="utf-8")
    code, text = run(
        "compare",
        str(tmp_path / "base"),
        str(tmp_path / "same"),
        "--noise",
        str(tmp_path / "floor.json"),
    )
    assert code == 4 and "not a noise floor" in text


def test_cli_baseline_save_and_show(tmp_path: Path) -> None:
    runner = CliRunner()
    three = make_card({"a": "PPF", "b": "FFF", "c": "PFF"})
    write_json(tmp_path / "three" / "scorecard.json", three)
    write_json(tmp_path / "one" / "scorecard.json", make_card({"a": "P", "b": "F"}))
    dest = tmp_path / "baselines" / "baseline.json"
    refused = runner.invoke(app, ["baseline", "save", str(tmp_path / "one"), "--dest", str(dest)])
    assert refused.exit_code == 2 and "at least 3" in refused.output and not dest.exists()
    saved = runner.invoke(app, ["baseline", "save", str(tmp_path / "three"), "--dest", str(dest)])
    assert saved.exit_code == 0 and dest.is_file()
    shown = runner.invoke(app, ["baseline", "show", "--path", str(dest)])
    assert shown.exit_code == 0
    assert "iterations: 3 · seeds: [0, 1, 2]" in shown.output
    assert "judged pass rate: 0.333 [0." in shown.output  # a bounded 95% interval
    assert "saved from:" in shown.output and "three" in shown.output
    missing = runner.invoke(app, ["baseline", "show", "--path", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "no baseline saved" in missing.output
