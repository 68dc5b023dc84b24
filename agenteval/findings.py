"""The code judge's findings, in one table: each rule names the dimension it scores and the
score it gives, in the judge prompt's words.

A grade made by code (judges.code, judges.correctness) names its rule here; the hybrid judge
binds a model judge by every rule that can score below full marks (BINDING_FINDINGS); the
scores come from the rubric's anchors in `scoring`.
"""

from __future__ import annotations

from dataclasses import dataclass

from agenteval.scoring import (
    AUTO_ZERO_DEVIATION,
    MINOR_SCORE,
    PARTIAL_SCORE,
    REASK_CAP,
    SCORE_MAX,
    SCORE_MIN,
    TOOL_LOOP_REPEATS,
)


@dataclass(frozen=True)
class CodeFinding:
    """A rule the code judge grades by: the dimension it scores and the score it gives."""

    dimension: str
    meaning: str  # the case it names, in the judge prompt's words
    score: float | None = None  # the score it always gives; None: graded (see meaning)


_BEYOND = f"{AUTO_ZERO_DEVIATION * 100:g}%"
_MINOR, _PARTIAL = f"{MINOR_SCORE:g}", f"{PARTIAL_SCORE:g}"


def _zero(dimension: str, meaning: str) -> CodeFinding:
    return CodeFinding(dimension, meaning, SCORE_MIN)


def _full(dimension: str, meaning: str) -> CodeFinding:
    return CodeFinding(dimension, meaning, SCORE_MAX)


def _findings() -> dict[str, CodeFinding]:
    """The table in the judge prompt's order: the answer, then how the agent worked, then
    every value a reply commits to and what the recompute applies."""
    return {**_answer_findings(), **_conduct_findings(), **_value_findings()}


def _answer_findings() -> dict[str, CodeFinding]:
    """Correctness of an answerable turn, an unknown one and an asked action."""
    return {
        # correctness of an answerable turn
        "precision": CodeFinding("correctness", "at most the precision table's cap for a "
                                 f"figure within {_BEYOND} of the expected one"),
        "stated": CodeFinding("correctness", f"at most {_MINOR} for an expected date given "
                              "without its year or an expected name given only in part"),
        "wrong_value": _zero("correctness", f"a committed figure more than {_BEYOND} off, "
                            "including an estimate or a range that excludes the expected one"),
        "wrong_identifier": _zero("correctness", "a committed year, date, time, version or "
                                 "identifier that differs from the expected one"),
        "wrong_name": _zero("correctness", "a different person or entity named"),
        "other_value": _zero("correctness", "a different value of the kind asked, never the "
                            "expected one, in a clause that does not say what it is about"),
        "alternatives": _zero("correctness", "several candidate values offered together "
                             "without committing to one"),
        "conflicting": _zero("correctness", "the expected value and a conflicting one both "
                            "committed to for the same thing"),
        "negated": _zero("correctness", "the expected value named only to be denied"),
        "absent": _zero("correctness", "the expected value nowhere in the reply, in any form "
                       "code reads (figures, number words, units, dates, names)"),
        "refused": _zero("correctness", "a refusal of a question the documents answer, after "
                        "searching them"),
        "lazy_refusal": _zero("correctness", "a refusal of a question the documents answer, "
                             "without searching them"),
        "phrases_missing": _zero("correctness", "an expected phrase missing from the reply"),
        "phrases_present": _full("correctness", "every expected phrase in the reply"),
        # correctness of a turn whose answer is not in the documents
        "abstained": _full("correctness", "an abstention with nothing guessed"),
        "abstain_guess": _zero("correctness", "a value guessed (stated or hedged) when the "
                              "answer is not in the documents"),
        "answered_unknown": _zero("correctness", "an answer without any abstention when the "
                                 "answer is not in the documents"),
        # correctness of a turn that asks for an action
        "action_done": _full("correctness", "the requested tool action performed"),
        "action_missing": _zero("correctness", "a requested tool action never performed "
                               "successfully"),
        "action_denied": _zero("correctness", "a reply saying the requested action failed "
                              "when it succeeded"),
    }  # fmt: skip


def _conduct_findings() -> dict[str, CodeFinding]:
    """Completeness, tool selection, efficiency and error recovery."""
    return {
        "coverage": CodeFinding("completeness", "at most 10 times the share of the expected "
                                "facts or phrases the reply states"),
        "forbidden_tool": _zero("tool_selection", "a call to a forbidden tool"),
        "missing_tool": CodeFinding("tool_selection", f"at most {_PARTIAL} when an expected "
                                    "tool never succeeded (0 when fewer than half did)"),
        "tools_used": _full("tool_selection", "the expected tools called, no forbidden one"),
        "tool_loop": _zero("efficiency", f"the same call {TOOL_LOOP_REPEATS} or more times in "
                          "a row, or two calls alternating"),
        "repeats": CodeFinding("efficiency", f"at most {_MINOR} for one or two repeated tool "
                               f"calls, {_PARTIAL} for more"),
        "no_repeats": _full("efficiency", "no tool call repeated"),
        "failure_told": _full("error_recovery", "a failed or empty tool call told to the user"),
        "retried": CodeFinding("error_recovery", "a failed call retried until it worked, "
                               "without telling the user", MINOR_SCORE),
        "failure_hidden": _zero("error_recovery", "a failed or empty tool call the reply "
                               "does not mention"),
    }  # fmt: skip


def _value_findings() -> dict[str, CodeFinding]:
    """Every value a reply commits to, its sources, and the re-ask cap."""
    return {
        # issue #49: every value a reply commits to, and the sources it names
        "corrected": _zero("correctness", "a value committed to, then corrected to a "
                          "different one (\"actually\", \"I mean\", \"correction\")"),
        "retracted": _zero("correctness", "an answer the reply's last word takes back"),
        "other_entity": _zero("correctness", "the expected value said of another entity, "
                             "the asked one never named"),
        "denied_condition": _zero("correctness", "the expected value given, but the asked "
                                 "condition denied (\"not fully paid\", \"is free\")"),
        "restated_rate": _zero("correctness", "the asked period's total restated as a rate "
                              "per another period (\"$8.6 million per month\" for a quarter)"),
        "invented_source": _zero("correctness", "the answer credited to a section, appendix, "
                                "table, row or document the indexed documents do not have"),
        "misattributed_source": CodeFinding("correctness", f"at most {_MINOR} when the "
                                            "source the reply names exists but does not hold "
                                            "the value"),
        # context retention: applied by the recompute from the verdict's `reasked` flag
        "reasked": CodeFinding("context_retention", f"at most {REASK_CAP:g} when the agent "
                               "asks again for a fact an earlier turn established"),
    }  # fmt: skip


# Every rule the code judge grades by (it names the rule in TurnVerdict.findings; a score
# without a rule of this table is refused when it is made). Code scores only what it can
# settle and defers the rest, so each of these is a certain finding.
CODE_FINDINGS: dict[str, CodeFinding] = _findings()
# The rules of the table the recompute applies to any judge's verdict from what the judge
# observed (TurnVerdict.reasked), rather than the code judge from the transcript.
RECOMPUTE_FINDINGS: frozenset[str] = frozenset({"reasked"})
# The findings that bind a model judge (judge `hybrid`): every one that can score below full
# marks. The code's score on its dimension is a ceiling the model's score cannot exceed:
# code proves a reply wrong (or a figure only so close), never that all else in it is right.
# Derived, never listed by hand: a rule added to the code judge binds from then on.
BINDING_FINDINGS: dict[str, str] = {
    rule: f.meaning for rule, f in CODE_FINDINGS.items() if f.score is None or f.score < SCORE_MAX
}


def finding_score(rule: str, graded: float | None = None) -> float:
    """The score a code finding gives: its fixed score, or `graded` for a graded rule."""
    found = CODE_FINDINGS.get(rule)
    if found is None:
        raise ValueError(f"code finding {rule!r} is not in findings.CODE_FINDINGS")
    if found.score is None:
        if graded is None:
            raise ValueError(f"code finding {rule!r} is graded: give its score")
        return graded
    if graded is not None and graded != found.score:
        raise ValueError(f"code finding {rule!r} scores {found.score:g}, not {graded:g}")
    return found.score
