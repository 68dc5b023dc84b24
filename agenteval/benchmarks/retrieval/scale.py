"""Retrieval at scale tiers (10 / 100 / 1,000 documents): index time, peak RSS, index and
cache size, query latency p50 / p95, recall@5 and MRR as distractors are added.

Each tier runs in its own process (`python -m agenteval.benchmarks.retrieval.scale --tier
N` prints one JSON line), so its peak RSS is that tier's alone. The labelled documents (the
most-questioned first) plus distractors - passages of the pinned corpora recombined, and
generated reports with made-up names and figures - all seeded, so a rerun indexes the same
text. Index time covers reading, chunking, the signed chunk cache and the BM25 index. The
retrieval pipeline's evaluate stage runs `retrieval.scale_tiers`; bench/retrieval_scale.py
prints the table.
"""

from __future__ import annotations

import json
import random
import resource
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from agenteval.benchmarks.retrieval.library import (
    chunk_library,
    library_files,
    load_questions,
    squash,
    verify_quotes,
)
from agenteval.benchmarks.retrieval.pipelines import BM25Ranker
from agenteval.benchmarks.retrieval.scoring import judge_ranking, metrics
from agenteval.corpus.documents import read_text
from agenteval.corpus.index_cache import IndexCache
from agenteval.corpus.retrieval import split_sentences
from agenteval.scratch import temporary_folder

ROOT = Path.cwd()
LIBRARY = ["eval/corpus/documents", "data/corpora"]
QUESTIONS = "eval/retrieval/questions.yaml"
WORDS = """harbour ledger quarterly vendor station audit pump freight cargo permit tariff
invoice budget region survey warranty meeting roadmap clinic archive turbine bridge orchard
library contract pipeline depot shipment renewal forecast inspection""".split()
NAMES = "Aldren Brisco Calloway Dunmore Everleigh Farrow Galloway Hartwell Ingram Jessop".split()


def distractor_sentences(root: Path, labelled: list[str], quotes: list[str]) -> list[str]:
    """Sentences of the pinned corpora that carry no labelled evidence."""
    flat_quotes = [squash(q) for q in quotes]
    found = []
    for doc in labelled:
        for sentence in split_sentences(read_text(root / doc)):
            flat = squash(sentence)
            if len(flat) > 40 and not any(flat in q or q in flat for q in flat_quotes):
                found.append(flat)
    return found


def generated(rng: random.Random, index: int, pool: list[str]) -> str:
    lines = [f"# {rng.choice(NAMES)} {rng.choice(WORDS).title()} report {index}"]
    for _ in range(rng.randint(12, 30)):
        if rng.random() < 0.5:
            lines.append(rng.choice(pool))
        else:
            a, b = rng.sample(WORDS, 2)
            lines.append(
                f"The {a} {b} figure for {rng.choice(NAMES)} was "
                f"${rng.randint(1, 900)},{rng.randint(100, 999)} in period {rng.randint(1, 12)}."
            )
    return "\n".join(lines) + "\n"


def run_tier(tier: int, root: Path = ROOT) -> dict[str, object]:
    """One tier's figures, measured in this process (run it alone: peak RSS is the process's)."""
    questions, located = load_questions(root / QUESTIONS)
    spans = verify_quotes(questions, located, root)
    asked = Counter(q.document for q in questions)
    labelled = sorted(library_files(root, LIBRARY), key=lambda d: (-asked[d], d))
    chosen = labelled[: min(tier, len(labelled))]
    with temporary_folder("agenteval-scale-") as tmp:
        rng = random.Random(tier)
        pool = distractor_sentences(root, labelled, [q.quote for q in questions])
        docs = list(chosen)
        for i in range(tier - len(chosen)):
            path = Path(tmp) / f"distractor_{i:04d}.md"
            path.write_text(generated(rng, i, pool), encoding="utf-8")
            docs.append(str(path))
        cache = IndexCache(Path(tmp) / "cache", 400)
        start = time.perf_counter()
        chunks, _ = chunk_library(root, docs, cache)
        ranker = BM25Ranker("bm25", chunks, 400, True)
        ranker.rank("warm up the index", 1)  # bm25s builds its index on the first search
        index_s = time.perf_counter() - start
        index_dir = Path(tmp) / "bm25s"
        ranker.index._retriever.save(str(index_dir))
        index_bytes = sum(p.stat().st_size for p in index_dir.rglob("*") if p.is_file())
        mine = [q for q in questions if q.document in chosen]
        ranked, latencies = [], []
        for q in mine:
            began = time.perf_counter()
            ranking = ranker.rank(q.question, 20)
            latencies.append((time.perf_counter() - began) * 1000)
            ranked.append(judge_ranking(q.id, spans[q.id], ranking, latencies[-1]))
        # Before ranx is imported: its numba runtime would dominate the figure.
        peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        scores = metrics(ranked, {q.id: q.document for q in mine})
        cache_bytes = cache.size_bytes()
    return {
        "documents": len(docs),
        "chunks": len(chunks),
        "index_s": round(index_s, 3),
        "chunks_per_s": round(len(chunks) / index_s),
        "peak_rss_mb": round(peak_mb, 1),
        "index_mb": round(index_bytes / 2**20, 2),
        "cache_mb": round(cache_bytes / 2**20, 2),
        "p50_ms": round(statistics.median(latencies), 2),
        "p95_ms": round(statistics.quantiles(latencies, n=20)[-1], 2)
        if len(latencies) > 1
        else round(latencies[0], 2),
        "questions": len(mine),
        "recall@5": scores["recall@5"],
        "mrr": scores["mrr"],
    }


COLUMNS = (
    "documents", "chunks", "index_s", "chunks_per_s", "peak_rss_mb", "index_mb", "cache_mb",
    "p50_ms", "p95_ms", "questions", "recall@5", "mrr",
)  # fmt: skip


def run_tiers(tiers: Sequence[int], root: Path) -> list[dict[str, object]]:
    """Each tier in a process of its own, in order; a tier that fails raises (the run fails)."""
    rows = []
    for tier in tiers:
        done = subprocess.run(
            [sys.executable, "-m", "agenteval.benchmarks.retrieval.scale", "--tier", str(tier)],
            cwd=root, capture_output=True, text=True, check=False,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"scale tier {tier} failed: {done.stderr.strip()[-2000:]}")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def table(rows: Sequence[dict[str, object]]) -> list[str]:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---:|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(row[c]) for c in COLUMNS) + " |" for row in rows]
    return lines


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="one retrieval scale tier, as a JSON line")
    parser.add_argument("--tier", type=int, required=True)
    print(json.dumps(run_tier(parser.parse_args().tier, Path.cwd())))
