"""Code retrieval scores with ranx: file recall@1/5/10, function recall@5/10 and MRR.

A search returns chunks; files and definitions are ranked by their first chunk in the
ranking (`depth` chunks deep). Recall@k is the share of a query's relevant files (or
definitions) among the first k; MRR is the mean of 1 / the rank of the first relevant file.
Function recall is over the queries that have a relevant definition (a fix that changed
only module-level lines has none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FILE_KS = (1, 5, 10)
FUNCTION_KS = (5, 10)


@dataclass(frozen=True)
class Ranking:
    query: str
    files: tuple[str, ...]
    symbols: tuple[str, ...]  # "path::Qualified.name"
    latency_ms: float


def ranked_from_chunks(query: str, chunks: Sequence[Any], latency_ms: float) -> Ranking:
    files = tuple(dict.fromkeys(c.path for c in chunks))
    names = []
    for c in chunks:
        names += [f"{c.path}::{s}" for s in ([c.symbol] if c.symbol else []) + list(c.symbols)]
    return Ranking(query, files, tuple(dict.fromkeys(names)), round(latency_ms, 3))


def _run(rankings: Sequence[Ranking], field: str) -> dict[str, dict[str, float]]:
    out = {}
    for r in rankings:
        items = getattr(r, field)
        out[r.query] = {item: float(len(items) - i) for i, item in enumerate(items)} or {"-": 0.0}
    return out


def metrics(
    rankings: Sequence[Ranking],
    files: Mapping[str, Sequence[str]],
    symbols: Mapping[str, Sequence[str]],
) -> dict[str, float | None]:
    from ranx import Qrels, Run, evaluate

    file_qrels = Qrels({q: {f: 1 for f in fs} for q, fs in files.items()})
    names = [f"recall@{k}" for k in FILE_KS] + ["mrr"]
    scores = evaluate(file_qrels, Run(_run(rankings, "files")), names, make_comparable=True)
    out: dict[str, float | None] = {
        f"file_recall@{k}": round(float(scores[f"recall@{k}"]), 6) for k in FILE_KS
    }
    out["mrr"] = round(float(scores["mrr"]), 6)
    with_symbols = {q: s for q, s in symbols.items() if s}
    if with_symbols:
        qrels = Qrels({q: {s: 1 for s in ss} for q, ss in with_symbols.items()})
        run = Run({q: r for q, r in _run(rankings, "symbols").items() if q in with_symbols})
        found = evaluate(qrels, run, [f"recall@{k}" for k in FUNCTION_KS], make_comparable=True)
        for k in FUNCTION_KS:
            out[f"function_recall@{k}"] = round(float(found[f"recall@{k}"]), 6)
    else:
        out.update({f"function_recall@{k}": None for k in FUNCTION_KS})
    return out


def first_rank(ranked: Sequence[str], relevant: Sequence[str]) -> int | None:
    return next((i for i, item in enumerate(ranked, 1) if item in relevant), None)
