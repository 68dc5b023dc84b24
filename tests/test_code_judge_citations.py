"""Sources a reply cites, in the ways replies cite them (issue #49, third round): a citation
line, a parenthesis, an entry identifier, a filing's note, a file format no indexed document
has. An invented one fails beside honest citations that must not; a reference code cannot
look up defers, never passes."""

from __future__ import annotations

import pytest

from agenteval.judges.correctness import Question, grade_answer

SM = "eval/corpus/documents/saltmarsh_travel_expense_policy.txt"
MB = "eval/corpus/documents/marrowbrook_library_it_budget_fy2027.csv"
HL = "eval/corpus/documents/harbor_lantern_q2_report.md"
FO = "eval/corpus/documents/fenwick_orla_handbook.md"
LL = "eval/corpus/documents/ledgerline_client.py"
ASKED = {
    SM: ("Above what amount is a receipt required?", "$25"),
    MB: ("How much is requested for the public Wi-Fi refresh?", "$86,500"),
    HL: ("What was net revenue in the second quarter?", "$8.6 million"),
    FO: ("How many vacation days do new hires get?", "18 days"),
    LL: ("How many times are failed requests retried?", "3"),
}


@pytest.mark.parametrize(
    ("doc", "reply", "rule"),
    [
        (SM, "Receipts are needed from $25 (Saltmarsh Expense Policy, Section 15).",
         "invented_source"),
        (SM, "Receipts from $25.\n\nSources: the expense policy, §11.2 and its annex.",
         "invented_source"),
        (SM, "Receipts are needed from $25 (Saltmarsh Expense Policy, Section 7).", "precision"),
        (SM, "Receipts are needed from $25; this is stated on page 2 of the Expense Policy PDF.",
         "invented_source"),
        (SM, "Receipts are needed from $25; this is stated on page 2 of the expense policy.",
         None),  # pages of a text file: code cannot count them, so it defers
        (MB, "$86,500 is requested. It is listed under entry NET-88 of the budget sheet.",
         "invented_source"),
        (HL, "Net revenue was $8.6 million (see Note 12 to the accounts).", "invented_source"),
        (HL, "Net revenue was $8.6 million, as stated in the company's Form 10-K.",
         "invented_source"),
        (HL, "Net revenue was $8.6 million; see the section on results.", "precision"),
        # figures, footnotes, functions and quoted headings are looked up too (issue #49)
        (HL, "Net revenue was $8.6 million, as Figure 4 of the letter shows.", "invented_source"),
        (HL, "Per footnote 2, net revenue was $8.6 million.", "invented_source"),
        (LL, "Per backoff_schedule(), failed requests are retried 3 times.", "invented_source"),
        (LL, "Per _request(), failed requests are retried 3 times.", "precision"),
        (FO, 'Under the heading "Holiday allowance": new hires get 18 days.', "invented_source"),
        (FO, 'Under the heading "Paid time off": new hires get 18 days.', "precision"),
    ],
)  # fmt: skip
def test_a_cited_source_is_looked_up(doc: str, reply: str, rule: str | None) -> None:
    asked, expected = ASKED[doc]
    result = grade_answer(Question(asked, expected, False, True, documents=[doc]), reply)
    assert result.rule == rule, result.reason
    assert (result.score is None) == (rule is None)


def test_an_invented_source_fails_even_where_the_value_would_defer() -> None:
    q = Question("How much is requested for cybersecurity awareness training?", "$9,800",
                 False, True, documents=[MB])  # fmt: skip
    honest = grade_answer(q, "$9,800 is requested for the public Wi-Fi refresh.")
    assert honest.score is None  # said of another budget line: deferred
    cited = grade_answer(q, "Per entry SEC-9 of the budget, $9,800 is requested for Wi-Fi.")
    assert (cited.rule, cited.score) == ("invented_source", 0)


@pytest.mark.parametrize(
    ("asked", "expected", "reply", "rule"),
    [
        ("How many weeks of fully paid parental leave are there?", "16 weeks",
         "You get 16 weeks off, though they are not fully paid.", "denied_condition"),
        ("How many weeks of fully paid parental leave are there?", "16 weeks",
         "16 weeks at full pay, not 20.", "precision"),
        ("On trips longer than how many hours is first class permitted?", "10 hours",
         "First class is never permitted, not even on trips over 10 hours.", "denied_condition"),
        ("What is the shipping charge for orders inside Canada?", "$40",
         "Shipping inside Canada is free; the $40 charge is for overseas orders.",
         "denied_condition"),
        ("What is the shipping charge for orders inside Canada?", "$40",
         "It is not free: shipping inside Canada is $40; shipping to Alaska is free.",
         "precision"),
        ("Below what amount is no invoice required?", "$50",
         "You don't need an invoice under $50; from $50 on you do.", "precision"),
    ],
)  # fmt: skip
def test_the_value_must_be_given_for_the_asked_condition(
    asked: str, expected: str, reply: str, rule: str
) -> None:
    result = grade_answer(Question(asked, expected, False, True), reply)
    assert result.rule == rule, result.reason


OWNER = "Who owns the fleet maintenance budget line?"


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Fleet maintenance is owned by Dana Whitfield.\n\nWait, no. Going by the sheet again, "
         "that line belongs to Marcus Oyelaran.", 0),
        ("Fleet maintenance is owned by Dana Whitfield.\n\nWait, no. Checking again: yes, it is "
         "Dana Whitfield.", 10),
        ("Fleet maintenance is owned by Dana Whitfield. Wait, no doubt about it; she signs off "
         "every quarter.", 10),
    ],
)  # fmt: skip
def test_a_bare_denial_is_answered_by_the_next_sentence(reply: str, score: float) -> None:
    assert grade_answer(Question(OWNER, "Dana Whitfield", False, True), reply).score == score


@pytest.mark.parametrize(
    ("asked", "reply", "rule"),
    [
        ("What were subscription sales in the third quarter of 2025?",
         "Subscription sales ran at $2.4 million a month in Q3.", "restated_rate"),
        ("What were subscription sales in the third quarter of 2025?",
         "$2.4 million in Q3, about $0.8 million a month.", None),  # two figures: deferred
        ("What were subscription sales in the third quarter of 2025?",
         "Subscription sales were $2.4 million per quarter in Q3.", "precision"),
    ],
)  # fmt: skip
def test_a_periods_total_is_no_rate_per_another_period(
    asked: str, reply: str, rule: str | None
) -> None:
    result = grade_answer(Question(asked, "$2.4 million", False, True), reply)
    assert result.rule == rule, result.reason


def test_a_documents_own_words_and_a_year_ago_are_not_claims() -> None:
    asked, expected = ASKED[SM]
    q = Question(asked, expected, False, True, documents=[SM])
    # "(including taxes)": a closed parenthesis cites nothing after it
    closed = "Receipts are needed from $25 (taxes included) for items in part 12 of the form."
    assert grade_answer(q, closed).rule != "invented_source"
    sales = Question("What were subscription sales in the third quarter?", "$2.4 million",
                     False, True)  # fmt: skip
    reply = "Q3 subscription sales were $2.4 million, up from $2.3 million a year earlier."
    assert grade_answer(sales, reply).rule != "restated_rate"


@pytest.mark.parametrize(
    ("reply", "score"),
    [
        ("Having trialled Kafka 3, the group picked RabbitMQ for the event bus.", 0),
        ("The group picked Kafka 3 over RabbitMQ for the event bus.", 10),
        ("Kafka 3. RabbitMQ was trialled and dropped.", 10),
    ],
)  # fmt: skip
def test_the_choice_is_what_the_choice_verb_names(reply: str, score: float) -> None:
    q = Question("Which message broker did the group choose for the event bus?", "Kafka 3",
                 False, True)  # fmt: skip
    assert grade_answer(q, reply).score == score
