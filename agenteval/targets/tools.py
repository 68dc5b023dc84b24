"""The document tools every agent under test gets, with every call recorded for the transcript."""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agenteval.corpus.documents import read_text
from agenteval.corpus.retrieval import ChunkedDocument, Hit, Index, chunk_document
from agenteval.schema.transcript import ToolCall

SEARCH_TOOL = "query_documents"  # the one tool that searches the BM25 index
TOOL_NAMES = ("list_documents", "index_document", SEARCH_TOOL, "read_document")
DOCUMENT_SUFFIXES = (".md", ".txt", ".csv", ".html", ".htm", ".py", ".json", ".yaml", ".yml")


class ToolError(Exception):
    """A tool failed for a reason the agent should see (missing file, bad argument)."""


@functools.lru_cache(maxsize=1024)
def _chunked(path: Path, mtime_ns: int, size: int, chunk_size: int) -> ChunkedDocument:
    """Read, chunk and tokenize a file once per run: every conversation indexing the same
    document (each scenario iteration does) reuses it. Keyed on the file's size and mtime,
    so a file that changes is read again."""
    return chunk_document(read_text(path), chunk_size)


@functools.lru_cache(maxsize=64)
def _resolved(path: Path) -> Path:
    return path.resolve()


@functools.lru_cache(maxsize=4096)
def _resolve_in(root: Path, library: tuple[Path, ...], path: str) -> Path:
    """`path` inside `root` (bare names resolved against the library folders); the symlink
    resolution is cached because every conversation resolves the same few documents."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
        if not candidate.exists():
            for folder in library:  # bare file names resolve against the library
                if (folder / path).exists():
                    candidate = folder / path
                    break
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        raise ToolError(f"access denied: {path} is outside the workspace")
    if not resolved.is_file():
        raise ToolError(f"file not found: {path}")
    return resolved


def _documents(folders: Iterable[Path]) -> Iterator[Path]:
    """The files under `folders` that a session can index, found lazily."""
    for folder in folders:
        if folder.is_dir():
            for path in folder.rglob("*"):
                if path.is_file() and path.suffix.lower() in DOCUMENT_SUFFIXES:
                    yield path


def has_documents(root: Path, library: Sequence[str]) -> bool:
    """Whether a library folder holds a document a session could index (stops at the first)."""
    return next(_documents(root / folder for folder in library), None) is not None


class DocumentTools:
    """list/index/query/read over files inside the repository root; one instance per session."""

    def __init__(self, root: Path, library: Sequence[str], chunk_size: int, top_k: int = 4) -> None:
        self.root = _resolved(root)
        self.library = [self.root / folder for folder in library]
        self.chunk_size = chunk_size
        self.top_k = top_k
        self.index = Index()
        self.indexed: dict[str, int] = {}
        self.calls: list[ToolCall] = []

    # -- recording -----------------------------------------------------------------------
    def call(self, name: str, **arguments: Any) -> ToolCall:
        """Run a tool by name and record it; failures come back as ok=False, never raised."""
        start = time.perf_counter()
        try:
            if name not in TOOL_NAMES:
                raise ToolError(f"unknown tool {name!r}")
            result = getattr(self, name)(**arguments)
            record = ToolCall(name=name, arguments=arguments, ok=True, result=result)
        except ToolError as exc:
            record = ToolCall(name=name, arguments=arguments, ok=False, error=str(exc))
        except TypeError as exc:  # wrong arguments from a model
            record = ToolCall(
                name=name, arguments=arguments, ok=False, error=f"bad arguments: {exc}"
            )
        record.latency_ms = round((time.perf_counter() - start) * 1000, 3)
        self.calls.append(record)
        return record

    # -- tools ---------------------------------------------------------------------------
    def resolve(self, path: str) -> Path:
        resolved = _resolve_in(self.root, tuple(self.library), path)
        if not resolved.is_file():  # resolution is cached; existence is checked every time
            raise ToolError(f"file not found: {path}")
        return resolved

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def list_documents(self) -> dict[str, Any]:
        available = sorted(self.relative(p) for p in _documents(self.library))
        indexed = [{"path": p, "chunks": n} for p, n in sorted(self.indexed.items())]
        return {"indexed": indexed, "available": available}

    def index_document(self, path: str) -> dict[str, Any]:
        resolved = self.resolve(path)
        name = self.relative(resolved)
        if name in self.indexed:
            return {"path": name, "chunk_count": self.indexed[name], "already_indexed": True}
        stat = resolved.stat()
        document = _chunked(resolved, stat.st_mtime_ns, stat.st_size, self.chunk_size)
        self.indexed[name] = self.index.add_document(name, document)
        return {"path": name, "chunk_count": len(document.chunks)}

    def query_documents(self, query: str, top_k: int | None = None) -> dict[str, Any]:
        if not isinstance(query, str) or not query.strip():
            raise ToolError("query must be a non-empty string")
        hits = self.search(query, top_k)
        return {
            "results": [
                {"doc": h.chunk.doc, "chunk": h.chunk.index, "score": h.score, "text": h.chunk.text}
                for h in hits
            ]
        }

    def read_document(self, path: str, max_chars: int = 8000) -> dict[str, Any]:
        resolved = self.resolve(path)
        text = read_text(resolved)
        return {
            "path": self.relative(resolved),
            "text": text[:max_chars],
            "truncated": len(text) > max_chars,
        }

    def search(self, query: str, top_k: int | None = None) -> list[Hit]:
        return self.index.search(query, top_k or self.top_k)
