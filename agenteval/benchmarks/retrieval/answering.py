"""End-to-end answers: the target answers every labelled question over the whole library, code
grades the answer, and every wrong answer is a retrieval miss or a generation miss.

Accuracy uses the shared reader (`benchmarks.answers`): numbers within 1% with unit scales,
normalised exact match with aliases, short answers that must appear in the reply. What code
cannot settle is `unscored`, never guessed. The evidence reached the model when a passage
its tools returned covers at least half of the labelled quote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.benchmarks.answers import final_answer, precheck
from agenteval.benchmarks.questions import QATask, build_qa_suite
from agenteval.benchmarks.retrieval.library import Span, document_text, squash
from agenteval.benchmarks.retrieval.records import EvidenceQuestion
from agenteval.fileio import write_json
from agenteval.layout import Layout, load_suite, load_transcript
from agenteval.pipeline import step_infer
from agenteval.schema.transcript import Transcript


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str | None
    outcome: str  # correct | wrong | unscored | error
    rule: str
    evidence_seen: bool
    miss: str | None  # retrieval | generation, for wrong answers


def answer_layout(layout: Layout) -> Layout:
    return Layout(layout.root, layout.data / "answers", layout.reports)


def as_tasks(questions: list[EvidenceQuestion], docs: list[str]) -> list[QATask]:
    """Each question over the whole library: every document is indexed before it is asked."""
    return [
        QATask(
            id=q.id, question=q.question, answer=q.answer, aliases=q.aliases, level=1, files=docs
        )
        for q in questions
    ]


def run_answers(
    loaded: Mapping[str, Any],
    seed: int,
    layout: Layout,
    questions: list[EvidenceQuestion],
    docs: list[str],
) -> Any:
    """Ask the target (engine, resumable transcripts) -> <data>/answers/transcripts/.
    `loaded`: the params as loaded, which the scenario pipeline's step_infer still takes."""
    where = answer_layout(layout)
    suite = build_qa_suite(as_tasks(questions, docs), 1, seed, layout.root, None)
    write_json(where.suite, suite)
    return step_infer(dict(loaded), where)


def evidence_seen(transcript: Transcript, span: Span, root: Path, texts: dict[str, str]) -> bool:
    """Did any passage the agent's tools returned cover at least half of the quote?"""
    for turn in transcript.turns:
        for call in turn.tool_calls:
            if not call.ok or not isinstance(call.result, Mapping):
                continue
            passages = call.result.get("results") or []
            if call.name == "read_document":
                passages = [{"doc": call.result.get("path"), "text": call.result.get("text")}]
            for passage in passages:
                doc = str(passage.get("doc") or "")
                if doc != span.doc:
                    continue
                text = texts.setdefault(doc, document_text(root, doc))
                flat = squash(str(passage.get("text") or ""))
                start = text.find(flat) if flat else -1
                if start >= 0 and span.covered_by(Span(doc, start, start + len(flat))):
                    return True
    return False


def grade_answers(
    layout: Layout, questions: list[EvidenceQuestion], spans: Mapping[str, Span]
) -> list[Answer]:
    where = answer_layout(layout)
    load_suite(where)  # the suite of this run must exist
    texts: dict[str, str] = {}
    graded = []
    for q in questions:
        transcript = load_transcript(where.transcripts, q.id, 0)
        if transcript is None or transcript.status != "COMPLETED" or not transcript.turns:
            status = transcript.status if transcript else "missing"
            graded.append(Answer(q.id, None, "error", status, False, None))
            continue
        reply = final_answer(transcript.turns[-1].response)
        check = precheck(reply, q.answer, q.aliases, q.question)
        seen = evidence_seen(transcript, spans[q.id], layout.root, texts)
        if check.letter is None:
            graded.append(Answer(q.id, reply, "unscored", check.rule, seen, None))
        elif check.letter == "A":
            graded.append(Answer(q.id, reply, "correct", check.rule, seen, None))
        else:
            miss = "generation" if seen else "retrieval"
            graded.append(Answer(q.id, reply, "wrong", check.rule, seen, miss))
    return graded


def accuracy(answers: list[Answer]) -> dict[str, Any]:
    scored = [a for a in answers if a.outcome in ("correct", "wrong")]
    correct = sum(a.outcome == "correct" for a in scored)
    return {
        "accuracy": round(correct / len(scored), 6) if scored else None,
        "correct": correct,
        "wrong": len(scored) - correct,
        "unscored": sum(a.outcome == "unscored" for a in answers),
        "error": sum(a.outcome == "error" for a in answers),
        "retrieval_miss": sum(a.miss == "retrieval" for a in answers),
        "generation_miss": sum(a.miss == "generation" for a in answers),
        "total": len(answers),
    }
