"""The judge checked inside every run: mixed-in controls, repeats, probes, and the gate.

Planted judges on real HTTP (tests/servers/judges.py): a lenient one must show up in the
run's own calibration and make `compare` refuse; an inconsistent one must fail
self-consistency; a length-biased one must move under the padding probe.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from gate_cards import make_card
from servers import OpenAIServer
from servers.judges import inconsistent, length_biased, lenient

from agenteval.controls.build import case_id
from agenteval.controls.load import load_controls, sample, select
from agenteval.controls.measure import chosen_controls, measure_judge
from agenteval.controls.probes import PAD_FACTOR, SELF_ASSESSMENT, filler, padded, probe_pair
from agenteval.controls.run import pairs_of
from agenteval.fileio import read_json
from agenteval.gate.compare import EXIT_NOT_COMPARABLE, compare
from agenteval.judges.repeats import kept_index
from agenteval.layout import Layout
from agenteval.params import DEFAULTS, deep_merge, load_params
from agenteval.pipeline import run_evaluation
from agenteval.schema.corpus import Manifest
from agenteval.schema.scorecard import Calibration, Estimate, Scorecard
from agenteval.schema.verdict import Sample, Verdict
from agenteval.scoring import ScenarioInfo, ScoringRules, score_scenario

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = Manifest.model_validate(read_json(ROOT / "eval/corpus/manifest.json"))
SCENARIOS = ["csv_cell_lookup", "quarterly_revenue_lookup"]


def run_params(server: OpenAIServer, kind: str = "hybrid", **judge: Any) -> dict[str, Any]:
    params = load_params(ROOT / "params.yaml")
    params["suite"]["ids"] = SCENARIOS
    params["judge"].update(
        {"kind": kind, "model": "judge-model", "protocol": "openai", "base_url": server.base_url}
    )
    params["judge"].update(judge)
    params["run"]["cache_dir"] = None
    params["tracking"]["enabled"] = False
    return params


# -- calibration inside the run -----------------------------------------------------------
@pytest.fixture(scope="module")
def lenient_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Scorecard, list[Any]]:
    out = tmp_path_factory.mktemp("inrun")
    with OpenAIServer(reply_fn=lenient()) as server:
        params = run_params(server, "llm", controls_per_run=8)
        card = run_evaluation(params, Layout.run_dir(ROOT, out)).scorecard
        bodies = [r.json for r in server.requests]
    return out, card, bodies


def test_controls_judged_in_the_run_are_its_calibration(
    lenient_run: tuple[Path, Scorecard, list[Any]],
) -> None:
    out, card, _ = lenient_run
    cal = card.calibration
    assert cal is not None and cal.controls == 8 and cal.split == "held"
    labels = [c.label for c in cal.cases]
    assert labels.count("fail") == labels.count("pass") == 4  # a small sample sees both
    assert cal.false_passes == 4 and cal.false_pass_rate.value == 1.0
    assert cal.false_pass_rate.low is not None and cal.false_pass_rate.low > 0.4  # Wilson
    assert cal.agreement.value == 0.5 and cal.agreement.low is not None
    assert not cal.passed and any("false pass" in m for m in cal.misses)
    # Kept apart: no control is a scenario result, and the quality metrics are the suite's.
    assert {r.id for r in card.scenarios} == set(SCENARIOS) and card.summary.total == 2
    metrics = read_json(out / "metrics.json")
    assert metrics["calibration.false_passes"] == 4 and metrics["calibration.gate_passed"] == 0
    assert "calibration.agreement.low" in metrics and metrics["total"] == 2
    summary = (out / "summary.md").read_text()
    assert "Calibration on 8 labelled held controls" in summary
    assert "MISSES the controls gate" in summary and "case_" not in summary


def test_the_judge_cannot_tell_a_control_from_a_scenario(
    lenient_run: tuple[Path, Scorecard, list[Any]],
) -> None:
    out, card, bodies = lenient_run
    mixed = read_json(out / "data/controls/mixed.json")["cases"]
    assert card.calibration is not None
    controls = {c.control for c in card.calibration.cases}
    shown = "\n".join(json.dumps(b) for b in bodies)
    cases = "\n".join(m["content"] for b in bodies for m in b["messages"] if m["role"] == "user")
    for row in mixed:
        assert row["case"] == case_id(row["control"])
        assert row["control"] not in shown  # nowhere in any request
        assert "_" not in row["class"] or row["class"] not in cases
    assert "control" not in cases.lower()
    # Every turn case has the same sections in the same order, real or control.
    turns = [b["messages"][1]["content"] for b in bodies if "# Turn judge" in json.dumps(b)]
    shapes = {tuple(re.findall(r"^## (\w+)", t, re.M)) for t in turns}
    assert len(shapes) == 1 and len(turns) == 3 + len(controls)  # 1 + 2 scenario turns


def test_compare_refuses_a_run_whose_judge_missed_the_gate(
    lenient_run: tuple[Path, Scorecard, list[Any]],
) -> None:
    _, card, _ = lenient_run
    good = card.model_copy(
        update={"calibration": card.calibration.model_copy(update={"passed": True, "misses": []})}  # type: ignore[union-attr]
    )
    result = compare(good, card)
    assert result.exit_code == EXIT_NOT_COMPARABLE
    assert any("current run's judge misses the controls gate" in r for r in result.reasons)
    assert compare(good, good).exit_code != EXIT_NOT_COMPARABLE


def test_a_synthetic_card_without_calibration_is_compared_with_a_warning() -> None:
    judge = {**make_card({}).config["judge"], "kind": "llm"}
    base = make_card({"a": "PP"}, config={"judge": judge})
    cal = Calibration(
        controls=20, judged=20, coverage=1.0, agreement=Estimate(value=0.7),
        kappa=Estimate(value=0.4), false_passes=3, false_pass_rate=Estimate(value=0.3),
        false_fails=3, false_fail_rate=0.3, passed=False, misses=["agreement 0.700 < 0.95"],
    )  # fmt: skip
    result = compare(base, base)
    assert result.exit_code != EXIT_NOT_COMPARABLE
    assert any("no in-run calibration" in w for w in result.warnings)
    failing = base.model_copy(update={"calibration": cal})
    refused = compare(failing, base)
    assert refused.exit_code == EXIT_NOT_COMPARABLE
    assert "baseline run's judge misses the controls gate" in refused.reasons[0]


# -- self-consistency -----------------------------------------------------------------------
def test_an_inconsistent_judge_fails_self_consistency_on_controls(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=inconsistent(seed=1)) as server:
        params = run_params(server, "llm")
        report = measure_judge(params, ROOT, tmp_path, "held", repeats=3, n=10).report
    sc = report["self_consistency"]
    assert sc["repeats"] == 3 and sc["items"] == 10 and sc["flip_rate"] >= 0.5
    assert sc["score_sem"] > 1.0 and sc["flip_rate_low"] > 0.2
    assert any("self-consistency" in m for m in report["misses"]["held"])
    assert "## Self-consistency" in (tmp_path / "controls.md").read_text()


def test_repeats_in_a_run_report_flip_rate_and_keep_the_majority(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=inconsistent(seed=2)) as server:
        params = run_params(server, "llm", repeats=3, majority=True)
        card = run_evaluation(params, Layout.run_dir(ROOT, tmp_path)).scorecard
        requests = server.request_count
    assert requests == 3 * (1 + 2 + 2)  # K samples x (turns + scenario calls)
    sc = card.self_consistency
    assert sc is not None and sc.repeats == 3 and sc.items == 2 and sc.majority
    verdict = Verdict.model_validate(read_json(tmp_path / "data/verdicts/csv_cell_lookup/0.json"))
    assert len(verdict.samples) == 3 and sum(s.kept for s in verdict.samples) == 1
    statuses = [s.status for s in verdict.samples]
    kept = next(s for s in verdict.samples if s.kept)
    assert statuses.count(kept.status) >= 2 or kept.status == "FAIL"
    assert verdict.judge.details["repeats"] == 3
    metrics = read_json(tmp_path / "metrics.json")
    assert metrics["consistency.repeats"] == 3 and "consistency.flip_rate" in metrics
    assert "Self-consistency over 3 judgings" in (tmp_path / "summary.md").read_text()


def test_majority_ties_keep_fail_and_the_median_score() -> None:
    def samples(*pairs: tuple[str, float | None]) -> list[Sample]:
        return [Sample(status=s, score=x) for s, x in pairs]

    assert kept_index(samples(("PASS", 8.0), ("FAIL", 3.0)), majority=True) == 1
    assert kept_index(samples(("PASS", 8.0), ("FAIL", 3.0)), majority=False) == 0
    three = samples(("PASS", 9.0), ("PASS", 6.5), ("FAIL", 2.0), ("PASS", 7.0))
    assert kept_index(three, majority=True) == 3  # PASS wins; 7.0 is its median
    assert kept_index(samples(("ERRORED", None), ("ERRORED", None)), majority=True) == 0


# -- bias probes ----------------------------------------------------------------------------
def test_padding_is_true_irrelevant_text_three_times_the_reply() -> None:
    fill = filler(MANIFEST, ROOT)
    assert fill and all(not re.search(r"\d", s) for ss in fill.values() for s in ss)
    reply = "Net revenue was $8.6 million."
    others = [s for doc, ss in fill.items() if doc != "harbor_lantern_q2_report" for s in ss]
    longer = padded(reply, "k", others)
    assert longer.startswith(reply + "\n\n") and len(longer) >= PAD_FACTOR * len(reply)
    added = longer[len(reply) + 2 :]
    assert all(s in added for s in added.split(". ")[0:1])
    texts = {p: (ROOT / "eval/corpus/documents" / p).read_text() for p in
             ("fenwick_orla_handbook.md", "quillfeather_migration_minutes.md",
              "kestrel_incident_log.txt", "saltmarsh_travel_expense_policy.txt")}  # fmt: skip
    first = added.split(". ")[0].rstrip(".")
    assert any(first in t for t in texts.values())  # true: quoted from the corpus
    assert padded(reply, "k", others) == longer  # stable


def test_probes_change_only_the_judged_reply() -> None:
    params = deep_merge(DEFAULTS, {})
    manifest, controls = chosen_controls(params, ROOT, "held", 4)
    pairs = pairs_of(controls, manifest, ROOT)
    fill = filler(manifest, ROOT)
    item, said = probe_pair("self_assessment", pairs[0], ["x"], fill)
    assert said.turns[-1].response.endswith(SELF_ASSESSMENT)
    assert said.turns[:-1] == pairs[0][1].turns[:-1] and item == pairs[0][0]
    assert probe_pair("truth_after", pairs[0], [], fill) == pairs[0]


def test_a_length_biased_judge_moves_under_padding_and_code_does_not(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=length_biased(chars=200)) as server:
        params = run_params(server, "llm")
        report = measure_judge(params, ROOT, tmp_path / "llm", "held", n=12, probes=True).report
    padding = report["probes"]["padding"]
    assert padding["mean_shift"]["value"] > 2 and padding["mean_shift"]["low"] > 0
    assert padding["flips_to_pass"] > 0 and padding["flip_rate"] > 0
    assert report["probes"]["truth_after"]["flips"] == 0  # this judge ignores the order
    md = (tmp_path / "llm" / "controls.md").read_text()
    assert "## Bias probes" in md and "padding (true irrelevant text, 3x the reply)" in md
    code = measure_judge(deep_merge(DEFAULTS, {}), ROOT, tmp_path / "code", "held", n=12,
                         probes=True).report  # fmt: skip
    assert code["probes"]["truth_after"]["mean_shift"]["value"] == 0.0
    assert {p["flips_to_pass"] for p in code["probes"].values()} == {0}


def test_a_stable_sample_of_both_labels() -> None:
    loaded = select(load_controls(ROOT / "eval/judge_controls", MANIFEST, ROOT), "held")
    chosen = sample(loaded, 7)
    assert [c.control.label.verdict for c in chosen].count("fail") == 4
    assert sample(loaded, 7) == chosen and sample(loaded, None) == loaded


# -- critical severity ------------------------------------------------------------------------
@pytest.mark.parametrize(("severity", "status"), [("critical", "FAIL"), ("high", "PASS")])
def test_a_judge_fail_stands_only_in_a_critical_scenario(severity: str, status: str) -> None:
    from agenteval.schema.transcript import Participant
    from agenteval.schema.verdict import TurnVerdict

    verdict = Verdict(
        scenario_id="s", scenario_digest="d", transcript_digest="t",
        judge=Participant(kind="llm"), status="FAIL",
        turns=[TurnVerdict(turn=1, scores={"correctness": 9.0, "personality": 9.0})],
    )  # fmt: skip
    info = ScenarioInfo("s", "c", severity, 1)
    result = score_scenario(info, "COMPLETED", verdict, ScoringRules())
    assert result.status == status and result.warnings


def test_bad_control_files_stop_a_run_before_the_agent(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agenteval.cli import app

    bad = tmp_path / "controls"
    bad.mkdir()
    (bad / "a.yaml").write_text(
        "controls:\n  - id: x\n    class: t\n    fact: nope\n    reply: r\n"
        "    label: {verdict: pass}\n",
        encoding="utf-8",
    )
    out = tmp_path / "run"
    result = CliRunner().invoke(
        app,
        [
            "run",
            "--scenario",
            "csv_cell_lookup",
            "--out",
            str(out),
            "--no-progress",
            "--set",
            "judge.controls_per_run=4",
            "--set",
            f"controls.folder={bad}",
            "--set",
            "tracking.enabled=false",
        ],
    )
    assert result.exit_code == 2 and "a.yaml:2: x: unknown fact 'nope'" in result.output
    assert not (out / "data" / "transcripts").exists()  # refused before the agent ran
