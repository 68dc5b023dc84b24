"""Retrieval scores: recall@1/3/5/10/20, MRR and document recall@5 with ranx, and ranx's paired
tests between pipelines.

A question has one relevant item, its evidence; a pipeline retrieves it at the rank of its
first chunk covering at least half of the quote. That makes recall@k (ranx `hit_rate@k`)
and MRR comparable across pipelines that chunk differently, so they can be paired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval.benchmarks.retrieval.library import Chunk, Span

KS = (1, 3, 5, 10, 20)
EVIDENCE = "evidence"
# The paired t-test (ranx "student"): deterministic. ranx's Fisher randomization test draws
# its permutations in numba threads whose random streams ignore the seed, so its p-values
# change from run to run (measured: 0.773 / 0.782 / 0.787 on the same input), which would
# make every repro's results differ.
PAIRED_TEST = "student"


@dataclass(frozen=True)
class Ranked:
    question: str
    hit_rank: int | None  # 1-based rank of the first chunk covering the quote
    doc_rank: int | None  # 1-based rank of the labelled document among ranked documents
    chunks: tuple[str, ...]
    latency_ms: float


def judge_ranking(question: str, span: Span, ranking: Sequence[Chunk], latency_ms: float) -> Ranked:
    hit = next((i for i, c in enumerate(ranking, 1) if c.span and span.covered_by(c.span)), None)
    docs = list(dict.fromkeys(c.doc for c in ranking))
    doc_rank = docs.index(span.doc) + 1 if span.doc in docs else None
    return Ranked(question, hit, doc_rank, tuple(c.id for c in ranking), round(latency_ms, 3))


def _runs(
    ranked: Sequence[Ranked],
) -> tuple[dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    chunk_run: dict[str, dict[str, float]] = {}
    doc_run: dict[str, dict[str, float]] = {}
    for r in ranked:
        # Scores only order the list (ranx sorts by score): depth - rank keeps the pipeline's order.
        ids = list(r.chunks)
        if r.hit_rank is not None:
            ids[r.hit_rank - 1] = EVIDENCE
        chunk_run[r.question] = {cid: float(len(ids) - i) for i, cid in enumerate(ids)} or {
            "-": 0.0
        }
        docs = list(dict.fromkeys(cid.split("#", 1)[0] for cid in r.chunks))
        doc_run[r.question] = {d: float(len(docs) - i) for i, d in enumerate(docs)} or {"-": 0.0}
    return chunk_run, doc_run


def metrics(ranked: Sequence[Ranked], docs: Mapping[str, str]) -> dict[str, float]:
    """recall@k, MRR (ranx) and document recall@5 of one pipeline over the questions."""
    from ranx import Qrels, Run, evaluate

    chunk_run, doc_run = _runs(ranked)
    qrels = Qrels({r.question: {EVIDENCE: 1} for r in ranked})
    names = [f"hit_rate@{k}" for k in KS] + ["mrr"]
    scores = evaluate(qrels, Run(chunk_run), names, make_comparable=True)
    doc_qrels = Qrels({q: {d: 1} for q, d in docs.items() if q in doc_run})
    doc_scores = evaluate(doc_qrels, Run(doc_run), ["hit_rate@5"], make_comparable=True)
    out = {f"recall@{k}": round(float(scores[f"hit_rate@{k}"]), 6) for k in KS}
    out["mrr"] = round(float(scores["mrr"]), 6)
    out["doc_recall@5"] = round(float(doc_scores), 6)
    return out


def paired_tests(by_pipeline: Mapping[str, Sequence[Ranked]]) -> list[dict[str, Any]]:
    """ranx.compare between every pair of pipelines on recall@5 and MRR (p-values)."""
    if len(by_pipeline) < 2:
        return []
    from ranx import Qrels, Run, compare

    names = list(by_pipeline)
    questions = sorted({r.question for rs in by_pipeline.values() for r in rs})
    qrels = Qrels({q: {EVIDENCE: 1} for q in questions})
    runs = []
    for name in names:
        run = Run(_runs(by_pipeline[name])[0], name=name)
        runs.append(run)
    report = compare(
        qrels, runs, metrics=["hit_rate@5", "mrr"], stat_test=PAIRED_TEST, make_comparable=True
    )
    table = report.to_dict()
    out = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pvalues = table[a]["comparisons"][b]
            scores_a, scores_b = table[a]["scores"], table[b]["scores"]
            for metric, label in (("hit_rate@5", "recall@5"), ("mrr", "mrr")):
                out.append(
                    {
                        "a": a,
                        "b": b,
                        "metric": label,
                        "test": PAIRED_TEST,
                        "a_value": round(float(scores_a[metric]), 6),
                        "b_value": round(float(scores_b[metric]), 6),
                        "p_value": round(float(pvalues[metric]), 6),
                    }
                )
    return out
