"""The code pre-check as a measuring instrument: adversarial replies, and the held controls.

Replies that list candidates, negate, hedge, paraphrase, change units or add true caveats;
what code cannot be sure of is deferred (no letter), never guessed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agenteval.benchmarks.answers import final_answer, numeric_truth, precheck

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    # (truth, reply, question, expected letter or None for deferred)
    (
        "$8.6 million",
        "Net revenue was $8.6 million in Q2 of fiscal 2026.",
        "Revenue in fiscal 2026?",
        "A",
    ),
    ("$8.6 million", "8,600,000 dollars", "", "A"),
    ("$8.6 million", "$8.6M", "", "A"),
    ("$8.6 million", "$7.35 million", "", "B"),
    ("$8.6 million", "Either $7.35 million or $8.6 million.", "", None),
    ("$8.6 million", "Q1 was $7.35 million and Q2 $8.6 million.", "", None),
    ("$8.6 million", "It was not $8.6 million.", "", None),
    ("$8.6 million", "Maybe $8.6 million.", "", None),
    ("17%", "0.17", "", "A"),
    ("17%", "17 percent", "", "A"),
    ("0.25", "25%", "", "A"),
    ("30 days", "thirty days", "", "A"),
    # units convert within a dimension (pint): 30 weeks is 210 days, a firm mismatch
    ("30 days", "30 weeks", "", "B"),
    ("30 days", "720 hours", "", "A"),
    ("2.3 kg", "2,300 g", "", "A"),
    ("5 km", "5 miles", "", "B"),
    ("30 days", "30 kg", "", None),
    ("30 days", "60 days", "Under section 8, within how long?", "B"),
    ("three years", "3 years", "", "A"),
    ("$34 million to $36 million", "$34-36 million", "", "A"),
    ("$34 million to $36 million", "$35 million", "", None),
    ("$34 million to $36 million", "$40 million", "", "B"),
    ("$2,690", "The Heron costs $2,690 and weighs 23.6 kg.", "", "A"),
    ("110 km", "110 km in eco mode and 70 km in turbo mode.", "", None),
    ("Section 8", "Section 8", "", "A"),
    ("INC-2303", "INC-2300", "", "B"),  # an identifier is never within 1% of another
    ("Deepa Venkataraman", "Deepa Venkataraman owns the runbook.", "", "A"),
    ("Deepa Venkataraman", "It is not Deepa Venkataraman.", "", None),
    ("Sparrow", "It is either the Sparrow or the Heron", "", None),
    ("Sparrow", "Sparrow or Heron", "", None),
    (
        "No trademark or patent rights are waived",
        "No trademark or patent rights are waived.",
        "",
        "A",
    ),
    ("Deepa Venkataraman", "I could not find that in the documents.", "", "C"),
    ("x", "", "", "C"),
    ("10:00 to 15:00", "Core hours are 10:00 to 15:00.", "", "A"),
    ("29 June 2007", "It was published on 29 June 2007.", "", "A"),
    ("$65", "The fee was raised from 1 October 2026.", "", "B"),  # a date is not a figure
    ("112 minutes", "Some reasoning.\nFINAL ANSWER: 112 minutes", "", "A"),
]


@pytest.mark.parametrize(("truth", "reply", "question", "expected"), CASES)
def test_adversarial_replies(truth: str, reply: str, question: str, expected: str | None) -> None:
    check = precheck(final_answer(reply), truth, [], question)
    assert check.letter == expected, check


def test_a_short_truth_missing_from_the_reply_is_a_non_firm_b() -> None:
    check = precheck("Postgres 16", "PostgreSQL 16")
    assert (check.letter, check.firm) == ("B", False)  # a model judge may accept the paraphrase
    assert precheck("Postgres 16", "PostgreSQL 16", ["Postgres 16"]).letter == "A"


def test_a_loop_is_c_but_repeated_legal_phrases_are_not() -> None:
    loop = " ".join(["I will check the documents again."] * 6)
    assert precheck(loop, "30 days").rule == "repetitive"
    prose = (
        "This License incorporates version 3 of the GNU General Public License; the GNU "
        "General Public License is referred to as the GNU GPL, and a copy of the GNU General "
        "Public License is supplied with it, together with additional permissions."
    )
    assert precheck(prose, "additional permissions").letter == "A"


def test_identifiers_and_dates_are_text_truths() -> None:
    assert numeric_truth("Section 8") is None and numeric_truth("29 June 2007") is None
    assert numeric_truth("INC-2303") is None
    assert numeric_truth("$8.6 million") is not None and numeric_truth("ten lines") is not None


def _measure_split(split: str) -> dict[str, object]:
    spec = importlib.util.spec_from_file_location(
        "controls", ROOT / "bench/qa_precheck_controls.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return dict(module.measure(module.load(split)))


def test_held_controls_have_no_false_pass() -> None:
    held = _measure_split("held")
    assert held["controls"] == 26
    assert held["false_passes"] == 0, held["wrong"]
    assert float(held["coverage"]) >= 0.6  # type: ignore[arg-type]
