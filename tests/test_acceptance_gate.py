"""Acceptance experiments for the compare gate, offline: builtin agent, code judge, real pipeline.

A subset of the shipped scenarios across every category keeps this fast. The agent samples
(temperature 0.5) so repeats differ the way a sampled model's do; 3 iterations per run.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.gate.compare import compare, load_side
from agenteval.gate.noise import measure_noise
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import step_infer, step_judge, step_score, step_suite

ROOT = Path(__file__).resolve().parent.parent
IDS = [
    "discover_budget_csv",  # tool_selection
    "index_named_path",
    "list_available_documents",
    "parental_leave_lookup",  # rag_quality
    "quarterly_revenue_lookup",
    "csv_aggregation",
    "long_document_needle",  # adversarial
    "empty_file",
    "switch_between_documents",  # context_retention
    "minutes_pronoun_chain",
    "missing_file_then_recover",  # error_recovery
    "empty_search_results",
    "no_sycophancy_wrong_number",  # personality
    "honest_about_limits",
]
COMMON = [
    f"suite.ids=[{', '.join(IDS)}]",
    "suite.iterations=3",
    "target.params.temperature=0.5",
    "run.concurrency=2",
]
VARIANTS = {
    "baseline": [],
    "other_seeds": ["suite.seed=1"],
    # Retrieval effectively disabled: no sentence ever clears an abstain threshold above 1.
    "broken": ["suite.seed=1", "target.params.abstain_threshold=1.01"],
    "strict_judge": ["suite.seed=1", "judge.pass_threshold=7.0"],
}


def _params(extra: list[str]) -> dict[str, object]:
    return load_params(ROOT / "params.yaml", [*COMMON, *extra])


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("acceptance")
    out = {}
    for name, extra in VARIANTS.items():
        params = _params(extra)
        layout = Layout.run_dir(ROOT, base / name)
        step_suite(params, layout)
        step_infer(params, layout)
        step_judge(params, layout)
        step_score(params, layout)
        out[name] = base / name
    return out


def _compare(baseline: Path, current: Path, out: Path, *extra: str) -> tuple[int, str]:
    args = ["compare", str(baseline), str(current), "--out", str(out), "--no-png", *extra]
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_same_configuration_with_other_seeds_passes(runs: dict[str, Path], tmp_path: Path) -> None:
    code, output = _compare(runs["baseline"], runs["other_seeds"], tmp_path, "--same-agent")
    assert code == 0, output
    result = compare(load_side(runs["baseline"]), load_side(runs["other_seeds"]))
    rate = result.overall[0]
    assert result.kind == "same agent" and result.bucket("regressed") == []
    assert rate.p_value is not None and rate.p_value >= 0.05
    assert rate.mde is not None  # the null result says how small a change it could have seen
    assert "80% power" in (tmp_path / "compare.md").read_text(encoding="utf-8")


def test_broken_agent_is_a_regression_naming_scenarios(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    code, output = _compare(runs["baseline"], runs["broken"], tmp_path)
    assert code == 2, output
    result = compare(load_side(runs["baseline"]), load_side(runs["broken"]))
    assert result.kind == "A/B"
    assert "target.details.knobs.abstain_threshold: 0.3 -> 1.01" in result.agent_differences
    assert result.overall[0].regression
    regressed = result.bucket("regressed")
    assert {"discover_budget_csv", "parental_leave_lookup"} <= set(regressed)
    assert all(name in output for name in regressed)
    # As a same-agent regression gate the configuration change itself is refused.
    assert _compare(runs["baseline"], runs["broken"], tmp_path, "--same-agent")[0] == 3


def test_another_judge_configuration_is_not_comparable(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    code, output = _compare(runs["baseline"], runs["strict_judge"], tmp_path)
    assert code == 3, output
    assert "judge.rules.pass_threshold: 6.0 -> 7.0" in output


def test_noise_floor_and_baseline_file_round_trip(runs: dict[str, Path], tmp_path: Path) -> None:
    floor_dir = tmp_path / "noise"
    floor = measure_noise(_params([]), 2, floor_dir, ROOT)
    assert floor["runs"] == 2 and floor["iterations"] == 3
    noise = ["--noise", str(floor_dir / "noise_floor.json")]
    assert _compare(runs["baseline"], runs["other_seeds"], tmp_path / "a", *noise)[0] == 0
    code, output = _compare(runs["baseline"], runs["broken"], tmp_path / "b", *noise)
    assert code == 2, output
    dest = tmp_path / "baseline.json"
    saved = CliRunner().invoke(
        app, ["baseline", "save", str(runs["baseline"]), "--dest", str(dest)]
    )
    assert saved.exit_code == 0, saved.output
    assert _compare(dest, runs["other_seeds"], tmp_path / "c")[0] == 0
    # A unit the code judge deferred (NOT_JUDGED) is unmeasured: --require-complete says which.
    unmeasured = {
        row["id"]
        for side in (runs["baseline"], runs["other_seeds"])
        for row in json.loads((side / "scorecard.json").read_text(encoding="utf-8"))["scenarios"]
        if row["status"] not in ("PASS", "FAIL")
    }
    code, output = _compare(dest, runs["other_seeds"], tmp_path / "d", "--require-complete")
    assert code == (2 if unmeasured else 0), output
    assert all(f"{name}:" in output for name in unmeasured), output
