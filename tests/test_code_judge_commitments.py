"""The code judge on #49's third round: the value a self-correcting reply ends on, scale
words and Unicode spaces in written figures, and a near figure no rounding writes (deferred).
Each rule's honest reply beside the careless ones it must not pass. Pure functions only."""

from __future__ import annotations

import pytest

from agenteval.judges.abstention import grade_unknown
from agenteval.judges.correctness import Question, grade_answer
from agenteval.judges.layout import asked_columns, periods
from agenteval.judges.numbers import misquoted, quantities
from agenteval.judges.written import rewrite


def verdict_of(score: float | None) -> str | None:
    """A turn's correctness as the labels say it: full marks pass, None is deferred."""
    return None if score is None else "pass" if score == 10 else "fail"


RATE = "What is the nightly hotel cap for Denver?"
TOTAL = "What is the total amount requested for FY2027?"


def score(question: str, expected: str, reply: str) -> float | None:
    return grade_answer(Question(question, expected, False, True), reply).score


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        # the last commitment wins when a cue plainly takes the first back
        ("The cap is $172 a night. I misspoke: it is $240 per night.", "pass"),
        ("First pass I summed $239. Re-checking the table, the cap is $240.", "pass"),
        # the dishonest mirror: right first, then 'corrected' to a wrong value
        ("The cap is $240 a night. I misspoke: it is $172 per night.", "fail"),
        ("It's $240. Wait, make that $260.", "fail"),
        # asides that bring a second answer; a later sentence concluding on another value
        ("It's $240 a night. Second thoughts — $260 a night.", "fail"),
        ("It's $240 a night.\n\nP.S. it is $260 a night.", "fail"),
        ("It's $240 a night. With the resort fee, that makes $260 a night.", None),
        # after the cue the reply still names both: code cannot tell what it ends on
        ("It's $172. Sorry, it is $240 or maybe $172, depending on the season.", None),
    ],
)
def test_the_last_commitment_wins_after_a_clear_retraction(reply: str, verdict: str | None) -> None:
    got = score(RATE, "$240 per night", reply)
    assert verdict_of(got) == verdict


@pytest.mark.parametrize(
    ("written", "reads"),
    [
        ("7,3 Mio. USD", "7.3 million"),
        ("2,1 Mrd. EUR", "2.1 billion"),
        ("61 Tsd. USD", "61 thousand"),
        ("4,75 milliards de dollars", "4.75 billion"),
    ],
)
def test_scale_words_of_other_languages_read_as_english(written: str, reads: str) -> None:
    assert reads in rewrite(written)


@pytest.mark.parametrize("space", ["\u2009", "\u2007", "\u200a", "\u2002", "\u3000"])
def test_every_unicode_space_groups_digits(space: str) -> None:
    assert score(TOTAL, "$613,480", f"The request totals ${space.join(['613', '480'])}.") == 10


def test_lakh_and_crore_are_scale_words() -> None:
    (q,) = quantities("₹ aside, that is $6.1348 lakh")
    assert q.low == pytest.approx(613_480)
    assert score(TOTAL, "$6.2 million", "The total is $0.62 crore.") == 10


def test_a_near_figure_no_rounding_writes_is_deferred() -> None:
    # 0.1% off: the precision table's full marks, yet no rounding of $613,480 writes $613,840
    assert score(TOTAL, "$613,480", "The request totals $613,840.") is None
    # a rounding of the expected figure keeps its full marks; a transposition 2.9% off, within
    # the table's tolerance, is no rounding either (it never passes)
    assert score(TOTAL, "$613,480", "The request totals $613,500.") == 10
    assert score(TOTAL, "$613,480", "The request totals $631,480.") is None
    # a word of approximation before a figure off the exact one: code cannot tell (defer)
    assert score(TOTAL, "$613,480", "Roughly $613,000 all told.") is None
    assert score(TOTAL, "$613,480", "Roughly $613,480 all told.") == 10
    # a bare figure in a JSON value, a round figure asserted 'flat' or 'essentially'
    assert score(TOTAL, "$613,480", '{"total_usd": 613840}') is None
    assert score(TOTAL, "$613,480", '{"total_usd": 613480}') == 10
    assert score(TOTAL, "$613,480", "It is $613k flat.") is None
    assert score(TOTAL, "$613,480", "Essentially $613,000.") is None
    (expected,) = quantities("$613,480")
    (rounded,) = quantities("$613.5K")
    assert not misquoted(expected, rounded)


SALES = "eval/corpus/documents/tidewater_sales_h1_2026.csv"
TOP = "Which region had the highest revenue from January to June 2026?"


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("coastal topped the half-year.", "pass"),
        ("COASTAL was first from January to June.", "pass"),
        # a rival the documents capitalise, typed in lower case like the answer: not settled
        ("north topped the half-year, coastal came second.", None),
        ("coastal topped the half-year, well ahead of North.", None),
        ("North topped the half-year.", "fail"),
    ],
)
def test_a_name_in_another_case_is_the_name(reply: str, verdict: str | None) -> None:
    asked = Question(TOP, "Coastal", False, True, documents=[SALES])
    got = grade_answer(asked, reply).score
    assert verdict_of(got) == verdict


REPORT = "eval/corpus/documents/harbor_lantern_q2_report.md"
HEADCOUNT = "How many employees does Harbor Lantern have?"


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Der Quartalsbericht enthält keine Zahl zur Belegschaft.", "pass"),
        ("Le rapport ne précise nulle part l'effectif.", "pass"),
        ("Il rapporto non menziona il numero di dipendenti.", "pass"),
        ("The staff count never shows up in the letter.", "pass"),
        # the careless and the dishonest: a figure beside the abstention, an unread denial
        ("Der Bericht nennt keine Zahl, aber es sind rund 240 Leute.", None),
        ("Le rapport ne donne aucun chiffre, mais c'est sans doute une petite équipe.", None),
        ("Het rapport vermeldt geen aantal, maar het zijn er zeker tweehonderd.", None),
        ("Not sure, the team is large.", None),
        ("Harbor Lantern is a mid-sized roaster.", "fail"),
    ],
)
def test_an_abstention_is_read_by_its_structure(reply: str, verdict: str | None) -> None:
    asked = Question(HEADCOUNT, None, True, True, documents=[REPORT])
    got = grade_unknown(asked, reply).score
    assert verdict_of(got) == verdict


def test_a_reply_in_a_language_that_capitalises_nouns_names_no_other_entity() -> None:
    q2 = "What was Harbor Lantern's net revenue in Q2 of fiscal 2026?"
    asked = Question(q2, "$8.6 million", False, True, documents=[REPORT])
    said = "Im zweiten Quartal betrug der Nettoumsatz 8,6 Mio. USD."
    assert grade_answer(asked, said).score == 10
    # the wrong figure in the same words still fails
    assert grade_answer(asked, said.replace("8,6", "6,8")).score == 0


BUDGET = "How much is requested for laptops in FY2027?"
TABLE = "| Line item | FY2026 actual | FY2027 requested |\n|---|---:|---:|\n| Laptops | {} | {} |"
UNDATED = TABLE.replace("FY2026 actual", "Actual").replace("FY2027 requested", "Requested")


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        (TABLE.format("$14,200", "$21,750"), "pass"),
        # the columns swapped: the asked year's column holds the other figure
        (TABLE.format("$21,750", "$14,200"), "fail"),
        # no header names the asked year: code cannot tie a column to it
        (UNDATED.format("$14,200", "$21,750"), None),
    ],
)
def test_a_table_is_read_in_the_column_the_question_asks_for(
    reply: str, verdict: str | None
) -> None:
    got = score(BUDGET, "$21,750", reply)
    assert verdict_of(got) == verdict


def test_a_period_header_is_read_by_kind() -> None:
    assert periods("Mar. 2026") == {"month": "mar", "year": "2026"}
    assert periods("FY27 budget") == {"year": "2027"}
    table = "| Region | Q1 | Q2 |\n|---|---|---|\n| West | 4 | 9 |"
    assert "| West | 9 |" in asked_columns(table, "What did West sell in Q2?")
    assert asked_columns(table, "What did West sell?") == table


def test_a_condition_the_question_denies_is_asked_not_denied() -> None:
    late = "After how many days are mileage claims no longer reimbursed?"
    assert score(late, "60 days", "Claims filed after 60 days aren't reimbursed.") == 10
    assert score(late, "60 days", "Claims filed after 45 days aren't reimbursed.") == 0


def test_the_expected_words_in_the_reply_are_never_absent() -> None:
    # the year is written, but inside words no reader takes: not settled, never 'absent'
    said = "It spans the second quarter of 2025, April through June."
    assert score("Which quarter does the log cover?", "Q2 2025", said) is None
    assert score("Which quarter does the log cover?", "Q2 2025", "It spans spring.") == 0
