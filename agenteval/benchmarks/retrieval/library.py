"""The retrieval benchmark's documents: labels verified against extracted text, chunks with spans.

Texts are compared after whitespace normalisation (every run of whitespace is one space), so
a quote written on one line matches hard-wrapped licence text. Every chunk knows where it
lies in its document's normalised text; that is what the hit rule measures.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agenteval.benchmarks.retrieval.records import EvidenceQuestion, EvidenceSet
from agenteval.corpus.documents import read_text
from agenteval.corpus.index_cache import IndexCache
from agenteval.schema.input_error import InputError
from agenteval.schema.located import Located, load_located
from agenteval.targets.tools import DOCUMENT_SUFFIXES

HIT_SHARE = 0.5  # a chunk is a hit when it covers at least half of the quote


class LabelError(InputError):
    """Problems of the labelled questions."""


def squash(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Span:
    doc: str
    start: int
    end: int

    def covered_by(self, other: Span) -> bool:
        """True when `other` covers at least half of this span."""
        if other.doc != self.doc:
            return False
        overlap = min(self.end, other.end) - max(self.start, other.start)
        return overlap >= HIT_SHARE * (self.end - self.start)


@dataclass(frozen=True)
class Chunk:
    id: str
    doc: str
    index: int
    text: str
    span: Span | None


def load_questions(path: Path) -> tuple[list[EvidenceQuestion], Located]:
    from pydantic import ValidationError

    located = load_located(path)
    if not isinstance(located, Located):
        raise LabelError([located])
    try:
        labels = EvidenceSet.model_validate(located.data)
    except ValidationError as exc:
        raise LabelError(
            [
                located.problem(e["loc"], f"{'.'.join(map(str, e['loc']))}: {e['msg']}")
                for e in exc.errors()
            ]
        ) from None
    seen: set[str] = set()
    duplicates = []
    for i, q in enumerate(labels.questions):
        if q.id in seen:
            duplicates.append(located.problem(("questions", i, "id"), f"duplicate id {q.id!r}"))
        seen.add(q.id)
    if duplicates:
        raise LabelError(duplicates)
    return labels.questions, located


def document_text(root: Path, doc: str) -> str:
    return squash(read_text(root / doc))


def verify_quotes(
    questions: list[EvidenceQuestion], located: Located, root: Path
) -> dict[str, Span]:
    """Where each labelled quote lies in its document's extracted text; raise if anywhere not."""
    spans: dict[str, Span] = {}
    problems = []
    texts: dict[str, str] = {}
    for i, q in enumerate(questions):
        if not (root / q.document).is_file():
            problems.append(
                located.problem(
                    ("questions", i, "document"),
                    f"{q.id}: document {q.document} is not on disk "
                    "(run `agenteval fetch` for pinned corpora)",
                )
            )
            continue
        text = texts.setdefault(q.document, document_text(root, q.document))
        quote = squash(q.quote)
        start = text.find(quote)
        if start < 0:
            problems.append(
                located.problem(
                    ("questions", i, "quote"),
                    f"{q.id}: quote not found in the text extracted "
                    f"from {q.document}: {quote[:80]!r}",
                )
            )
            continue
        spans[q.id] = Span(q.document, start, start + len(quote))
    if problems:
        raise LabelError(problems)
    return spans


def library_files(root: Path, folders: list[str]) -> list[str]:
    """Repository-relative documents under the library folders, sorted."""
    found: set[str] = set()
    for folder in folders:
        base = root / folder
        if base.is_file():
            found.add(folder)
            continue
        for path in base.rglob("*") if base.is_dir() else []:
            if path.is_file() and path.suffix.lower() in DOCUMENT_SUFFIXES:
                found.add(path.relative_to(root).as_posix())
    return sorted(found)


def chunk_library(root: Path, docs: list[str], cache: IndexCache) -> tuple[list[Chunk], list[str]]:
    """Every document's chunks with their spans, and how each document was loaded."""
    chunks: list[Chunk] = []
    sources = []
    for doc in docs:
        loaded = cache.load(root / doc, doc)
        sources.append(f"{doc}: {loaded.source}")
        chunks += with_spans(doc, document_text(root, doc), loaded.chunks)
    return chunks, sources


def with_spans(doc: str, text: str, pieces: list[str]) -> list[Chunk]:
    out = []
    cursor = 0
    for index, piece in enumerate(pieces):
        flat = squash(piece)
        start = text.find(flat, cursor)
        if start < 0:
            start = text.find(flat)
        span = Span(doc, start, start + len(flat)) if start >= 0 and flat else None
        if span is not None:
            cursor = span.end
        out.append(Chunk(f"{doc}#{index}", doc, index, piece, span))
    return out
