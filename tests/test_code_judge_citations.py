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
ASKED = {
    SM: ("Above what amount is a receipt required?", "$25"),
    MB: ("How much is requested for the public Wi-Fi refresh?", "$86,500"),
    HL: ("What was net revenue in the second quarter?", "$8.6 million"),
    FO: ("How many vacation days do new hires get?", "18 days"),
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
