"""The document tools every agent under test gets, with every call recorded for the transcript."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenteval.corpus.documents import read_text
from agenteval.corpus.retrieval import Hit, Index, chunk_text
from agenteval.schema.transcript import ToolCall

TOOL_NAMES = ("list_documents", "index_document", "query_documents", "read_document")
DOCUMENT_SUFFIXES = (".md", ".txt", ".csv", ".html", ".htm", ".py", ".json", ".yaml", ".yml")


class ToolError(Exception):
    """A tool failed for a reason the agent should see (missing file, bad argument)."""


class DocumentTools:
    """list/index/query/read over files inside the repository root; one instance per session."""

    def __init__(self, root: Path, library: Sequence[str], chunk_size: int, top_k: int = 4) -> None:
        self.root = root.resolve()
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
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.root / candidate
            if not candidate.exists():
                for folder in self.library:  # bare file names resolve against the library
                    if (folder / path).exists():
                        candidate = folder / path
                        break
        resolved = candidate.resolve()
        if not resolved.is_relative_to(self.root):
            raise ToolError(f"access denied: {path} is outside the workspace")
        if not resolved.is_file():
            raise ToolError(f"file not found: {path}")
        return resolved

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def list_documents(self) -> dict[str, Any]:
        available = sorted(
            self.relative(p)
            for folder in self.library
            if folder.is_dir()
            for p in folder.rglob("*")
            if p.is_file() and p.suffix.lower() in DOCUMENT_SUFFIXES
        )
        indexed = [{"path": p, "chunks": n} for p, n in sorted(self.indexed.items())]
        return {"indexed": indexed, "available": available}

    def index_document(self, path: str) -> dict[str, Any]:
        resolved = self.resolve(path)
        name = self.relative(resolved)
        if name in self.indexed:
            return {"path": name, "chunk_count": self.indexed[name], "already_indexed": True}
        chunks = chunk_text(read_text(resolved), self.chunk_size)
        self.indexed[name] = self.index.add(name, chunks)
        return {"path": name, "chunk_count": len(chunks)}

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
