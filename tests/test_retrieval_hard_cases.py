"""The retrieval hard cases about what reaches the index (near-duplicate filings, a scanned
PDF, a truncated PDF, the document cap, earlier questions' documents) and the scale tiers,
on the repository's own labelled library."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agenteval.benchmarks.retrieval import file_cases
from agenteval.benchmarks.retrieval.library import library_files, load_questions
from agenteval.benchmarks.retrieval.pdfs import scanned_pdf, text_pdf
from agenteval.benchmarks.retrieval.pipelines import BM25Ranker
from agenteval.benchmarks.retrieval.scale import run_tiers
from agenteval.corpus.documents import read_text
from agenteval.corpus.pdf import UnreadableDocument
from agenteval.targets.tools import DocumentTools

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ["eval/corpus/documents", "data/corpora"]


@pytest.fixture(scope="module")
def labelled() -> tuple[list, list[str]]:
    questions, _ = load_questions(ROOT / "eval/retrieval/questions.yaml")
    return questions, library_files(ROOT, LIBRARY)


def test_pdfs_are_read_by_their_text_layer_and_refused_when_scanned_or_cut(
    tmp_path: Path,
) -> None:
    whole = text_pdf(["Fee (annual): 4,250 kroner.", "Pier 5 closes in March."])
    (tmp_path / "a.pdf").write_bytes(whole)
    assert read_text(tmp_path / "a.pdf") == "Fee (annual): 4,250 kroner.\nPier 5 closes in March."
    (tmp_path / "scan.pdf").write_bytes(scanned_pdf())
    with pytest.raises(UnreadableDocument, match=r"no text layer .*OCR"):
        read_text(tmp_path / "scan.pdf")
    for cut in (0.3, 0.6, 0.95):
        (tmp_path / "cut.pdf").write_bytes(whole[: int(len(whole) * cut)])
        with pytest.raises(UnreadableDocument, match="truncated or damaged"):
            read_text(tmp_path / "cut.pdf")


def test_an_agent_indexing_a_scanned_pdf_gets_the_reason_not_an_empty_index(
    tmp_path: Path,
) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/scan.pdf").write_bytes(scanned_pdf())
    tools = DocumentTools(tmp_path, ["lib"], 400)
    call = tools.call("index_document", path="lib/scan.pdf")
    assert not call.ok and "no text layer" in str(call.error) and tools.indexed == {}


def test_the_document_cap_evicts_the_oldest_and_an_uncapped_index_never_does(
    tmp_path: Path,
) -> None:
    (tmp_path / "lib").mkdir()
    for i in range(3):
        (tmp_path / f"lib/d{i}.txt").write_text(f"Harbour note {i}: the fee is {i}00 kroner.")
    capped = DocumentTools(tmp_path, ["lib"], 400, max_documents=2)
    said = [capped.index_document(f"lib/d{i}.txt") for i in range(3)]
    assert "evicted" not in said[1] and said[2]["evicted"] == ["lib/d0.txt"]
    assert {h["doc"] for h in capped.query_documents("harbour fee")["results"]} == {
        "lib/d1.txt", "lib/d2.txt"}  # fmt: skip
    free = DocumentTools(tmp_path, ["lib"], 400)
    assert all("evicted" not in free.index_document(f"lib/d{i}.txt") for i in range(3))
    with pytest.raises(ValueError, match="max_documents"):
        DocumentTools(tmp_path, ["lib"], 400, max_documents=0)


def test_the_five_cases_report_their_status(tmp_path: Path, labelled: tuple) -> None:
    questions, docs = labelled
    work = ROOT / ".cache/agenteval/test_hard_cases"
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:

        def build(chunks: list) -> list:
            return [BM25Ranker("bm25", chunks, 400, True)]

        found = [
            file_cases.near_duplicate_filings(ROOT, work, docs, questions, build),
            file_cases.scanned_pdf_case(work),
            file_cases.truncated_pdf_case(work),
            file_cases.past_document_cap(work),
            file_cases.earlier_context(ROOT, docs, questions),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    status = {c["case"]: c["status"] for c in found}
    assert status == {
        "near-duplicate filings": "measured",
        "scanned image-only PDF": "pass",
        "truncated PDF": "pass",
        "indexing past the document cap": "pass",
        "earlier questions' context": "measured",
    }
    near = found[0]["measured"]
    assert near["copies"] == 3 and 0 <= near["near_copies_share_of_top5"]["bm25"] <= 1
    assert found[1]["measured"]["cache_entry_written"] is False
    json.dumps(found)  # results.json holds them as they are


def test_a_scale_tier_that_fails_fails_the_run() -> None:
    # A tier that works, in the evaluate stage and its summary: tests/test_retrieval_benchmark.py
    with pytest.raises(RuntimeError, match="scale tier 0 failed"):
        run_tiers([0], ROOT)
