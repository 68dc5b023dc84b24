"""eval/tiers.yaml: validated as path:line, lanes selected by `run --tier` / `suite.tier`; and
drafts under drafts/ are never run or failed on unless named."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.fileio import read_json
from agenteval.params import load_params
from agenteval.suite.build import SuiteError, build_suite
from agenteval.suite.tiers import load_tiers
from agenteval.suite.validate import validate

ROOT = Path(__file__).resolve().parents[1]

SCENARIO = """\
id: {id}
category: rag_quality
persona: power_user
setup:
  index_documents:
    - path: eval/corpus/documents/report.md
turns:
  - turn: 1
    objective: Ask about revenue
    ground_truth:
      expected_answer: "$8.6 million"
"""


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "eval/corpus/documents").mkdir(parents=True)
    (tmp_path / "eval/scenarios/rag").mkdir(parents=True)
    (tmp_path / "eval/corpus/documents/report.md").write_text("Revenue was $8.6 million.\n")
    (tmp_path / "eval/corpus/manifest.json").write_text(json.dumps({"documents": []}))
    for sid in ("alpha", "beta", "gamma"):
        (tmp_path / f"eval/scenarios/rag/{sid}.yaml").write_text(SCENARIO.format(id=sid))
    return tmp_path


def tiers(repo: Path, text: str) -> None:
    (repo / "eval/tiers.yaml").write_text(textwrap.dedent(text))


def problems(repo: Path) -> list[str]:
    return [str(p) for p in validate([], root=repo).problems]


def test_shipped_tiers_name_every_shipped_scenario_with_a_reason() -> None:
    loaded, found = load_tiers(ROOT / "eval/tiers.yaml")
    assert loaded is not None and found == []
    shipped = {item.scenario.id for item in validate([], root=ROOT).scenarios}
    assert set(loaded.tier) == shipped
    assert all(reason.strip() and "\n" not in reason for reason in loaded.reason.values())
    assert {t for t in loaded.tier.values()} <= {"smoke", "full", "backlog"}
    assert [str(p) for p in validate([], root=ROOT).problems if "tiers" in p.path] == []


def test_unknown_ids_and_bad_entries_are_path_line_errors(repo: Path) -> None:
    tiers(
        repo,
        """\
        smoke:
          alpha: stable
          nosuch: a typo
        full:
          alpha: listed again
          beta:
        nightly:
          gamma: not a tier
        """,
    )
    found = problems(repo)
    assert "eval/tiers.yaml:3: unknown scenario id 'nosuch'" in found
    assert any(m.startswith("eval/tiers.yaml:5: 'alpha' is already in tier smoke") for m in found)
    assert "eval/tiers.yaml:6: beta: needs a one-line reason" in found
    assert any(m.startswith("eval/tiers.yaml:7: unknown tier 'nightly'") for m in found)
    result = CliRunner().invoke(app, ["validate", "--root", str(repo)])
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_duplicates_within_a_tier_and_long_reasons(repo: Path) -> None:
    tiers(repo, f"full:\n  alpha: one\n  beta: two\n  alpha: three\n  gamma: {'x' * 250}\n")
    found = problems(repo)
    assert "eval/tiers.yaml:4: 'alpha' is listed twice (also line 2)" in found
    assert any(m.startswith("eval/tiers.yaml:5: gamma: the reason must be one line") for m in found)


def test_unassigned_scenarios_warn_and_run_in_full(repo: Path) -> None:
    tiers(repo, "smoke:\n  alpha: stable\nbacklog:\n  gamma: broken rubric\n")
    found = problems(repo)
    assert found == ["eval/tiers.yaml:1: warning: 1 scenario(s) have no tier and run in 'full': "
                     "['beta']"]  # fmt: skip
    params = load_params(None, [])
    chosen = {}
    for lane in ("smoke", "full", "backlog"):
        params["suite"]["tier"] = lane
        chosen[lane] = [i.scenario.id for i in build_suite(params, repo).items]
    assert chosen == {"smoke": ["alpha"], "full": ["alpha", "beta"], "backlog": ["gamma"]}


def test_a_tier_run_refuses_a_broken_or_empty_lane(repo: Path) -> None:
    params = load_params(None, ["suite.tier=backlog"])
    with pytest.raises(SuiteError, match="no tiers file"):
        build_suite(params, repo)
    tiers(repo, "smoke:\n  alpha: ok\n")
    with pytest.raises(SuiteError, match="selects none"):
        build_suite(params, repo)
    tiers(repo, "smoke:\n  alpha: ok\n  alpha: twice\n")
    with pytest.raises(SuiteError, match="listed twice"):
        build_suite(load_params(None, ["suite.tier=smoke"]), repo)


def test_run_tier_smoke_runs_exactly_the_smoke_lane(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["run", "--tier", "smoke", "--out", str(tmp_path), "--no-progress",
         "--set", "tracking.enabled=false"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    loaded, _ = load_tiers(ROOT / "eval/tiers.yaml")
    assert loaded is not None
    smoke = sorted(i for i, t in loaded.tier.items() if t == "smoke")
    assert sorted(read_json(tmp_path / "scorecard.json")["config"]["scenarios"]) == smoke
    assert read_json(tmp_path / "params.json")["suite"]["tier"] == "smoke"
    bad = CliRunner().invoke(app, ["run", "--tier", "nightly", "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "suite.tier" in bad.output
    assert not (tmp_path / "x" / "scorecard.json").exists()


def test_drafts_are_left_out_unless_named(repo: Path) -> None:
    drafts = repo / "eval/scenarios/drafts"
    drafts.mkdir()
    # A draft has no ground truth yet: invalid as a scenario, harmless as a draft.
    (drafts / "delta.yaml").write_text(
        SCENARIO.format(id="delta").split("    ground_truth")[0] + "    ground_truth: null\n"
    )
    result = validate([], root=repo)
    assert result.ok and [p.name for p in result.drafts] == ["delta.yaml"]
    assert "delta" not in {i.scenario.id for i in result.scenarios}
    cli = CliRunner().invoke(app, ["validate", "--root", str(repo)])
    assert cli.exit_code == 0 and "1 draft(s) under a drafts/ folder left out" in cli.output
    suite = build_suite(load_params(None, []), repo)
    assert "delta" not in {i.scenario.id for i in suite.items}
    named = validate([drafts / "delta.yaml"], root=repo)
    assert any("needs a ground_truth" in str(p) for p in named.problems)
    walked = validate([drafts], root=repo)  # the drafts folder itself is named
    assert [i.scenario.id for i in walked.scenarios] == ["delta"]
