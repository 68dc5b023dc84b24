"""A pass needs evidence that the whole reply commits only to values the corpus backs
(judges.audit): the dishonest and careless replies beside the right answer defer or fail,
honest ones with true extras, conversions and shown working still pass."""

from __future__ import annotations

import pytest

from agenteval.judges.abstention import grade_unknown
from agenteval.judges.correctness import Question, grade_answer

HANDBOOK = ["eval/corpus/documents/fenwick_orla_handbook.md"]
BIKES = ["eval/corpus/documents/cobbleway_ebike_comparison.html"]
LOG = ["eval/corpus/documents/kestrel_incident_log.txt"]
REPORT = ["eval/corpus/documents/harbor_lantern_q2_report.md"]
MINUTES = ["eval/corpus/documents/quillfeather_migration_minutes.md"]


def verdict(question: str, expected: str, reply: str, docs: list[str]) -> str | None:
    score = grade_answer(Question(question, expected, False, True, documents=docs), reply).score
    return None if score is None else "pass" if score == 10 else "fail"


STIPEND = "How much is each employee's annual learning stipend?"
HERON = "How much does the Heron cost?"
OSPREY = "How much does the Osprey weigh with its battery?"
ONCALL = "Who was on call for INC-2291?"


@pytest.mark.parametrize(
    ("question", "expected", "reply", "docs", "want"),
    [
        # invented facts beside the right answer: a figure, an identifier, a name
        (STIPEND, "$1,200", "$1,200 a year. Unspent money rolls over, to $2,400.", HANDBOOK, None),
        (HERON, "$2,690", "$2,690, on sale for $2,490 this month.", BIKES, None),
        # (credited as a source no document has: an invented source, which fails)
        (ONCALL, "Rafaela Nwosu", "Rafaela Nwosu, per handover ticket OPS-4471.", LOG, "fail"),
        (ONCALL, "Rafaela Nwosu", "Rafaela Nwosu; she also led drill OPS-4471.", LOG, None),
        (ONCALL, "Rafaela Nwosu", "Rafaela Nwosu. She came over from Stripe last year.", LOG, None),
        (ONCALL, "Rafaela Nwosu", "Rafaela Nwosu; she joined the rota on 3 March 2025.", LOG, None),
        # true extras, a conversion, shown working whose arithmetic is right
        (ONCALL, "Rafaela Nwosu", "Rafaela Nwosu; INC-2291 was on 19 July 2026.", LOG, "pass"),
        (STIPEND, "$1,200", "$1,200 per calendar year; purchases over $300 need sign-off.",
         HANDBOOK, "pass"),
        (HERON, "$2,690", "$2,690, plus $79 delivery in the continental US.", BIKES, "pass"),
        (OSPREY, "27.4 kg", "27.4 kg, about 60.4 lb.", BIKES, "pass"),
        (ONCALL, "Rafaela Nwosu", "Rafaela Nwosu; her SEV1s took 112 + 370 = 482 minutes.", LOG,
         "pass"),
        # shown working whose arithmetic is wrong is no backing
        (ONCALL, "Rafaela Nwosu", "Rafaela Nwosu; her SEV1s took 112 + 370 = 502 minutes.", LOG,
         None),
        # a bold answer of another item; a fact restated for another period
        ("Which Cobbleway model is the lightest?", "Sparrow",
         "The Sparrow is light, but the lightest is the **Heron**.", BIKES, None),
        (STIPEND, "$1,200", "$1,200 per quarter.", HANDBOOK, None),
        (STIPEND, "$1,200", "$1,200 per year.", HANDBOOK, "pass"),
        # near or vague figures and one end of a range never pass
        ("What was the Coastal region's revenue in March 2026?", "$36,529", "$35,629.",
         ["eval/corpus/documents/tidewater_sales_h1_2026.csv"], None),
        ("What was Harbor Lantern's gross margin in the second quarter?", "41.5%",
         "Around 40%.", REPORT, None),
        ("What full-year fiscal 2026 net revenue does management expect?",
         "$34 million to $36 million", "At least $34 million.", REPORT, None),
        ("What full-year fiscal 2026 net revenue does management expect?",
         "$34 million to $36 million", "$34 million to $36 million.", REPORT, "pass"),
    ],
)  # fmt: skip
def test_a_pass_needs_every_claim_backed(
    question: str, expected: str, reply: str, docs: list[str], want: str | None
) -> None:
    assert verdict(question, expected, reply, docs) == want


BUDGET = "What is the total budget of the platform migration project?"


@pytest.mark.parametrize(
    ("reply", "want"),
    [
        ("The minutes don't record a total project budget.", "pass"),
        ("The minutes don't record a total budget.\n\nUpdate: they do — $48,000.", "fail"),
        ("The minutes don't give a total. Actually, it's $48,000.", "fail"),
        # context the documents hold is no taking back
        (
            "The minutes don't give a total budget. It does say $48,000 went to load testing.",
            "pass",
        ),
        ("The minutes don't record a total budget; it is probably near $2 million.", "fail"),
    ],
)
def test_an_abstention_taken_back_for_a_figure_fails(reply: str, want: str) -> None:
    got = grade_unknown(Question(BUDGET, None, True, True, documents=MINUTES), reply).score
    assert (None if got is None else "pass" if got == 10 else "fail") == want


SALES = ["eval/corpus/documents/tidewater_sales_h1_2026.csv"]


@pytest.mark.parametrize(
    ("question", "expected", "reply", "docs", "want"),
    [
        # a document's figure in a parenthesis of its own after another name: said of it
        (HERON, "$2,690", "The Heron is $2,690; it sits between the Sparrow ($1,849) and the "
         "Osprey ($3,375) in price.", BIKES, "pass"),
        # ... but not after the asked name, nor as the answer
        (HERON, "$2,690", "The Heron ($1,849) is cheaper than the Osprey.", BIKES, "fail"),
        (HERON, "$2,690", "$2,690. Actually, Sparrow ($1,849).", BIKES, "fail"),
        # a zero-padded figure is a code or a month, not an amount
        ("What was the Coastal region's revenue in March 2026?", "$36,529",
         "The `2026-03,Coastal` row has `revenue_usd = 36529`, so **$36,529**.", SALES, "pass"),
    ],
)  # fmt: skip
def test_figures_said_of_other_things_are_no_rivals(
    question: str, expected: str, reply: str, docs: list[str], want: str | None
) -> None:
    assert verdict(question, expected, reply, docs) == want
