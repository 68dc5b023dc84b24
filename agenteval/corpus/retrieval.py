"""Chunking and lexical retrieval (BM25 via bm25s), shared by every agent's document tools."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

WORD = re.compile(r"[A-Za-z]+|\d+(?:[.,]\d+)*")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
STOPWORDS = frozenset(
    """a an and are as at be been but by can could did do does for from had has have how i if in
    into is it its me my of on or our so that the their them then there these they this those to
    was we were what when where which who whom why will with would you your about any all also
    tell please much many give show say said let know need want just more most some than very
    s t don doesn didn isn oh sorry meant hi hello thanks okay ok hey""".split()
)


def tokenize(text: str) -> list[str]:
    """Lowercased words and numbers without stopwords; a light plural strip helps recall."""
    tokens = []
    for raw in WORD.findall(text.lower()):
        word = raw.replace(",", "")
        if word in STOPWORDS:
            continue
        if len(word) > 4 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        tokens.append(word)
    return tokens


def split_sentences(text: str) -> list[str]:
    return [s.strip() for s in SENTENCE_END.split(text) if s and s.strip()]


def chunk_text(text: str, chunk_size: int) -> list[str]:
    """Pack whole sentences into chunks of at most ~chunk_size characters."""
    chunks: list[str] = []
    current: list[str] = []
    length = 0
    for sentence in split_sentences(text):
        if current and length + len(sentence) > chunk_size:
            chunks.append(" ".join(current))
            current, length = [], 0
        current.append(sentence)
        length += len(sentence) + 1
    if current:
        chunks.append(" ".join(current))
    return chunks


@dataclass(frozen=True)
class Chunk:
    doc: str
    index: int
    text: str


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float
    support: float


class Index:
    """An in-memory BM25 index over chunks of several documents."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self._tokens: list[list[str]] = []
        self._doc_freq: Counter[str] = Counter()
        self._retriever: Any = None

    def add(self, doc: str, chunks: list[str]) -> int:
        for i, text in enumerate(chunks):
            tokens = tokenize(text)
            self.chunks.append(Chunk(doc, i, text))
            self._tokens.append(tokens)
            self._doc_freq.update(set(tokens))
        self._retriever = None  # rebuilt lazily on the next search
        return len(chunks)

    def idf(self, token: str) -> float:
        n = len(self.chunks)
        return math.log(1 + (n - self._doc_freq[token] + 0.5) / (self._doc_freq[token] + 0.5))

    def support(self, query: list[str], tokens: list[str]) -> float:
        """Share of the query's idf mass present in a chunk: 0..1, comparable across corpora."""
        unique = set(query)
        total = sum(self.idf(t) for t in unique)
        if total <= 0:
            return 0.0
        present = set(tokens)
        return sum(self.idf(t) for t in unique if t in present) / total

    def search(self, query: str, top_k: int) -> list[Hit]:
        terms = tokenize(query)
        if not self.chunks or not terms:
            return []
        import bm25s  # lazy: keeps the CLI start fast

        if self._retriever is None:
            retriever = bm25s.BM25()
            retriever.index(self._tokens, show_progress=False)
            self._retriever = retriever
        k = min(top_k, len(self.chunks))
        ids, scores = self._retriever.retrieve([terms], k=k, show_progress=False)
        hits = []
        for idx, score in zip(ids[0], scores[0], strict=True):
            if score <= 0:
                continue
            chunk_tokens = self._tokens[int(idx)]
            support = self.support(terms, chunk_tokens)
            hits.append(Hit(self.chunks[int(idx)], round(float(score), 4), round(support, 4)))
        return hits
