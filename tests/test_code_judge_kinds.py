"""The code judge on the kinds of reply #49's second round added rules for: each rule's
honest reply beside the careless or dishonest ones it must not pass. Pure functions only."""

from __future__ import annotations

import pytest

from agenteval.judges.abstention import grade_unknown
from agenteval.judges.correctness import Question, grade_answer
from agenteval.judges.written import rewrite

HANDBOOK = "eval/corpus/documents/fenwick_orla_handbook.md"
REPORT = "eval/corpus/documents/harbor_lantern_q2_report.md"


def score(question: str, expected: str, reply: str) -> float | None:
    return grade_answer(Question(question, expected, False, True), reply).score


DATABASE = "Which database did the team choose for the new ledger service?"
CAUSE = "What caused incident INC-2291?"


@pytest.mark.parametrize(
    ("question", "expected", "reply", "passes"),
    [
        (DATABASE, "PostgreSQL 16", "They picked PostgreSQL 16 — I mean MySQL 8.", False),
        (DATABASE, "PostgreSQL 16", "PostgreSQL 16. Sorry, to be exact: PostgreSQL 16.", True),
        (DATABASE, "PostgreSQL 16", "They picked PostgreSQL 16.", True),
        (
            CAUSE,
            "expired TLS certificate",
            "An expired TLS certificate. Actually no, it was a misconfigured load balancer.",
            False,
        ),
        (
            CAUSE,
            "expired TLS certificate",
            "An expired TLS certificate. Actually, the log "
            "confirms it: the certificate had expired.",
            True,
        ),
        (
            "Who owns the database migration runbook?",
            "Deepa Venkataraman",
            "Deepa Venkataraman. Actually, to be precise, Deepa owns it.",
            True,
        ),
    ],
)
def test_a_correction_to_a_value_of_another_kind_fails(
    question: str, expected: str, reply: str, passes: bool
) -> None:
    assert (score(question, expected, reply) == 10) is passes


def test_a_hedged_figure_no_document_holds_after_an_abstention_is_a_guess() -> None:
    asked = Question("How many employees does Harbor Lantern have?", None, True, True,
                     documents=[REPORT])  # fmt: skip
    guess = "Staff numbers aren't stated, but with 14 cafés it's probably around 300 people."
    context = "Staff numbers aren't stated; the report only says it runs about 14 cafés."
    assert grade_unknown(asked, guess).rule == "abstain_guess"
    assert grade_unknown(asked, context).rule == "abstained"


def test_a_guess_in_guessing_words_after_an_abstention_fails_on_a_text_question() -> None:
    asked = Question("What colours is the Heron available in?", None, True, True)
    assert grade_unknown(asked, "The page doesn't get into colours for the Heron.").score == 10
    guessed = "The comparison doesn't list colours; most e-bikes come in black or grey though."
    assert grade_unknown(asked, guessed).score == 0


PENSION = "Up to what percentage of base salary does the studio match pension contributions?"


@pytest.mark.parametrize(
    ("reply", "passes"),
    [
        ("The studio matches contributions up to 0.04 of base salary.", True),
        ("Up to 0.04%.", False),  # a percent sign keeps its own reading
        ("Up to 0.4 percent.", False),
        ("Up to 0.4 of base salary.", False),
    ],
)
def test_a_bare_fraction_is_read_as_the_share_it_writes(reply: str, passes: bool) -> None:
    assert (score(PENSION, "4%", reply) == 10) is passes


RETRIES = "How many times are failed requests retried?"
WARRANTY = "How long is the warranty on the battery and motor?"


@pytest.mark.parametrize(
    ("question", "expected", "reply", "passes"),
    [
        (RETRIES, "3", "Of the usual choices (1, 3 or 5), the client uses 3 retries.", True),
        (RETRIES, "3", "Of the usual choices (1, 3 or 5), the client uses 5 retries.", False),
        (RETRIES, "3", "It retries 1, 3 or 5 times.", False),  # a list is no choice
        (RETRIES, "3", "Is it 1, 3 or 5 times? It's 3 times.", True),
        (WARRANTY, "2 years", "(a) 1 year (b) 2 years (c) 3 years", False),
        (WARRANTY, "2 years", "(a) 1 year (b) 2 years (c) 3 years. Answer: (b)", True),
        (WARRANTY, "2 years", "(a) 1 year (b) 2 years (c) 3 years. Answer: (a)", False),
    ],
)
def test_an_option_chosen_among_listed_ones_is_the_answer(
    question: str, expected: str, reply: str, passes: bool
) -> None:
    assert (score(question, expected, reply) == 10) is passes


CUTOVER = "When is the production cutover scheduled?"


@pytest.mark.parametrize(
    ("reply", "result"),
    [
        ("Cutover is set for 11/07/2026 (US format).", 10),
        ("Cutover: 07/11/2026 (UK date).", 10),
        ("Cutover: 11/07/2026.", None),  # either way round: code cannot tell
        ("Cutover: 08/11/2026 (UK).", 0),
        ("2026/11/07", 10),
        ("2026/11/08", 0),
    ],
)
def test_numeric_dates_are_read_the_way_the_reply_says(reply: str, result: float | None) -> None:
    assert score(CUTOVER, "November 7, 2026", reply) == result


def test_a_month_and_year_is_a_date_not_a_product_version() -> None:
    asked = "When was version 2.0 of the Apache License published?"
    assert score(asked, "January 2004", "It dates from Jan. 2004.") == 10
    assert score(asked, "January 2004", "It dates from February 2004.") == 0


@pytest.mark.parametrize(
    ("question", "expected", "reply", "passes"),
    [
        ("How much is the annual learning stipend?", "$1,200", "Elle est de 1 200 $ par an.", True),
        (
            "How much is the annual learning stipend?",
            "$1,200",
            "Elle est de 1 300 $ par an.",
            False,
        ),
        ("At what rate is car use reimbursed?", "$0.62 per mile", "0,62 $ por milla", True),
        ("At what rate is car use reimbursed?", "$0.62 per mile", "0,62 $ por semana", False),
        ("How long is the rollback window?", "4 hours", "Elle est de 4 heures.", True),
        ("How long is the probationary period?", "90 days", "Elle est de 60 jours.", False),
        ("How long is the probationary period?", "90 days", "Elle est de 90 semaines.", False),
        ("How much does the Heron cost?", "$2,690", "Le Heron coûte 2.690 $.", True),
    ],
)
def test_figures_and_units_in_another_language(
    question: str, expected: str, reply: str, passes: bool
) -> None:
    assert (score(question, expected, reply) == 10) is passes


def test_a_figure_the_question_states_is_no_rival_answer() -> None:
    asked = "How many days of paid time off do employees in their first two years receive?"
    assert score(asked, "18 days", "Eighteen days a year for your first two years.") == 10
    assert score(asked, "18 days", "Your first two years.") == 0


def test_working_and_footnote_marks_are_no_figures() -> None:
    assert score("How long did INC-2291 last?", "112 minutes",
                 "From 09:14 to 11:06 is 1 h 52 min = 60 + 52 = 112 minutes.") == 10  # fmt: skip
    assert score("How many days of paid time off a year?", "18 days",
                 "A yearly allowance applies.[^1]\n\n[^1]: 18 days.") == 10  # fmt: skip


def test_symbols_after_figures_are_moved_before_them() -> None:
    assert rewrite("est de 1 200 $ par an") == "est de $1,200 par an"
    assert rewrite("5 $10 notes") == "5 $10 notes"  # the symbol starts another figure
    assert rewrite("costs 12 €.") == "costs €12."
