"""The corpus documents the code judge's form tests ask about, and one reply's grade: what
tests/test_code_judge_forms.py and tests/test_code_judge_hedges.py share."""

from __future__ import annotations

from agenteval.judges.correctness import Question, grade_answer

CLIENT = "eval/corpus/documents/ledgerline_client.py"
HANDBOOK = "eval/corpus/documents/fenwick_orla_handbook.md"
REPORT = "eval/corpus/documents/harbor_lantern_q2_report.md"
LOG = "eval/corpus/documents/kestrel_incident_log.txt"
MINUTES = "eval/corpus/documents/quillfeather_migration_minutes.md"
POLICY = "eval/corpus/documents/saltmarsh_travel_expense_policy.txt"


def score(question: str, expected: str, reply: str, document: str) -> float | None:
    """The code judge's grade of `reply` (None: it defers) to a question whose answer is in
    `document`."""
    asked = Question(question, expected, False, True, documents=[document])
    return grade_answer(asked, reply).score
