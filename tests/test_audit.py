"""BLOCKED_BY_ARCHITECTURE by evidence: declared agent limits, the audit, and the scores."""

from __future__ import annotations

from pathlib import Path

import pytest
from gate_cards import make_card
from typer.testing import CliRunner

from agenteval.cli import app
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all
from agenteval.schema.params import AgentLimits
from agenteval.schema.scenario import Scenario
from agenteval.suite.audit import blocked_reasons, history_needed
from agenteval.uncertainty import tally

ROOT = Path(__file__).resolve().parents[1]


def scenario(category: str = "rag_quality", **turn2: object) -> Scenario:
    base = {"objective": "o", "success_criteria": "s"}
    return Scenario.model_validate(
        {
            "id": "s",
            "category": category,
            "persona": "power_user",
            "setup": {"index_documents": []},
            "turns": [
                base
                | {
                    "turn": 1,
                    "user_message": "Who owns the budget line?",
                    "ground_truth": {"fact_id": "owner", "expected_answer": "Lior"},
                },
                base
                | {
                    "turn": 2,
                    "user_message": "And the amount?",
                    "ground_truth": {"fact_id": "amount", "expected_answer": "$5"},
                },
                base
                | {
                    "turn": 3,
                    "user_message": "Who was that owner again?",
                    "expected_tools": ["query_documents"],
                    "ground_truth": {"fact_id": "owner", "expected_answer": "Lior"},
                },
            ]
            + ([base | {"turn": 4, **turn2}] if turn2 else []),
        }
    )


def test_history_reach_is_the_longest_recall() -> None:
    assert history_needed(scenario()) == (3, 1, 2)  # turn 3 recalls turn 1's fact
    assert blocked_reasons(scenario(), AgentLimits(history_turns=2)) == []
    (found,) = blocked_reasons(scenario(), AgentLimits(history_turns=1))
    assert "turn 3 needs turn 1" in found.reason and found.needs == "history_turns >= 2"


def test_context_retention_turns_need_the_turn_before() -> None:
    chained = scenario("context_retention", objective="o", success_criteria="s")
    assert blocked_reasons(chained, AgentLimits(history_turns=2)) == []
    assert blocked_reasons(chained, AgentLimits(history_turns=0))[0].needs == "history_turns >= 2"


def test_message_length_and_tools_are_evidence() -> None:
    long = blocked_reasons(scenario(), AgentLimits(message_chars=24))
    assert [b.reason.split("'")[0] for b in long] == ["turn 1", "turn 3"]  # 25 > 24 > 15
    assert long[0].reason.startswith("turn 1's message has 25 characters")
    (tool,) = blocked_reasons(scenario(), AgentLimits(tools=["index_document"]))
    assert "expects tool 'query_documents'" in tool.reason
    assert blocked_reasons(scenario(), AgentLimits()) == []  # nothing declared, nothing blocked


def test_audit_lists_blocked_scenarios_without_running_anything(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["audit", "--scenario", "recall_entity_across_turns", "--scenario",
         "quarterly_revenue_lookup", "--set", "target.limits.history_turns=1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "BLOCKED recall_entity_across_turns: turn 3 needs turn 1" in result.output
    assert "quarterly_revenue_lookup" not in result.output.split("\n")[0]
    assert "1 of 2 scenario(s) blocked" in result.output


def test_a_run_scores_evidence_as_blocked_and_capped(tmp_path: Path) -> None:
    sets = ["suite.ids=[recall_entity_across_turns, quarterly_revenue_lookup]",
            "target.limits.history_turns=1"]  # fmt: skip
    card = run_all(load_params(ROOT / "params.yaml", sets), Layout.run_dir(ROOT, tmp_path))
    rows = {r.id: r for r in card.scenarios}
    blocked = rows["recall_entity_across_turns"]
    assert blocked.status == "BLOCKED_BY_ARCHITECTURE"
    assert (blocked.root_cause or "").startswith("blocked by architecture: turn 3 needs turn 1")
    assert rows["quarterly_revenue_lookup"].status in ("PASS", "FAIL")
    assert card.summary.blocked == 1
    assert card.config["target"]["limits"] == {"history_turns": 1}


def test_noise_statistics_cap_blocked_like_fail() -> None:
    card = make_card({"a": "B", "b": "P"}, scores={"a": [9.0], "b": [8.0]})
    assert tally(card)["a"].scores == [pytest.approx(5.99)]
