"""Chunking and lexical retrieval (BM25 via bm25s), shared by every agent's document tools."""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import Counter, OrderedDict
from collections.abc import Sequence
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


@dataclass(frozen=True, eq=False)
class ChunkedDocument:
    """A document's chunks, their tokens and document frequencies, and a fingerprint of the
    text and chunk size: everything Index.add_document needs, computed once per document."""

    chunks: tuple[str, ...]
    tokens: tuple[tuple[str, ...], ...]
    doc_freq: Counter[str]
    fingerprint: str


def chunk_document(text: str, chunk_size: int) -> ChunkedDocument:
    chunks = tuple(chunk_text(text, chunk_size))
    tokens = tuple(tuple(tokenize(c)) for c in chunks)
    doc_freq: Counter[str] = Counter()
    for words in tokens:
        doc_freq.update(set(words))
    digest = hashlib.sha256(f"{chunk_size}\0{text}".encode()).hexdigest()
    return ChunkedDocument(chunks, tokens, doc_freq, digest)


# BM25 indexes already built, keyed by the documents they hold (name and fingerprint, in
# order): every conversation of a run that indexes the same documents shares one.
_RETRIEVERS: OrderedDict[tuple[tuple[str, str], ...], Any] = OrderedDict()
RETRIEVER_CACHE = 64
# Results of searches on those shared indexes, per index and (query, top_k): repeats of a
# scenario ask the same questions of the same documents, and the answer is a pure function
# of both. Hits are frozen; a cache that fills up is emptied.
_SEARCHES: dict[tuple[tuple[str, str], ...], dict[tuple[str, int], tuple[Hit, ...]]] = {}
SEARCH_CACHE = 4096


@dataclass(frozen=True)
class Chunk:
    doc: str
    index: int
    text: str


@functools.lru_cache(maxsize=1024)
def _chunks_of(doc: str, document: ChunkedDocument) -> tuple[Chunk, ...]:
    return tuple(Chunk(doc, i, text) for i, text in enumerate(document.chunks))


@dataclass(frozen=True)
class Hit:
    chunk: Chunk
    score: float
    support: float


def load_backend() -> None:
    """Import bm25s now. It costs about 0.5 s of CPU (scipy.sparse, and numba where ranx has
    installed it); a caller that will search from inside an event loop calls this first,
    so the import does not stall every conversation in flight at the first search."""
    import bm25s.selection  # noqa: F401


def top_k_ids(scores: Any, k: int) -> tuple[list[int], list[float]]:
    """The k best-scoring chunks, best first, equal scores in chunk order.

    bm25s's own top-k (numpy's argpartition, then an unstable argsort; jax's top_k when
    installed) orders equal scores however that numpy build or backend does: the same
    library and query gave another recall@3 on another machine. Ties are common (the same
    passage in two documents, short chunks that match one term), so they are broken here,
    by position: results are the same wherever they run."""
    import numpy as np

    n = len(scores)
    if k <= 0 or n == 0:
        return [], []
    if k < n:  # every chunk that scores at least the k-th best, ties at the cut included
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = candidates[np.lexsort((candidates, -scores[candidates]))][:k]
    return [int(i) for i in order], [float(scores[i]) for i in order]


class Index:
    """An in-memory BM25 index over chunks of several documents."""

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self._tokens: list[Sequence[str]] = []
        self._doc_freq: Counter[str] = Counter()
        self._retriever: Any = None
        # (doc, fingerprint) of every document added, or None once one came without a
        # fingerprint: only indexes built from fingerprinted documents are shared.
        self._key: list[tuple[str, str]] | None = []

    def add(self, doc: str, chunks: list[str]) -> int:
        for i, text in enumerate(chunks):
            tokens = tokenize(text)
            self.chunks.append(Chunk(doc, i, text))
            self._tokens.append(tokens)
            self._doc_freq.update(set(tokens))
        self._retriever = None  # rebuilt lazily on the next search
        self._key = None
        return len(chunks)

    def add_document(self, doc: str, document: ChunkedDocument) -> int:
        """Add an already chunked and tokenized document (see `chunk_document`)."""
        self.chunks.extend(_chunks_of(doc, document))
        self._tokens.extend(document.tokens)
        self._doc_freq.update(document.doc_freq)
        self._retriever = None  # found in the shared cache (or rebuilt) on the next search
        if self._key is not None:
            self._key.append((doc, document.fingerprint))
        return len(document.chunks)

    def remove_document(self, doc: str) -> int:
        """Drop every chunk of `doc` (a capped index evicting it); the chunks removed."""
        kept = [(c, t) for c, t in zip(self.chunks, self._tokens, strict=True) if c.doc != doc]
        removed = len(self.chunks) - len(kept)
        self.chunks = [c for c, _ in kept]
        self._tokens = [t for _, t in kept]
        self._doc_freq = Counter(token for _, t in kept for token in set(t))
        self._retriever = None
        if self._key is not None:
            self._key = [k for k in self._key if k[0] != doc]
        return removed

    def _bm25(self) -> Any:
        import bm25s  # lazy: keeps the CLI start fast (see load_backend)

        key = tuple(self._key) if self._key is not None else None
        if key is not None and key in _RETRIEVERS:
            _RETRIEVERS.move_to_end(key)
            return _RETRIEVERS[key]
        retriever = bm25s.BM25()
        retriever.index([list(t) for t in self._tokens], show_progress=False)
        if key is not None:
            _RETRIEVERS[key] = retriever
            while len(_RETRIEVERS) > RETRIEVER_CACHE:
                _SEARCHES.pop(_RETRIEVERS.popitem(last=False)[0], None)
        return retriever

    def idf(self, token: str) -> float:
        n = len(self.chunks)
        return math.log(1 + (n - self._doc_freq[token] + 0.5) / (self._doc_freq[token] + 0.5))

    def support(self, query: list[str], tokens: Sequence[str]) -> float:
        """Share of the query's idf mass present in a chunk: 0..1, comparable across corpora."""
        unique = set(query)
        total = sum(self.idf(t) for t in unique)
        if total <= 0:
            return 0.0
        present = set(tokens)
        return sum(self.idf(t) for t in unique if t in present) / total

    def search(self, query: str, top_k: int) -> list[Hit]:
        key = tuple(self._key) if self._key is not None else None
        if key is not None and key not in _SEARCHES and len(_SEARCHES) >= RETRIEVER_CACHE:
            _SEARCHES.clear()
        memo = _SEARCHES.setdefault(key, {}) if key is not None else None
        found = memo.get((query, top_k)) if memo is not None else None
        if found is not None:
            return list(found)
        hits = self._search(query, top_k)
        if memo is not None:
            if len(memo) >= SEARCH_CACHE:
                memo.clear()
            memo[query, top_k] = tuple(hits)
        return hits

    def _search(self, query: str, top_k: int) -> list[Hit]:
        terms = tokenize(query)
        if not self.chunks or not terms:
            return []
        if self._retriever is None:
            self._retriever = self._bm25()
        k = min(top_k, len(self.chunks))
        # BM25.retrieve's scores, without its per-call tqdm progress bar (a third of a
        # query's cost here), and a top-k of our own: see `top_k_ids`.
        ids, scores = top_k_ids(self._retriever.get_scores(terms), k)
        hits = []
        for idx, score in zip(ids, scores, strict=True):
            if score <= 0:
                continue
            chunk_tokens = self._tokens[int(idx)]
            support = self.support(terms, chunk_tokens)
            hits.append(Hit(self.chunks[int(idx)], round(float(score), 4), round(support, 4)))
        return hits
