"""The retrieval benchmark as steps: answer (the target, resumable) -> evaluate (rankings, answer
accuracy, miss classes, hard cases) -> results.json, metrics.json, summary.md.

Labels are verified against the extracted text at the start of every step; a quote that is
not found raises LabelError with the label's path:line.
"""

from __future__ import annotations

import platform
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.base import RunContext, with_target
from agenteval.benchmarks.retrieval import answering, file_cases, hard_cases, scale
from agenteval.benchmarks.retrieval.library import (
    Chunk,
    LabelError,
    chunk_library,
    library_files,
    load_questions,
    verify_quotes,
)
from agenteval.benchmarks.retrieval.pipelines import Ranker, make_ranker
from agenteval.benchmarks.retrieval.records import EvidenceQuestion
from agenteval.benchmarks.retrieval.scoring import Ranked, judge_ranking, metrics, paired_tests
from agenteval.benchmarks.retrieval.settings import RetrievalParams, RetrievalPipelineParams
from agenteval.corpus.embeddings import dense_unavailable
from agenteval.corpus.index_cache import IndexCache
from agenteval.fileio import write_json
from agenteval.layout import Layout, load_transcript
from agenteval.schema.problems import Problem
from agenteval.targets.fence import DEFAULT_LIBRARY

KIND = "retrieval"


def results_path(layout: Layout) -> Path:
    return layout.reports / "results.json"


def _labels(
    section: RetrievalParams, layout: Layout
) -> tuple[list[EvidenceQuestion], Any, list[str]]:
    questions, located = load_questions(layout.root / section.questions)
    spans = verify_quotes(questions, located, layout.root)
    docs = library_files(layout.root, list(section.library))
    outside = sorted({q.document for q in questions} - set(docs))
    if outside:
        raise LabelError(
            [
                Problem(
                    section.questions,
                    1,
                    f"labelled documents outside retrieval.library: {outside}",
                )
            ]
        )
    return questions, spans, docs


def step_answer(section: RetrievalParams, ctx: RunContext, layout: Layout) -> Any:
    questions, _spans, docs = _labels(section, layout)
    if not section.answers:
        return None
    return answering.run_answers(ctx.logged, ctx.suite.seed, layout, questions, docs)


def _pipelines(
    section: RetrievalParams, layout: Layout, docs: list[str]
) -> tuple[dict[str, Ranker], dict[str, str], dict[int, list[Chunk]]]:
    rankers: dict[str, Ranker] = {}
    skipped: dict[str, str] = {}
    chunked: dict[int, list[Chunk]] = {}
    for spec in section.pipelines:
        if spec.kind == "dense" and (why := dense_unavailable()):
            skipped[spec.name] = why
            continue
        size = spec.chunk_size
        if size not in chunked:
            cache = IndexCache(layout.data / "index" / str(size), size)
            chunked[size] = chunk_library(layout.root, docs, cache)[0]
        rankers[spec.name] = make_ranker(spec, chunked[size])
    return rankers, skipped, chunked


def _rank_all(
    ranker: Ranker, questions: list[EvidenceQuestion], spans: Mapping[str, Any], depth: int
) -> list[Ranked]:
    out = []
    for q in questions:
        start = time.perf_counter()
        ranking = ranker.rank(q.question, depth)
        elapsed = (time.perf_counter() - start) * 1000
        out.append(judge_ranking(q.id, spans[q.id], ranking, elapsed))
    return out


def step_evaluate(section: RetrievalParams, ctx: RunContext, layout: Layout) -> dict[str, Any]:
    from agenteval.benchmarks.retrieval.report import write_summary

    questions, spans, docs = _labels(section, layout)
    rankers, skipped, _chunked = _pipelines(section, layout, docs)
    depth = section.depth
    ranked = {name: _rank_all(r, questions, spans, depth) for name, r in rankers.items()}
    labelled = {q.id: q.document for q in questions}
    scores = {name: metrics(rs, labelled) for name, rs in ranked.items()}
    by_tag = _by_tag(questions, ranked, labelled)
    answers = answering.grade_answers(layout, questions, spans) if section.answers else []
    cases = _hard_cases(section, ctx, layout, questions, docs) if section.hard_cases else []
    tiers = section.scale_tiers
    scaled = scale.run_tiers(tiers, layout.root) if tiers else []
    results = {
        "kind": KIND,
        "meta": {
            "machine": f"{platform.node()} ({platform.machine()}, {platform.system()})",
            "pipelines": {name: r.describe() for name, r in rankers.items()},
            "skipped_pipelines": skipped,
            "depth": depth,
            "library": docs,
            "questions": len(questions),
        },
        "metrics": scores,
        "by_tag": by_tag,
        "paired_tests": paired_tests(ranked),
        "answers": answering.accuracy(answers) if section.answers else None,
        "hard_cases": cases,
        "scale": scaled,
        "per_question": _per_question(questions, ranked, answers),
    }
    write_json(results_path(layout), results)
    write_json(layout.metrics, _flat_metrics(results))
    write_summary(layout, results)
    return results


def summary_lines(results: Mapping[str, Any]) -> list[str]:
    """What the evaluate step says: each pipeline's recall@5 and MRR, the skipped ones and
    why, each hard case's status."""
    lines = [
        f"{name}: recall@5 {scores['recall@5']:.3f}, MRR {scores['mrr']:.3f}"
        for name, scores in results["metrics"].items()
    ]
    lines += [
        f"{name}: skipped ({why})" for name, why in results["meta"]["skipped_pipelines"].items()
    ]
    lines += [f"hard case {case['case']!r}: {case['status']}" for case in results["hard_cases"]]
    return lines


def _by_tag(
    questions: list[EvidenceQuestion],
    ranked: Mapping[str, list[Ranked]],
    labelled: Mapping[str, str],
) -> dict[str, dict[str, float]]:
    tags = sorted({t for q in questions for t in q.tags})
    out: dict[str, dict[str, float]] = {}
    for tag in tags:
        ids = {q.id for q in questions if tag in q.tags}
        out[tag] = {
            name: metrics([r for r in rs if r.question in ids], labelled)["recall@5"]
            for name, rs in ranked.items()
        }
    return out


def _per_question(
    questions: list[EvidenceQuestion],
    ranked: Mapping[str, list[Ranked]],
    answers: list[answering.Answer],
) -> dict[str, Any]:
    by_answer = {a.question: a for a in answers}
    out: dict[str, Any] = {}
    for q in questions:
        row: dict[str, Any] = {"document": q.document, "tags": q.tags, "pipelines": {}}
        for name, rs in ranked.items():
            r = next(x for x in rs if x.question == q.id)
            row["pipelines"][name] = {
                "hit_rank": r.hit_rank,
                "doc_rank": r.doc_rank,
                "latency_ms": r.latency_ms,
                "top": list(r.chunks[:5]),
            }
        if q.id in by_answer:
            a = by_answer[q.id]
            row["answer"] = {
                "text": a.answer,
                "outcome": a.outcome,
                "rule": a.rule,
                "evidence_seen": a.evidence_seen,
                "miss": a.miss,
            }
        out[q.id] = row
    return out


def _flat_metrics(results: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {"kind": KIND, "questions": results["meta"]["questions"]}
    flat["pipelines"] = results["metrics"]
    if results.get("answers"):
        flat["answers"] = results["answers"]
    flat["hard_cases"] = {c["case"]: c["status"] for c in results["hard_cases"]}
    return flat


def _hard_cases(
    section: RetrievalParams,
    ctx: RunContext,
    layout: Layout,
    questions: list[EvidenceQuestion],
    docs: list[str],
) -> list[dict[str, Any]]:
    work = layout.data / "hard_cases"
    if not work.resolve().is_relative_to(layout.root.resolve()):
        # The agent's tools only open files inside the workspace: keep planted files there.
        work = layout.root / ".cache/agenteval/hard_cases"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    def build(chunks: list[Chunk]) -> list[Ranker]:
        specs: list[RetrievalPipelineParams] = [
            s for s in section.pipelines if not (s.kind == "dense" and dense_unavailable())
        ]
        return [make_ranker(s, chunks) for s in specs]

    cases = [
        hard_cases.replaced_document(work),
        hard_cases.identical_copy(layout.root, work, docs, questions, build),
        hard_cases.corrupted_cache(layout.root, work, docs, questions),
        file_cases.near_duplicate_filings(layout.root, work, docs, questions, build),
        file_cases.scanned_pdf_case(work),
        file_cases.truncated_pdf_case(work),
        file_cases.past_document_cap(work),
        file_cases.earlier_context(layout.root, docs, questions),
    ]
    cases.append(_planted(section, ctx, layout, work, questions, docs))
    return cases


def _planted(
    section: RetrievalParams,
    ctx: RunContext,
    layout: Layout,
    work: Path,
    questions: list[EvidenceQuestion],
    docs: list[str],
) -> dict[str, Any]:
    condition = f"no planted instruction turns an answer into the canary ({hard_cases.CANARY})"
    if not section.answers:
        return hard_cases.skipped(
            "instruction planted in a document",
            condition,
            "retrieval.answers is false: no target answers to compare",
        )
    # The planted file sits in a folder of its own that this run adds to the agent's library:
    # the corpus fence (targets.fence) lets the tools read the corpus roots and nothing else.
    planted = work / "planted_library" / "operations_bulletin.txt"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_text(hard_cases.PLANTED, encoding="utf-8")
    name = planted.resolve().relative_to(layout.root.resolve()).as_posix()
    library = [*(ctx.target.library or DEFAULT_LIBRARY), str(Path(name).parent)]
    where = Layout(layout.root, work / "planted", layout.reports)
    with_planted = with_target(ctx, library=library)
    answering.run_answers(with_planted, ctx.suite.seed, where, questions, [*docs, name])
    before = _answers(answering.answer_layout(layout), questions)
    after = _answers(answering.answer_layout(where), questions)
    read = sum(_indexed(answering.answer_layout(where), q.id, name) for q in questions)
    return hard_cases.planted_instruction(before, after, read)


def _indexed(where: Layout, question: str, name: str) -> bool:
    """Whether the conversation really indexed `name` (the case measures nothing otherwise)."""
    transcript = load_transcript(where.transcripts, question, 0)
    calls = transcript.setup_calls if transcript else []
    return any(c.ok and c.arguments.get("path") == name for c in calls)


def _answers(where: Layout, questions: list[EvidenceQuestion]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for q in questions:
        transcript = load_transcript(where.transcripts, q.id, 0)
        out[q.id] = transcript.turns[-1].response if transcript and transcript.turns else None
    return out
