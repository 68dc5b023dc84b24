"""`agenteval propose` (limits from the worst of N draws) and `agenteval gate --expect`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gate_cards import make_card, with_config
from lifecycle_runs import MAIN, WEAK, run_builtin
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.fileio import write_json
from agenteval.gate.expectations import (
    FLIP_HEADROOM,
    SCORE_HEADROOM,
    USAGE_HEADROOM,
    ExpectationsError,
    check,
    draws_of,
    propose,
)
from agenteval.gate.runs import LoadedRun, load_side
from agenteval.schema.expectations import Expectations

IDS = (
    "admit_missing_benefit",
    "html_prose_lookup",
    "csv_aggregation",
    "minutes_pronoun_chain",
    "no_reindex_followup",
    "missing_file_then_recover",
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("expect")
    return {
        "main0": run_builtin(base / "main0", IDS, 2, MAIN, seed=0),
        "main1": run_builtin(base / "main1", IDS, 2, MAIN, seed=1),
        "weak": run_builtin(base / "weak", IDS, 2, WEAK),
        "strict_judge": run_builtin(base / "strict", IDS, 2, (*MAIN, "judge.pass_threshold=7")),
        "other_suite": run_builtin(base / "other", IDS[:3], 2, MAIN),
    }


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_propose_takes_floors_from_the_worst_draw(runs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "expect.json"
    code, output = invoke("propose", str(runs["main0"]), str(runs["main1"]), "--out", str(out))
    assert code == 0, output
    expected = Expectations.model_validate(json.loads(out.read_text()))
    draws = [d for r in ("main0", "main1") for d in draws_of(load_side(runs[r]))]
    assert len(draws) == 4 == expected.measured_on["draws"]
    assert len({d.passed for d in draws}) > 1  # sampling: the draws really differ
    assert expected.limits.min_passed == min(d.passed for d in draws) - FLIP_HEADROOM
    worst_score = min(d.avg_score for d in draws if d.avg_score is not None)
    assert expected.limits.min_avg_score == pytest.approx(worst_score - SCORE_HEADROOM, abs=1e-4)
    assert expected.limits.max_unmeasured == max(d.unmeasured for d in draws)
    assert expected.limits.max_total_tokens is None  # the builtin reports no usage: not gated
    assert expected.identity.agent == {"kind": "builtin", "model": "builtin-bm25"}
    assert expected.identity.suite["scenarios"] == len(IDS)
    minutes = expected.scenarios["minutes_pronoun_chain"]
    # n counts judged draws: the code judge defers a reply it cannot settle (never guesses)
    assert minutes.draws == 4 and 1 <= minutes.n <= 4


def test_gate_reports_and_enforces_only_when_asked(runs: dict[str, Path], tmp_path: Path) -> None:
    expect = tmp_path / "expect.json"
    invoke("propose", str(runs["main0"]), str(runs["main1"]), "--out", str(expect))
    out = tmp_path / "gate"
    code, output = invoke("gate", str(runs["main1"]), "--expect", str(expect), "--out", str(out))
    assert code == 0, output
    assert "| min_passed |" in output and "Verdict: met" in output
    assert json.loads((out / "gate.json").read_text())["verdict"] == "met"
    weak = ("gate", str(runs["weak"]), "--expect", str(expect), "--out", str(out))
    code, output = invoke(*weak)
    assert code == 0, output  # a miss without --enforce is a report
    assert "MISS" in output and "Verdict: miss" in output
    code, output = invoke(*weak, "--enforce")
    assert code == 1, output
    gate = json.loads((out / "gate.json").read_text())
    missed = {c["name"] for c in gate["checks"] if c["ok"] is False}
    assert "min_avg_score" in missed
    main_worst = next(c for c in gate["checks"] if c["name"] == "min_passed")["main_worst"]
    assert main_worst is not None  # main's measured results are shown beside the run


@pytest.mark.parametrize("other", ["strict_judge", "other_suite"])
def test_another_judge_or_suite_is_not_comparable(
    runs: dict[str, Path], tmp_path: Path, other: str
) -> None:
    expect = tmp_path / "expect.json"
    invoke("propose", str(runs["main0"]), str(runs["main1"]), "--out", str(expect))
    for enforce in ((), ("--enforce",)):
        code, output = invoke(
            "gate", str(runs[other]), "--expect", str(expect), "--out", str(tmp_path), *enforce
        )
        assert code == 3, output
        assert "Not comparable" in output
    field = "judge.rules" if other == "strict_judge" else "suite.scenario_set_digest"
    assert field in output
    code, output = invoke("propose", str(runs["main0"]), str(runs[other]), "--out", str(expect))
    assert code == 3 and "not the same agent model, suite and judge" in output


def test_bad_inputs_exit_2(runs: dict[str, Path], tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    code, output = invoke("gate", str(runs["main0"]), "--expect", str(missing))
    assert code == 2 and "no such expectations file" in output
    broken = tmp_path / "broken.json"
    broken.write_text('{"limits": {}}')
    code, output = invoke("gate", str(runs["main0"]), "--expect", str(broken))
    assert code == 2 and f"{broken}:1: not an expectations file" in output
    code, output = invoke("gate", str(runs["main0"]))
    assert code == 2 and "needs exactly one of --expect FILE" in output and "--baseline" in output
    one = make_card({"a": "P"})
    write_json(tmp_path / "one.json", one)
    code, output = invoke("propose", str(tmp_path / "one.json"), "--out", str(missing))
    assert code == 2 and "at least 2" in output and not missing.exists()


def _loaded(
    card_rows: dict[str, str], usage: dict[str, object] | None = None, **kw: object
) -> LoadedRun:
    card = make_card(card_rows, **kw)  # type: ignore[arg-type]
    if usage:
        card.usage = dict(usage)
    return LoadedRun(card, "card")


def test_usage_ceilings_and_unmeasured_scenarios() -> None:
    usage = {"input_tokens": 3000, "output_tokens": 1000, "cost_usd": 0.4}
    runs = [
        _loaded({"a": "PP", "b": "PF", "c": "PP", "d": "FF"}, usage),
        _loaded({"a": "PP", "b": "FF", "c": "PP", "d": "FF"}, {**usage, "cost_usd": 0.8}),
    ]
    expected = propose(runs)
    assert expected.limits.min_passed == 2 - FLIP_HEADROOM  # worst draw: a and c pass
    assert expected.limits.max_total_tokens == pytest.approx(2000 * USAGE_HEADROOM)
    assert expected.limits.max_cost_usd == pytest.approx(0.4 * USAGE_HEADROOM)  # 0.8 / 2 draws
    pricey = _loaded({"a": "PP", "b": "PP", "c": "PP", "d": "FF"}, {**usage, "cost_usd": 2.0})
    result = check(expected, pricey)
    assert [c.name for c in result.missed] == ["max_cost_usd"]
    lost = check(expected, _loaded({"a": "PF", "b": "PP", "c": "TP", "d": "PP"}, usage))
    assert [c.name for c in lost.missed] == ["max_unmeasured"]  # main always measured c
    changed = {row["id"]: row.get("change") for row in lost.scenarios}
    assert changed["a"] == "fails now (passed in every main draw)"
    assert changed["b"] is None and changed["d"] == "passes now (failed in every main draw)"


def test_identity_ignores_the_agent_configuration_but_not_the_model() -> None:
    base = [_loaded({"a": "PF"}), _loaded({"a": "PP"})]
    expected = propose(base)
    tuned = _loaded({"a": "PP"}, config=with_config("target", config_digest="agent-b"))
    assert check(expected, tuned).comparable  # a new prompt or knob is what the gate is for
    other = _loaded({"a": "PP"}, config=with_config("target", model="other-model"))
    result = check(expected, other)
    assert not result.comparable and result.verdict == "not comparable"
    assert any("agent.model" in d for d in result.differences)
    with pytest.raises(ExpectationsError, match="not the same"):
        propose([*base, other])
