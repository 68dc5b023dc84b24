"""Real files load: scenario and manifest files in the reference system's formats.

tests/fixtures/reference_suite/ holds one file per case the reference format allows and we
used to refuse (captured_from mappings, fact ids unique per document, turn-level personas,
documents known only by a path that exists, a corpus sub-folder manifest whose documents are
not all committed, turns with only an objective) and one genuinely broken file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.params import DEFAULTS, deep_merge
from agenteval.simulators.llm import LLMSimulator
from agenteval.suite.build import build_suite
from agenteval.suite.validate import validate

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "fixtures/reference_suite"
BROKEN = "eval/scenarios/broken/missing_fact_reference.yaml"


@pytest.fixture
def suite_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ref"
    shutil.copytree(FIXTURE, root)
    shutil.copytree(ROOT / "eval/agents", root / "eval/agents")  # the builtin agent's phrasings
    monkeypatch.chdir(root)
    return root


def test_every_reference_case_validates_apart_from_the_broken_file() -> None:
    result = validate([], root=FIXTURE)
    errors = [str(p) for p in result.problems if p.severity == "error"]
    assert errors and all(e.startswith(BROKEN + ":") for e in errors), errors
    assert any("fact 'q4_revenue' not in document 'acme_q3_report'" in e for e in errors)
    assert any("acme_q4_report.md' does not exist" in e for e in errors)
    warnings = sorted(p.message for p in result.problems if p.severity == "warning")
    assert len(warnings) == 2
    assert "annual_10k.pdf is not on disk" in warnings[1]
    assert warnings[0].startswith("corpus_doc 'field_notes' has no manifest entry")
    folders = ["captured", "rag_quality", "real_world", "context_retention"]
    clean = validate([FIXTURE / "eval/scenarios" / f for f in folders], root=FIXTURE)
    assert clean.ok and len(clean.scenarios) == 5


def test_strict_keeps_the_old_strictness() -> None:
    result = validate([], root=FIXTURE, strict=True)
    errors = [p for p in result.problems if p.severity == "error"]
    assert {p.path for p in errors} == {
        BROKEN,
        "eval/scenarios/captured/captured_pump_session.yaml",
        "eval/corpus/real_world/manifest.json",
    }
    runner = CliRunner()
    assert runner.invoke(app, ["validate", "--root", str(FIXTURE), "--strict"]).exit_code == 2


def test_the_loaded_files_keep_what_they_say() -> None:
    by_id = {s.scenario.id: s.scenario for s in validate([], root=FIXTURE).scenarios}
    captured = by_id["captured_pump_session"].captured_from
    assert not isinstance(captured, str) and captured is not None
    assert captured.session_id == "29c211c7-31b5-4084-bb3f-1825c0210942"
    assert captured.captured_at == "2026-03-18T14:02:11+00:00"  # a YAML timestamp, kept as text
    follow = by_id["persona_switch_followup"]
    assert [follow.persona_of(t) for t in follow.turns] == ["power_user", "confused_user"]


def test_facts_resolve_per_document() -> None:
    params = deep_merge(DEFAULTS, {"suite": {"ids": ["two_reports_same_fact_id"]}})
    (item,) = build_suite(params, FIXTURE).items
    assert sorted(item.facts) == [
        "acme_q3_report:q3_revenue",
        "globex_q3_report:q3_revenue",
        "yoy_growth",
    ]
    turns = item.scenario.turns
    gts = [t.ground_truth for t in turns]
    assert all(gt is not None for gt in gts)
    answers = [[f.answer for f in item.facts_of(gt)] for gt in gts if gt is not None]
    assert answers == [["$14.2 million"], ["$9.1 million"], ["23%"]]
    assert item.fact("q3_revenue", "globex_q3_report") is not None


def test_the_llm_simulator_uses_the_turns_own_persona() -> None:
    params = deep_merge(
        DEFAULTS, {"simulator": {"kind": "llm", "model": "m", "base_url": "http://127.0.0.1:9/v1"}}
    )
    simulator = LLMSimulator(params, ROOT)
    follow = next(
        s.scenario
        for s in validate([], root=FIXTURE).scenarios
        if s.scenario.id == "persona_switch_followup"
    )
    first, second = (simulator.messages(follow, t, [])[0].content for t in follow.turns)
    assert "power_user" in first and "confused_user" not in first
    assert "confused_user" in second


def test_run_skips_the_invalid_file_lists_it_and_exits_2(suite_root: Path) -> None:
    out = suite_root / "run"
    result = CliRunner().invoke(
        app, ["run", "--out", str(out), "--no-progress", "--set", "tracking.enabled=false"]
    )
    assert result.exit_code == 2, result.output
    assert f"{BROKEN}:15: fact 'q4_revenue' not in document" in result.output
    assert "1 invalid scenario file(s) skipped" in result.output
    card = json.loads((out / "scorecard.json").read_text())
    status = {r["id"]: r["status"] for r in card["scenarios"]}
    assert status.pop("annual_10k_revenue") == "SKIPPED_NO_DOCUMENT"
    assert status.pop("persona_switch_followup") == "NO_USER_MESSAGE"
    assert set(status) == {"captured_pump_session", "two_reports_same_fact_id",
                           "larkspur_budget_lookup"}  # fmt: skip
    # measured: the code judge may defer a reply it cannot settle (NOT_JUDGED), never skip it
    assert set(status.values()) <= {"PASS", "FAIL", "NOT_JUDGED"}
    assert [i["path"] for i in card["invalid"]] == [BROKEN]
    summary = (out / "summary.md").read_text()
    assert "## Invalid scenario files (skipped: 1)" in summary and BROKEN in summary


def test_filters_apply_before_validation(suite_root: Path) -> None:
    out = suite_root / "run"
    result = CliRunner().invoke(
        app,
        ["run", "--category", "rag_quality", "--out", str(out), "--no-progress",
         "--set", "tracking.enabled=false"],
    )  # fmt: skip
    # The filter picked the valid scenario and the run went ahead (not refused: exit 2); the
    # code judge leaves that scenario NOT_JUDGED, and a run that measured nothing exits 3.
    assert result.exit_code == 3 and "nothing measured" in result.output, result.output
    card = json.loads((out / "scorecard.json").read_text())
    assert [r["id"] for r in card["scenarios"]] == ["two_reports_same_fact_id"]
    assert card["invalid"] == []


def test_strict_run_refuses_before_any_work(suite_root: Path) -> None:
    out = suite_root / "run"
    result = CliRunner().invoke(
        app, ["run", "--strict", "--out", str(out), "--set", "tracking.enabled=false"]
    )
    assert result.exit_code == 2
    assert BROKEN in result.output and not (out / "scorecard.json").exists()


def test_unknown_scenario_names_the_flag_not_params_yaml(suite_root: Path) -> None:
    result = CliRunner().invoke(app, ["run", "--scenario", "two_reports_same_fact", "--out",
                                      str(suite_root / "run")])  # fmt: skip
    assert result.exit_code == 2
    assert result.output.startswith(
        "--scenario two_reports_same_fact: no scenario file has this id "
        "(did you mean two_reports_same_fact_id?)"
    )
    assert "params.yaml" not in result.output
