"""The agent tools' BM25 index: indexes and search results shared between conversations that
index the same documents are the results each would compute alone."""

from __future__ import annotations

from pathlib import Path

from agenteval.corpus import retrieval
from agenteval.corpus.retrieval import Index, chunk_document

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    p for p in (ROOT / "eval" / "corpus" / "documents").iterdir() if p.suffix in {".md", ".txt"}
)
QUERIES = ["net revenue second quarter", "refund policy", "battery warranty years", "zzzz"]


def shared_index(chunk_size: int = 400) -> Index:
    index = Index()
    for doc in DOCS:
        index.add_document(doc.name, chunk_document(doc.read_text(encoding="utf-8"), chunk_size))
    return index


def private_index(chunk_size: int = 400) -> Index:
    """The same documents added without fingerprints: nothing shared, nothing remembered."""
    index = Index()
    for doc in DOCS:
        index.add(
            doc.name, list(chunk_document(doc.read_text(encoding="utf-8"), chunk_size).chunks)
        )
    return index


def test_remembered_searches_equal_fresh_ones() -> None:
    assert len(DOCS) >= 4
    retrieval._SEARCHES.clear()
    first, again, alone = shared_index(), shared_index(), private_index()
    for query in QUERIES:
        for k in (1, 4):
            fresh = alone.search(query, k)
            assert first.search(query, k) == fresh
            assert again.search(query, k) == fresh  # remembered from `first`
    assert any(len(memo) == len(QUERIES) * 2 for memo in retrieval._SEARCHES.values())


def test_a_caller_cannot_change_what_the_next_search_returns() -> None:
    retrieval._SEARCHES.clear()
    hits = shared_index().search("net revenue second quarter", 4)
    assert hits
    hits.clear()
    assert shared_index().search("net revenue second quarter", 4)


def test_other_chunking_is_another_index() -> None:
    retrieval._SEARCHES.clear()
    coarse, fine = shared_index(1200), shared_index(200)
    assert coarse.search("refund policy", 4) != fine.search("refund policy", 4)
    assert len(retrieval._SEARCHES) == 2


def test_equal_scores_come_in_chunk_order_whatever_numpy_does() -> None:
    import numpy as np

    from agenteval.corpus.retrieval import top_k_ids

    scores = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.0], dtype=np.float32)
    assert top_k_ids(scores, 2) == ([1, 2], [3.0, 3.0])  # a tie at the cut: the earlier
    assert top_k_ids(scores, 4) == ([1, 2, 4, 3], [3.0, 3.0, 3.0, 2.0])
    assert top_k_ids(scores, 9)[0] == [1, 2, 4, 3, 0, 5]
    assert top_k_ids(scores, 0) == ([], [])
    # Through an index: one passage in two documents scores the same in both.
    index = Index()
    index.add("b.md", ["the refund policy allows thirty days", "batteries last two years"])
    index.add("a.md", ["the refund policy allows thirty days"])
    first, second = index.search("refund policy", 2)
    assert first.score == second.score > 0
    assert (first.chunk.doc, second.chunk.doc) == ("b.md", "a.md")
