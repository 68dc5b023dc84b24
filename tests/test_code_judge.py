"""The code judge: precision table at its boundaries, names, abstention, tools, loops."""

from __future__ import annotations

import asyncio

import pytest

from agenteval.judges.code import (
    CodeJudge,
    abstains,
    answer_match,
    correctness,
    efficiency,
    error_recovery,
    tool_selection,
)
from agenteval.judges.numbers import precision_score, quantities
from agenteval.schema.corpus import Fact
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.status import Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn


@pytest.mark.parametrize(
    ("deviation", "score"),
    [(0.0, 10), (0.01, 10), (0.0101, 8), (0.05, 8), (0.0501, 4), (0.15, 4), (0.1501, 1),
     (0.5, 1), (0.5001, 0), (3.0, 0)],
)  # fmt: skip
def test_precision_table_boundaries(deviation: float, score: float) -> None:
    assert precision_score(deviation) == score


@pytest.mark.parametrize(
    ("expected", "reply", "score"),
    [
        ("$14.2 million", "Revenue was $14.2M.", 10),
        ("$14.2 million", "Revenue was $14,200,000.", 10),
        ("$14.2 million", "Revenue was 14.2 (USD millions).", 10),
        ("$14.2 million", "Revenue was $14.5 million.", 8),  # 2.1% off
        ("$14.2 million", "Revenue was $15.5 million.", 4),  # 9.2% off
        ("$14.2 million", "Revenue was $18 million.", 1),  # 26.8% off
        ("$14.2 million", "Revenue was $30 million.", 0),
        ("$14.2 million", "Revenue was strong.", 0),
        ("23%", "Growth was 23 percent.", 10),
        ("$50K", "The threshold is $50,000.", 10),
        ("$1.3B", "The budget is 1.3 billion dollars.", 10),
        ("15-18%", "We project 16% growth.", 10),  # inside the range
        ("15-18%", "We project 18.5% growth.", 8),  # 2.8% from the nearest end (18)
        ("15-18%", "We project 19% growth.", 4),  # 5.6% from the nearest end
        ("15-18%", "Between 15% and 18%.", 10),
    ],
)
def test_numeric_answers(expected: str, reply: str, score: float) -> None:
    assert answer_match(expected, reply).score == score


def test_names_and_dates() -> None:
    assert answer_match("Priya Raman", "The owner is Priya Raman.").score == 10
    assert answer_match("Priya Raman", "The owner is Priya Shah.").score == 4  # half the name
    assert answer_match("Priya Raman", "The owner is Tomas Berg.").score == 0
    assert answer_match("2026-03-14", "It happened on 2026-03-14.").score == 10
    assert answer_match("2026-03-14", "It happened on 2026-03-15.").score == 0


def test_quantities_ignore_identifiers_and_dates() -> None:
    assert [q.low for q in quantities("Q3 2025 revenue was $14.2 million")] == [2025, 14.2e6]
    assert quantities("on 2026-03-14 at 2:00 PM") == []


def turn(**kw: object) -> Turn:
    return Turn.model_validate({"turn": 1, "objective": "ask", **kw})


def said(response: str, calls: list[ToolCall] | None = None) -> TranscriptTurn:
    return TranscriptTurn(turn=1, user_message="q", response=response, tool_calls=calls or [])


QUERY = ToolCall(name="query_documents", arguments={"query": "x"})


def test_expected_null_requires_abstention() -> None:
    t = turn(ground_truth={"expected_answer": None})
    assert correctness(t, said("It is not in the documents.", [QUERY])).score == 10  # type: ignore[union-attr]
    assert correctness(t, said("The CEO is Dana Li.", [QUERY])).score == 0  # type: ignore[union-attr]


def test_lazy_refusal_and_refusal() -> None:
    t = turn(ground_truth={"expected_answer": "$8.6 million"})
    lazy = correctness(t, said("I don't know."))
    assert lazy is not None and lazy.score == 0 and "lazy refusal" in lazy.reason
    after_search = correctness(t, said("I could not find that.", [QUERY]))
    assert after_search is not None and after_search.score == 0
    assert "lazy" not in after_search.reason


def test_phrases_and_tools_as_correctness_and_unjudgeable_turns() -> None:
    t = turn(ground_truth={"expected_phrases": ["Fairweather"]})
    assert correctness(t, said("Ask fairweather ops.")).score == 10  # type: ignore[union-attr]
    listing = turn(expected_tools=["list_documents"], success_criteria="lists docs")
    listed = said("Here", [ToolCall(name="list_documents")])
    assert correctness(listing, listed).score == 10  # type: ignore[union-attr]
    assert correctness(listing, said("Here")).score == 0  # type: ignore[union-attr]
    prose = turn(success_criteria="Agent is friendly")
    assert correctness(prose, said("hello")) is None


def test_tool_selection_expected_and_forbidden() -> None:
    scenario = Scenario.model_validate(
        {"id": "s", "category": "c", "persona": "p", "setup": {"index_documents": []},
         "turns": [{"turn": 1, "objective": "o"}], "forbidden_tools": ["read_document"]}
    )  # fmt: skip
    t = turn(expected_tools=["query_documents"], forbidden_tools=["index_document"])
    assert tool_selection(scenario, t, [QUERY]).score == 10  # type: ignore[union-attr]
    assert tool_selection(scenario, t, [QUERY, ToolCall(name="index_document")]).score == 0  # type: ignore[union-attr]
    assert tool_selection(scenario, t, [QUERY, ToolCall(name="read_document")]).score == 0  # type: ignore[union-attr]
    assert tool_selection(scenario, t, []).score == 0  # type: ignore[union-attr]


def test_efficiency_detects_loops_and_repeats() -> None:
    a = ToolCall(name="query_documents", arguments={"query": "a"})
    b = ToolCall(name="query_documents", arguments={"query": "b"})
    assert efficiency([a, a, a]).score == 0
    assert efficiency([a, b, a, b]).score == 0
    assert efficiency([a, b, a]).score == 7
    assert efficiency([a, b]).score == 10
    assert efficiency([]).score == 10


def test_error_recovery_only_when_a_tool_failed() -> None:
    failed = ToolCall(name="index_document", ok=False, error="file not found: x")
    assert error_recovery(said("Done.", [QUERY])) is None
    assert error_recovery(said("I could not find that file.", [failed])).score == 10  # type: ignore[union-attr]
    assert error_recovery(said("Here is the summary.", [failed])).score == 0  # type: ignore[union-attr]


def test_abstention_phrases() -> None:
    assert abstains("That is not in the documents.")
    assert abstains("The file is empty: there is nothing to report.")
    assert not abstains("Revenue was $8.6 million.")


def _item(turns: list[dict[str, object]]) -> SuiteItem:
    scenario = Scenario.model_validate(
        {
            "id": "s",
            "category": "c",
            "persona": "p",
            "setup": {"index_documents": []},
            "turns": turns,
        }
    )
    fact = Fact(id="f1", question="?", answer="$8.6 million")
    fact2 = Fact(id="f2", question="?", answer="41.5%")
    return SuiteItem(path="x.yaml", digest="d", scenario=scenario, facts={"f1": fact, "f2": fact2})


def _transcript(responses: list[str], status: str = "COMPLETED") -> Transcript:
    return Transcript(
        scenario_id="s", scenario_digest="d", status=status,
        target=Participant(kind="t"), simulator=Participant(kind="scripted"),
        turns=[TranscriptTurn(turn=i + 1, user_message="q", response=r, tool_calls=[QUERY])
               for i, r in enumerate(responses)],
    )  # fmt: skip


def test_verdict_judged_by_code_with_completeness_over_facts() -> None:
    item = _item([{"turn": 1, "objective": "o", "ground_truth": {"fact_ids": ["f1", "f2"],
                   "expected_answer": "$8.6 million"}}])  # fmt: skip
    v = asyncio.run(CodeJudge().judge(item, _transcript(["Revenue $8.6 million, margin 41.5%."])))
    scores = v.turns[0].scores
    assert scores["correctness"] == 10 and scores["completeness"] == 10
    assert scores["context_retention"] is None and scores["personality"] is None
    assert (
        v.turns[0].judged_by["correctness"] == "code" and "personality" not in v.turns[0].judged_by
    )
    half = asyncio.run(CodeJudge().judge(item, _transcript(["Revenue $8.6 million."])))
    assert half.turns[0].scores["completeness"] == 5


def test_prose_only_turn_makes_scenario_not_judged() -> None:
    item = _item([{"turn": 1, "objective": "o", "success_criteria": "is polite"}])
    v = asyncio.run(CodeJudge().judge(item, _transcript(["hi"])))
    assert v.status == Status.NOT_JUDGED


def test_unmeasured_transcript_passes_through() -> None:
    item = _item([{"turn": 1, "objective": "o", "success_criteria": "x"}])
    v = asyncio.run(CodeJudge().judge(item, _transcript([], status="TIMEOUT")))
    assert v.status == "TIMEOUT" and v.turns == []
