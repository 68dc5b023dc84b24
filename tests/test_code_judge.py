"""The code judge: precision table at its boundaries, names, abstention, tools, loops."""

from __future__ import annotations

import asyncio

import pytest

from agenteval.judges.code import (
    CodeJudge,
    correctness,
    efficiency,
    error_recovery,
    tool_selection,
)
from agenteval.judges.correctness import Question, grade_answer
from agenteval.judges.numbers import precision_score, quantities
from agenteval.judges.reading import abstains, normalize
from agenteval.schema.corpus import Fact
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.status import Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn


@pytest.mark.parametrize(
    ("deviation", "score"),
    [(0.0, 10), (0.01, 10), (0.0101, 8), (0.05, 8), (0.0501, 0), (0.15, 0), (0.1501, 0),
     (0.5, 0), (3.0, 0)],
)  # fmt: skip
def test_precision_table_capped_by_the_automatic_zero(deviation: float, score: float) -> None:
    # The rubric: a specific figure more than 5% off scores 0; within it the table caps.
    assert precision_score(deviation) == score


def answer_match(expected: str, reply: str, question: str = "What is it?") -> float | None:
    return grade_answer(Question(question, expected, False, True), reply).score


@pytest.mark.parametrize(
    ("expected", "reply", "score"),
    [
        ("$14.2 million", "Revenue was $14.2M.", 10),
        ("$14.2 million", "Revenue was $14,200,000.", 10),
        # 2.1% off, written to the same place: no rounding of $14.2 million, a misquote (defer)
        ("$14.2 million", "Revenue was $14.5 million.", None),
        ("$14.2 million", "Revenue was $15.5 million.", 0),  # 9.2% off: automatic zero
        ("$14.2 million", "Revenue was $18 million.", 0),
        ("$14.2 million", "Revenue was strong.", 0),
        ("23%", "Growth was 23 percent.", 10),
        ("23%", "Growth was twenty-three percent.", 10),
        ("$50K", "The threshold is $50,000.", 10),
        ("$1.3B", "The budget is 1.3 billion dollars.", 10),
        # one figure for a range: a part of the answer, never a pass (defer)
        ("15-18%", "We project 16% growth.", None),
        ("15-18%", "We project 18.5% growth.", None),
        ("15-18%", "We project 19% growth.", 0),  # 5.6% from the nearest end
        ("15-18%", "Between 15% and 18%.", 10),
        # a span for one figure commits to no value, even one that holds it (#49): defer
        ("99.62%", "Availability was between 99.5% and 99.7%.", None),
        ("99.62%", "Availability was between 98% and 99%.", 0),  # 1.6% off, yet leaves it out
        ("$8.6 million", "Revenue was $8.5-8.55 million.", 0),  # a range beside the figure
        ("$8.6 million", "Revenue was between $7 million and $10 million.", 0),  # commits to none
        ("27.4 kg", "It weighs 24 to 26 kg.", 0),
        ("$34 million to $36 million", "Guidance is $34-36 million.", 10),
        ("2.3 kg", "It weighs 2,300 g.", 10),
        ("110 km", "It goes 110 miles.", 0),  # another length: 177 km
        ("110 km", "About 68 miles.", 10),  # 109.4 km
        ("4 hours", "The window is 240 minutes.", 10),
        ("4 hours", "4 hrs.", 10),
        ("112 minutes", "It lasted 1 hour 52 minutes.", 10),
        ("625 Wh", "A 625 W motor.", 0),  # power is not energy
        # the rate restated per another period: no document is known to give it (defer)
        ("120 requests per minute", "2 requests per second.", None),
        ("120 requests per minute", "2 requests per second (120 a minute).", 10),
        ("120 requests per minute", "120 requests per hour.", 0),
        ("3", "It retries three times.", 10),
    ],
)
def test_numeric_answers(expected: str, reply: str, score: float) -> None:
    assert answer_match(expected, reply) == score


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("The owner is Priya Raman.", 10),
        ("The owner is Priya Shah.", 0),  # a different surname is a different person
        ("The owner is Anil Raman.", 0),  # and so is a different given name
        ("The owner is Tomas Berg.", 0),
        ("It is either Priya Raman or Tomas Berg.", 0),  # alternatives commit to neither
        ("Not Tomas Berg: Priya Raman owns it.", 10),
        ("Priya Raman is not the owner; Tomas Berg owns the runbook.", 0),
    ],
)
def test_names_compare_as_entities(reply: str, score: float) -> None:
    assert answer_match("Priya Raman", reply, "Who owns the runbook?") == score


@pytest.mark.parametrize(
    ("expected", "reply", "score"),
    [
        ("2026-03-14", "It happened on 2026-03-14.", 10),
        ("2026-03-14", "It happened on March 14, 2026.", 10),
        ("2026-03-14", "It happened on 2026-03-15.", 0),
        ("29 June 2007", "Version 3 is dated 29 June 2008.", 0),
        ("2007", "It was published in 2007.", 10),
        ("2007", "It was published in 2008.", 0),
        ("INC-2303", "The longest was INC-2304.", 0),
        ("INC-2303", "The longest was INC-2303.", 10),
        ("Q3 2026", "The third quarter of 2026.", 10),
        ("Q3 2026", "Q4 2026.", 0),
        ("5.14.2", "Version 5.14.3 introduced it.", 0),
        ("PostgreSQL 16", "They chose PostgreSQL 15.", 0),
        ("PostgreSQL 16", "They chose PostgreSQL 16 over CockroachDB.", 10),
        ("10:00 to 15:00", "From 10 am to 3 pm.", 10),
        ("10:00 to 15:00", "From 10:00 to 16:00.", 0),
        ("Section 8", "Section 8 covers termination.", 10),
        ("Section 8", "Section 9 covers it.", 0),
    ],
)
def test_years_dates_versions_identifiers_compare_exactly(
    expected: str, reply: str, score: float
) -> None:
    assert answer_match(expected, reply) == score


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Revenue was $12M, $14.2M or $16M.", 0),  # a candidate list
        ("Revenue was $14.2 million, or maybe $16 million.", 0),
        ("Revenue was not $14.2 million; it was $16 million.", 0),  # the right value denied
        ("Revenue was $14.2 million, not $16 million.", 10),  # a wrong value denied
        ("Revenue was $14.2 million, up from $12.9 million in Q2.", 10),  # context
        ("Paris: $14.2 million. Lyon: $3.1 million.", 10),  # another entity beside it
        ("Revenue was $14.2 million; the report is unaudited and has no monthly split.", 10),
        ("Revenue fell to $14.2 million.", 10),
    ],
)
def test_commitment_decides_correctness(reply: str, score: float) -> None:
    question = "What was Paris revenue in Q3?"
    assert answer_match("$14.2 million", reply, question) == score


def test_growth_reported_as_a_fall_is_the_opposite_sign() -> None:
    question = "By what percentage did revenue grow?"
    assert answer_match("17%", "Revenue fell 17%.", question) == 0
    assert answer_match("17%", "Revenue changed by -17%.", question) == 0
    assert answer_match("17%", "Revenue rose seventeen percent.", question) == 10


def test_quantities_ignore_labels_identifiers_and_dates() -> None:
    text = normalize("Section 4: Q3 2025 revenue was $14.2 million; see INC-2303 of 2026-03-14.")
    assert [q.low for q in quantities(text)] == [14.2e6]
    assert quantities(normalize("on 2026-03-14 at 2:00 PM")) == []
    assert [q.low for q in quantities(normalize("2 requests per second"))] == [2]


def turn(**kw: object) -> Turn:
    return Turn.model_validate({"turn": 1, "objective": "ask", **kw})


def said(response: str, calls: list[ToolCall] | None = None) -> TranscriptTurn:
    return TranscriptTurn(turn=1, user_message="q", response=response, tool_calls=calls or [])


QUERY = ToolCall(name="query_documents", arguments={"query": "x"})


def _score(t: Turn, s: TranscriptTurn) -> float | None:
    mark = correctness(t, s)
    assert mark is not None
    return mark.score


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("It is not in the documents.", 10),
        ("That figure isn't given in the report.", 10),
        ("The memo is silent on that.", 10),
        ("Headcount is not reported in this quarterly report.", 10),
        ("The report doesn't give a headcount; it lists 14 cafés.", 10),  # context, no guess
        ("The report doesn't say, but probably around 40 employees.", 0),  # abstain + guess
        ("It doesn't say; I'd estimate 120.", 0),
        ("The company has 212 employees.", 0),
    ],
)
def test_must_abstain_turns(reply: str, score: float) -> None:
    t = turn(user_message="How many employees are there?", ground_truth={"expected_answer": None})
    assert _score(t, said(reply, [QUERY])) == score


def test_lazy_refusal_refusal_and_true_caveats() -> None:
    t = turn(ground_truth={"expected_answer": "$8.6 million"})
    lazy = correctness(t, said("I don't know."))
    assert lazy is not None and lazy.score == 0 and "lazy refusal" in lazy.reason
    after_search = correctness(t, said("I could not find that.", [QUERY]))
    assert after_search is not None and after_search.score == 0
    assert "lazy" not in after_search.reason
    caveat = said("It was $8.6 million; the report doesn't break it down by month.", [QUERY])
    assert _score(t, caveat) == 10  # an abstention phrase beside an answer is a caveat


def test_phrases_and_tools_as_correctness_and_unjudgeable_turns() -> None:
    t = turn(ground_truth={"expected_phrases": ["Fairweather"]})
    assert _score(t, said("Ask fairweather ops.")) == 10
    listing = turn(expected_tools=["list_documents"], success_criteria="lists docs")
    listed = said("Here", [ToolCall(name="list_documents")])
    assert _score(listing, listed) == 10
    assert _score(listing, said("Here")) == 0
    failed = said("Listed.", [ToolCall(name="list_documents", ok=False, error="boom")])
    assert _score(listing, failed) == 0  # a failed call is not a call
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
    broken = ToolCall(name="query_documents", ok=False, error="query must be a non-empty string")
    assert tool_selection(scenario, t, [broken]).score == 0  # type: ignore[union-attr]


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
    retry = ToolCall(name="index_document", arguments={"path": "y"}, result={"chunk_count": 3})
    assert error_recovery(said("Done.", [QUERY])) is None
    assert error_recovery(said("I could not find that file.", [failed])).score == 10  # type: ignore[union-attr]
    assert error_recovery(said("Here is the summary.", [failed])).score == 0  # type: ignore[union-attr]
    # words such as "error" or "missing" are not telling the user that the call failed
    fake = said("The deck had a few formatting errors; nothing is missing.", [failed])
    assert error_recovery(fake).score == 0  # type: ignore[union-attr]
    assert error_recovery(said("Probation is 90 days.", [failed, retry])).score == 7  # type: ignore[union-attr]


def test_abstention_phrases() -> None:
    assert abstains("That is not in the documents.")
    assert abstains("The file is empty: there is nothing to report.")
    assert abstains("Nowhere in the client is an uptime SLA stated.")
    assert not abstains("Revenue was $8.6 million.")
    assert not abstains("Revenue did not fall 12%.")


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


def test_a_deferred_correctness_records_its_reason() -> None:
    item = _item([{"turn": 1, "objective": "o", "user_message": "What was revenue?",
                   "ground_truth": {"expected_answer": "$8.6 million"}}])  # fmt: skip
    reply = "Revenue was $8.6 million and revenue was $9.9 million for the same period."
    v = asyncio.run(CodeJudge().judge(item, _transcript([reply])))
    assert v.turns[0].scores["correctness"] is None
    assert "cannot tell" in v.turns[0].reasons["correctness"]
    assert v.status == Status.NOT_JUDGED and "cannot tell" in (v.root_cause or "")


def test_unmeasured_transcript_passes_through() -> None:
    item = _item([{"turn": 1, "objective": "o", "success_criteria": "x"}])
    v = asyncio.run(CodeJudge().judge(item, _transcript([], status="TIMEOUT")))
    assert v.status == "TIMEOUT" and v.turns == []


# -- issue 49: every value committed, sources, numbers as written, layout ------------------
@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("USD 12 300", "$12,300"),
        ("17\u202f900 kg", "17,900 kg"),
        ("CHF-free 48'000 USD", "CHF-free $48,000"),
        ("86.500 EUR", "€86,500"),
        ("41,5 %", "41.5 %"),
        ("1 849 USD", "$1,849"),
        ("between 2 300 and 4", "between 2 300 and 4"),  # a plain space, no amount: kept
        ("$1.500", "$1.500"),  # a dot without a currency code stays a decimal mark
        ("sizes 2,5 or 7", "sizes 2,5 or 7"),
    ],
)
def test_locale_numbers_are_read_with_babel(written: str, read: str) -> None:
    from agenteval.judges.written import rewrite

    assert rewrite(written) == read


def test_markdown_is_read_as_sentences() -> None:
    from agenteval.judges.layout import flatten

    table = "| Model | Price |\n|---|---|\n| Heron | $2,690 |\n| Osprey | — |"
    assert flatten(table) == "Heron price $2,690.\nOsprey."
    assert flatten("Done:\n\n```\nMAX_RETRIES = 3\n```") == "Done:\nMAX_RETRIES = 3"
    assert flatten("x[^1]\n\n[^1]: 18 days.") == "x[^1]\n\n[^1]: 18 days."  # never dropped
    assert flatten("1. first\n2. second") == "1. first\n2. second"
    assert flatten("Plain $8.6 million.") == "Plain $8.6 million."


HL_REVENUE = "What was Harbor Lantern's net revenue for the second quarter of fiscal 2026?"


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Net revenue was $8.6 million. Actually, correction: $9.1 million.", 0),
        ("It was $8.6 million — I mean $8.9 million.", 0),
        ("$8.6 million. Re-adding the channels, it comes to $8.7 million.", 0),
        ("Net revenue was $8.6 million. On second thought, scratch that; I can't tell.", 0),
        ("Net revenue was $8.6 million; actually, that's $8,600,000 exactly.", 10),  # same value
        ("$5.1 million + $3.5 million = $8.6 million of net revenue.", 10),  # the working
        ("$5.1 million + $3.5 million = $9.6 million of net revenue.", 0),
        ("Net revenue: USD 8 600 000.", 10),
        ("| Quarter | Net revenue |\n|---|---|\n| Q2 FY2026 | $8.6 million |", 10),
        ("My first guess would be about $7 million; the report says $8.6 million.", 0),
    ],
)
def test_every_committed_value_counts(reply: str, score: float) -> None:
    assert answer_match("$8.6 million", reply, HL_REVENUE) == score


SM = "eval/corpus/documents/saltmarsh_travel_expense_policy.txt"
RECEIPT = "Above what amount is a receipt required?"
MB = "eval/corpus/documents/marrowbrook_library_it_budget_fy2027.csv"


@pytest.mark.parametrize(
    ("docs", "expected", "reply", "rule"),
    [
        ([SM], "$25", "Section 7 says receipts are needed from $25.", "precision"),
        ([SM], "$25", "Section 12.4 says receipts are needed from $25.", "invented_source"),
        ([SM], "$25", "Appendix A: receipts are needed from $25.", "misattributed_source"),
        ([SM], "$25", "Appendix D: receipts are needed from $25.", "invented_source"),
        ([SM], "$25", "Section 7.3 says receipts are needed from $25.", None),  # unresolved
        ([SM], "$25", "Page 4 says receipts are needed from $25.", None),
        ([SM], "$25", "Table 2 of the policy: receipts from $25.", "invented_source"),
        ([SM], "$25", "The Saltmarsh Audit Manual covers it. Receipts are needed from $25.",
         "invented_source"),
        ([MB], "$86,500", "In row 2, $86,500 is requested for the Wi-Fi refresh.", "precision"),
        ([MB], "$86,500", "In row 40, $86,500 is requested for the Wi-Fi refresh.",
         "invented_source"),
        (["eval/corpus/documents/missing.txt"], "$25", "Section 7: from $25.", None),
    ],
)  # fmt: skip
def test_sources_are_looked_up_in_the_indexed_documents(
    docs: list[str], expected: str, reply: str, rule: str | None
) -> None:
    asked = "How much is requested for the public Wi-Fi refresh?" if docs == [MB] else RECEIPT
    q = Question(asked, expected, False, True)
    q.documents = docs
    result = grade_answer(q, reply)
    assert result.rule == rule
    if rule == "misattributed_source":
        assert result.score == 7
    if rule is None:
        assert result.score is None


def test_the_right_value_said_of_another_entity_is_not_credited() -> None:
    heron = grade_answer(Question("How much does the Heron cost?", "$2,690", False, True),
                         "The Sparrow costs $2,690.")  # fmt: skip
    assert (heron.rule, heron.score) == ("other_entity", 0)
    named = grade_answer(Question("How much does the Heron cost?", "$2,690", False, True),
                         "The Heron costs $2,690; the Sparrow is cheaper.")  # fmt: skip
    assert named.score == 10
    q = Question("How much is requested for cybersecurity awareness training?", "$9,800",
                 False, True, documents=[MB])  # fmt: skip
    other_row = grade_answer(q, "$9,800 is requested for the public Wi-Fi refresh.")
    assert other_row.score is None and "another line" in other_row.reason
    assert grade_answer(q, "$9,800 is requested for awareness training.").score == 10
