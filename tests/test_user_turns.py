"""No fake user turns: the scripted simulator never sends an objective as a user message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from servers import OpenAIServer, Reply

from agenteval.fileio import read_json
from agenteval.layout import Layout, load_transcript
from agenteval.params import load_params
from agenteval.pipeline import run_all
from agenteval.scorecard import metrics_of

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "eval/scenarios/rag_quality/quarterly_revenue_lookup.yaml"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the suite where turn 2 of one scenario has only an objective."""
    shutil.copytree(ROOT / "eval", tmp_path / "eval")
    path = tmp_path / SCENARIO
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    del raw["turns"][1]["user_message"]
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return tmp_path


IDS = "suite.ids=[quarterly_revenue_lookup, honest_about_limits]"


def test_scripted_simulator_leaves_the_scenario_unmeasured(repo: Path) -> None:
    layout = Layout.run_dir(repo, repo / "out")
    card = run_all(load_params(ROOT / "params.yaml", [IDS]), layout)
    status = {r.id: r.status for r in card.scenarios}
    assert status["quarterly_revenue_lookup"] == "NO_USER_MESSAGE"
    assert status["honest_about_limits"] in ("PASS", "FAIL")
    transcript = load_transcript(layout.transcripts, "quarterly_revenue_lookup", 0)
    assert transcript is not None and transcript.turns == []  # the agent was never asked
    assert "turn(s) [2] have no user_message" in (transcript.error or "")
    assert card.summary.no_user_message == 1 and card.summary.avg_score is not None
    assert card.summary.by_category["rag_quality"].unmeasured == 1
    assert metrics_of(card)["no_user_message"] == 1
    summary = (repo / "out/summary.md").read_text(encoding="utf-8")
    assert "no user message 1" in summary
    assert "NO_USER_MESSAGE" in summary
    assert read_json(repo / "out/metrics.json")["no_user_message"] == 1


def test_an_llm_simulator_writes_the_missing_turn(repo: Path) -> None:
    with OpenAIServer(reply_fn=lambda _body: Reply(text="and the gross margin then?")) as server:
        sets = [
            "suite.ids=[quarterly_revenue_lookup]",
            "simulator.kind=llm",
            "simulator.protocol=openai",
            "simulator.model=sim",
            f"simulator.base_url={server.base_url}",
            "run.cache_dir=null",
        ]
        layout = Layout.run_dir(repo, repo / "out")
        card = run_all(load_params(ROOT / "params.yaml", sets), layout)
        assert server.request_count == 1  # turn 1 is scripted, turn 2 written by the model
    (result,) = card.scenarios
    assert result.status in ("PASS", "FAIL")
    transcript = load_transcript(layout.transcripts, "quarterly_revenue_lookup", 0)
    assert transcript is not None
    assert transcript.turns[1].user_message == "and the gross margin then?"
