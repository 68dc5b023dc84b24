"""Retrieval pipelines the benchmark scores: `bm25` (bm25s, the agents' own retriever) and
`dense` (sentence embeddings from an offline model package, when one is installed).

A pipeline ranks chunks for a query. With `dedup`, chunks with identical text count once, at
the best rank any of them reached, and are represented by the one indexed first: an
identical copy of a document under another name can neither crowd the top of a ranking nor
displace the original.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from agenteval.benchmarks.retrieval.library import Chunk, squash
from agenteval.benchmarks.retrieval.settings import RetrievalPipelineParams
from agenteval.corpus.embeddings import load_encoder
from agenteval.corpus.retrieval import Index


class Ranker(Protocol):
    name: str

    def describe(self) -> dict[str, Any]: ...

    def rank(self, query: str, depth: int) -> list[Chunk]: ...


def _key(chunk: Chunk) -> str:
    return squash(chunk.text).lower()


def first_copies(chunks: Sequence[Chunk]) -> dict[str, Chunk]:
    """Text -> the first chunk (in indexing order) that has it."""
    found: dict[str, Chunk] = {}
    for chunk in chunks:
        found.setdefault(_key(chunk), chunk)
    return found


def _dedup(
    ranked: Sequence[Chunk], depth: int, canonical: Mapping[str, Chunk] | None
) -> list[Chunk]:
    if canonical is None:
        return list(ranked[:depth])
    seen: set[str] = set()
    out = []
    for chunk in ranked:
        key = _key(chunk)
        if key in seen:
            continue
        seen.add(key)
        out.append(canonical.get(key, chunk))
        if len(out) == depth:
            break
    return out


class BM25Ranker:
    def __init__(self, name: str, chunks: Sequence[Chunk], chunk_size: int, dedup: bool) -> None:
        self.name, self.chunk_size, self.dedup = name, chunk_size, dedup
        self.canonical = first_copies(chunks) if dedup else None
        self.index = Index()
        self.by_key: dict[tuple[str, int], Chunk] = {}
        for doc in dict.fromkeys(c.doc for c in chunks):
            mine = [c for c in chunks if c.doc == doc]
            self.index.add(doc, [c.text for c in mine])
            self.by_key.update({(doc, c.index): c for c in mine})

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "bm25",
            "library": "bm25s",
            "chunk_size": self.chunk_size,
            "dedup": self.dedup,
        }

    def rank(self, query: str, depth: int) -> list[Chunk]:
        hits = self.index.search(query, depth * 2 if self.dedup else depth)
        chunks = [self.by_key[(h.chunk.doc, h.chunk.index)] for h in hits]
        return _dedup(chunks, depth, self.canonical)


class DenseRanker:
    """Cosine similarity of normalised sentence embeddings; the model loads from its package."""

    def __init__(
        self, name: str, chunks: Sequence[Chunk], chunk_size: int, dedup: bool, model: str
    ) -> None:
        self.name, self.chunk_size, self.dedup, self.model_name = name, chunk_size, dedup, model
        self.encoder = load_encoder()
        self.chunks = list(chunks)
        self.canonical = first_copies(chunks) if dedup else None
        self.matrix = self.encoder.encode(
            [c.text for c in self.chunks], normalize_embeddings=True, batch_size=32
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "dense",
            "embedder": self.model_name,
            "device": "cpu",
            "chunk_size": self.chunk_size,
            "dedup": self.dedup,
        }

    def rank(self, query: str, depth: int) -> list[Chunk]:
        vector = self.encoder.encode([query], normalize_embeddings=True)[0]
        scores = self.matrix @ vector
        order = sorted(range(len(self.chunks)), key=lambda i: (-float(scores[i]), i))
        wanted = order[: depth * 2 if self.dedup else depth]
        return _dedup([self.chunks[i] for i in wanted], depth, self.canonical)


def make_ranker(spec: RetrievalPipelineParams, chunks: Sequence[Chunk]) -> Ranker:
    if spec.kind == "dense":
        model = spec.model or "all-MiniLM-L6-v2"
        return DenseRanker(spec.name, chunks, spec.chunk_size, spec.dedup, model)
    return BM25Ranker(spec.name, chunks, spec.chunk_size, spec.dedup)
