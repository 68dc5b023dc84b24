"""The hard cases about what reaches the index: near-duplicate filings, a scanned PDF, a
truncated PDF, indexing past a document cap, and earlier questions' documents still in the
session. Each reports pass, fail, measured or skipped with its reason, like `hard_cases`;
an exception fails the run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agenteval.benchmarks.retrieval.hard_cases import most_asked, result, top5, top5_share
from agenteval.benchmarks.retrieval.library import Chunk, chunk_library
from agenteval.benchmarks.retrieval.pdfs import scanned_pdf, text_pdf
from agenteval.benchmarks.retrieval.pipelines import Ranker
from agenteval.benchmarks.retrieval.records import EvidenceQuestion
from agenteval.corpus.index_cache import IndexCache
from agenteval.corpus.pdf import UnreadableDocument
from agenteval.targets.tools import DocumentTools

FILING = [
    "Lundby Harbour Authority, annual filing 2026.",
    "The ferry licence fee for the Lundby route is 4,250 kroner a year.",
    "Pier 5 closes for dredging from 3 March to 28 March 2026.",
    "The authority employs 37 harbour pilots and 12 tug crews.",
]
FEE_QUESTION = "What is the ferry licence fee for the Lundby route?"
NEAR_DUPLICATES = 3  # amended versions of the most-asked document


def _amended(text: str, version: int) -> str:
    """The same filing with every figure changed: an amendment that shares nearly all words."""
    return re.sub(r"\d+", lambda m: str(int(m.group()) + version), text)


def near_duplicate_filings(
    root: Path,
    work: Path,
    docs: list[str],
    questions: Sequence[EvidenceQuestion],
    build: Callable[[list[Chunk]], list[Ranker]],
) -> dict[str, Any]:
    """Measured: how much of the top 5 amended near-copies take, and how often the labelled
    original still ranks first among them (no threshold: a retriever cannot know which
    version is current from the text alone)."""
    condition = "measured: near-copies' share of the top 5 and the original ranked first"
    original, asked = most_asked(docs, questions)
    text = (root / original).read_text(encoding="utf-8", errors="replace")
    copies = []
    for version in range(1, NEAR_DUPLICATES + 1):
        path = work / "filings" / f"amended_{version}_{Path(original).name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_amended(text, version), encoding="utf-8")
        copies.append(path.resolve().relative_to(root.resolve()).as_posix())
    chunks, _ = chunk_library(root, [*docs, *copies], IndexCache(work / "cache_filings", 400))
    share, first = {}, {}
    for ranker in build(chunks):
        tops = top5(ranker, asked)
        share[ranker.name] = round(top5_share(tops, copies.__contains__), 4)
        first[ranker.name] = round(
            sum(bool(top) and top[0].doc == original for top in tops) / len(tops), 4
        )
    return result(
        "near-duplicate filings",
        condition,
        "measured",
        document=original,
        copies=len(copies),
        questions=len(asked),
        near_copies_share_of_top5=share,
        original_ranked_first=first,
    )


def scanned_pdf_case(work: Path) -> dict[str, Any]:
    condition = "an image-only PDF is refused with what to do, never indexed empty"
    folder = work / "scanned"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "scan.pdf").write_bytes(scanned_pdf())
    cache = IndexCache(work / "cache_scanned", 400)
    try:
        chunks, _ = chunk_library(work, ["scanned/scan.pdf"], cache)
    except UnreadableDocument as exc:
        said = str(exc)
        actionable = "no text layer" in said and "OCR" in said
        stored = cache.entry_path("scanned/scan.pdf").exists()
        ok = actionable and not stored
        return result("scanned image-only PDF", condition, "pass" if ok else "fail",
                      error=said, cache_entry_written=stored)  # fmt: skip
    return result("scanned image-only PDF", condition, "fail", indexed_chunks=len(chunks))


def truncated_pdf_case(work: Path) -> dict[str, Any]:
    condition = "a truncated PDF is an error naming the damage, never a partial index"
    folder = work / "truncated"
    folder.mkdir(parents=True, exist_ok=True)
    whole = text_pdf(FILING)
    (folder / "whole.pdf").write_bytes(whole)
    (folder / "cut.pdf").write_bytes(whole[: int(len(whole) * 0.6)])
    cache = IndexCache(work / "cache_truncated", 400)
    complete, _ = chunk_library(work, ["truncated/whole.pdf"], cache)
    readable = any("4,250 kroner" in c.text for c in complete)
    try:
        partial, _ = chunk_library(work, ["truncated/cut.pdf"], cache)
    except UnreadableDocument as exc:
        named = "truncated or damaged" in str(exc)
        return result("truncated PDF", condition, "pass" if named and readable else "fail",
                      whole_file_read=readable, error=str(exc))  # fmt: skip
    return result("truncated PDF", condition, "fail", whole_file_read=readable,
                  indexed_chunks=len(partial))  # fmt: skip


def past_document_cap(work: Path, cap: int = 2) -> dict[str, Any]:
    condition = f"indexing past a cap of {cap} documents evicts the oldest and says so"
    folder = work / "capped"
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i in range(cap + 1):
        (folder / f"filing_{i}.txt").write_text(_amended(" ".join(FILING), i * 100))
        names.append(f"filing_{i}.txt")
    tools = DocumentTools(work, ["capped"], 400, top_k=5, max_documents=cap)
    said = [tools.index_document(f"capped/{name}") for name in names]
    last = said[-1]
    evicted = last.get("evicted") or []
    served = {hit["doc"] for hit in tools.query_documents(FEE_QUESTION)["results"]}
    ok = (
        evicted == [f"capped/{names[0]}"]
        and "cap" in str(last.get("note"))
        and (f"capped/{names[0]}" not in served)
    )
    return result("indexing past the document cap", condition, "pass" if ok else "fail",
                  evicting_result=last, served_after=sorted(served))  # fmt: skip


def earlier_context(
    root: Path, docs: list[str], questions: Sequence[EvidenceQuestion]
) -> dict[str, Any]:
    """Measured: in one session, question after question, each indexing its document on top
    of the earlier ones: the share of a later question's top 5 drawn from earlier questions'
    documents, and whether its own document still ranks first."""
    condition = "measured: earlier questions' documents in later questions' top 5"
    by_doc: dict[str, EvidenceQuestion] = {}
    for q in questions:
        by_doc.setdefault(q.document, q)
    asked = [by_doc[d] for d in docs if d in by_doc]
    if len(asked) < 2:
        return {"case": "earlier questions' context", "condition": condition,
                "status": "skipped", "reason": "fewer than two labelled documents"}  # fmt: skip
    folders = sorted({str(Path(d).parent) for d in docs})
    tools = DocumentTools(root, folders, 400, top_k=5)
    earlier: set[str] = set()
    shares, own_first = [], []
    for q in asked:
        tools.index_document(q.document)
        top = tools.query_documents(q.question)["results"]
        if earlier:
            shares.append(sum(hit["doc"] in earlier for hit in top) / max(len(top), 1))
            own_first.append(bool(top) and top[0]["doc"] == q.document)
        earlier.add(q.document)
    return result("earlier questions' context", condition, "measured",
                  questions=len(asked), earlier_share_of_top5=round(sum(shares) / len(shares), 4),
                  own_document_first=round(sum(own_first) / len(own_first), 4))  # fmt: skip
