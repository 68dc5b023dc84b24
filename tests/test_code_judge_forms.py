"""The code judge on the forms of reply #49's sixth round added rules for: web addresses
named as sources, rates restated per another period, figures after a slash, scientific
notation, figures written coarser than the document's, figures ruled out in passing, ISO
date-times. Each rule's honest reply beside the wrong or dishonest ones it must not pass.
Pure functions over the corpus files; no network (an address is looked up in the files)."""

from __future__ import annotations

import pytest

from agenteval.judges import sources
from agenteval.judges.written import scientific
from tests.judge_documents import CLIENT, HANDBOOK, LOG, MINUTES, POLICY, REPORT, score

PAGE = "What is the maximum page size for list endpoints?"


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("At most 200 per page (see https://api.ledgerline.example/v2).", 10),
        ("At most 200 per page (source: https://developer.ledgerline.io/docs/paging).", 0),
        ("At most 200 per page, according to www.ledgerline-docs.com/limits.", 0),
        # a page under a host the document names: it may exist, code cannot tell
        ("At most 200 per page, per https://api.ledgerline.example/v2/docs/paging.", None),
    ],
)
def test_a_web_address_credited_as_the_source_is_looked_up(reply: str, grade: float | None) -> None:
    assert score(PAGE, "200", reply, CLIENT) == grade


def test_an_address_is_read_whole_and_without_its_closing_punctuation() -> None:
    found = [r for r in sources.references("See https://a.example/x?y=1#z).") if r.kind == "url"]
    assert [r.label for r in found] == ["https://a.example/x?y=1#z"]


MEALS = "What is the meal per diem for domestic travel?"


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("Domestic meals are covered at $68 a day.", 10),
        ("The meal allowance is $476 per week.", None),  # the document gives no weekly figure
        ("The meal allowance is $476 per week ($68 a day).", 10),  # the working shown
        ("The meal allowance is $500 per week.", 0),  # compared as a quantity: 5% off
    ],
)
def test_a_rate_restated_per_another_period_never_passes_alone(
    reply: str, grade: float | None
) -> None:
    assert score(MEALS, "$68 per day", reply, POLICY) == grade


def test_a_figure_after_a_slash_is_a_value_the_reply_commits_to() -> None:
    asked = "Within how many days of the trip's end must expense reports be submitted?"
    assert score(asked, "30 days", "Within 30 days of the trip's end.", POLICY) == 10
    assert score(asked, "30 days", "Within 30/45 days of the trip's end.", POLICY) is None


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("$8.6e6", "$8600000"),
        ("5.2412E+05 USD", "524120 USD"),
        ("8.6 × 10^6 dollars", "8600000 dollars"),
        ("8.6 x 10**6", "8600000"),
        ("$3.6529 × 10⁴.", "$36529."),
        ("1.23e-2", "0.0123"),
        ("build 2e5", "build 2e5"),  # no decimal point, no "× 10": may be a code
        ("sha 4.5e3f", "sha 4.5e3f"),
    ],
)
def test_scientific_notation_is_written_out(written: str, read: str) -> None:
    assert scientific(written) == read


REVENUE = "What was Harbor Lantern's net revenue for the second quarter of fiscal 2026?"


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("Net revenue was $8.6e6.", 10),
        ("Net revenue was 8.6 × 10^6 dollars.", 10),
        ("Net revenue was $8.6 × 10⁶.", 10),
        ("Net revenue was $8.6e5.", 0),
        ("Net revenue was 8.6 × 10^7 dollars.", 0),
    ],
)
def test_revenue_in_scientific_notation(reply: str, grade: float) -> None:
    assert score(REVENUE, "$8.6 million", reply, REPORT) == grade


def test_a_coarser_figure_no_rounding_writes_is_not_a_rounding() -> None:
    asked = "What was Harbor Lantern's gross margin in the second quarter?"
    assert score(asked, "41.5%", "Gross margin was 41.5%.", REPORT) == 10
    assert score(asked, "41.5%", "Gross margin was 42%.", REPORT) == 8  # a rounding: the table
    # 3.6% off, within the table's marks, but no rounding of 41.5 writes 43: never a pass
    assert score(asked, "41.5%", "Gross margin was 43%.", REPORT) is None
    availability = "What was the WMS availability for the quarter?"
    assert score(availability, "99.62%", "Availability was 99.6%.", LOG) == 10
    assert score(availability, "99.62%", "Availability was 96.2%.", LOG) is None


LEAVE = "How many weeks of fully paid parental leave does the studio offer?"


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("Fully paid parental leave is 16 weeks, not 12.", 10),
        ("It is not 12 but 16 weeks.", 10),
        ("It is 12 weeks, not 16.", 0),
        # a figure after "not counting" is still claimed: the audit does not pass it
        ("It is 16 weeks, not counting the extra 6 weeks of unpaid leave.", None),
    ],
)
def test_a_figure_ruled_out_in_passing_is_no_claim(reply: str, grade: float | None) -> None:
    assert score(LEAVE, "16 weeks", reply, HANDBOOK) == grade


CUTOVER = "When is the production cutover scheduled?"


@pytest.mark.parametrize(
    ("reply", "grade"),
    [
        ("We go live at 2026-11-07T22:30:00Z.", 10),
        ("Cutover: 2026-11-07T09:00+01:00.", 10),
        ("We go live at 2026-11-09T22:30Z.", 0),
        ("We go live at 2026-12-07T08:00Z.", 0),
    ],
)
def test_an_iso_date_time_is_read_as_its_date(reply: str, grade: float) -> None:
    assert score(CUTOVER, "November 7, 2026", reply, MINUTES) == grade


ROLLBACK = ("How long is the agreed rollback window?", "4 hours", MINUTES)
INC = ("How long did INC-2291 last?", "112 minutes", LOG)
CORE = ("What are the studio's core working hours?", "10:00 to 15:00", HANDBOOK)
PROBATION = ("How long is the probationary period for new team members?", "90 days", HANDBOOK)


@pytest.mark.parametrize(
    ("asked", "reply", "grade"),
    [
        # #49's eighth round: a struck or withdrawn value is not said
        (ROLLBACK, "The rollback window is ~~6 hours~~ **4 hours**.", 10),
        (ROLLBACK, "The rollback window is ~~4 hours~~ 6 hours.", 0),
        (ROLLBACK, "The rollback window is <del>4 hours</del>.", 0),
        (ROLLBACK, "It is 4 hours (withdrawn); 6 hours applies.", 0),
        # a year said aloud
        (("When is the production cutover scheduled?", "November 7, 2026", MINUTES),
         "November seventh, twenty twenty-six.", 10),
        (("When is the production cutover scheduled?", "November 7, 2026", MINUTES),
         "November seventh, twenty twenty-five.", 0),
        # durations in ISO 8601 and as hours and minutes
        (INC, "INC-2291 lasted PT1H52M.", 10),
        (INC, "INC-2291 lasted PT2H12M.", 0),
        (INC, "It lasted an hour and fifty-two minutes.", 10),
        (INC, "INC-2291 lasted 1:12 (h:mm).", 0),
        # clock times in other forms; "until" joins a span as "to" does
        (CORE, "Les heures obligatoires sont 10h00-15h00.", 10),
        (CORE, "From ten in the morning until three in the afternoon.", 10),
        (CORE, "From nine in the morning until three in the afternoon.", 0),
        # a section sign cites wherever it stands
        (PROBATION, "Probation lasts 90 days, as set out in §12 of the handbook.", 0),
        (PROBATION, "Probation lasts 90 days (§1 of the handbook).", 10),
    ],
)  # fmt: skip
def test_struck_spoken_and_coded_forms(
    asked: tuple[str, str, str], reply: str, grade: float | None
) -> None:
    question, expected, document = asked
    assert score(question, expected, reply, document) == grade
