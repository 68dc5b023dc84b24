"""The document tools every agent under test gets, with every call recorded for the transcript."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from agenteval.corpus.documents import read_text
from agenteval.corpus.pdf import UnreadableDocument
from agenteval.corpus.retrieval import ChunkedDocument, Hit, Index, chunk_document
from agenteval.schema.transcript import ToolCall
from agenteval.targets.fence import Fence, Fenced, build_fence

SEARCH_TOOL = "query_documents"  # the one tool that searches the BM25 index
TOOL_NAMES = ("list_documents", "index_document", SEARCH_TOOL, "read_document")
DOCUMENT_SUFFIXES = (
    ".md", ".txt", ".csv", ".html", ".htm", ".py", ".json", ".yaml", ".yml", ".pdf",
)  # fmt: skip


class ToolError(Exception):
    """A tool failed for a reason the agent should see (missing file, bad argument)."""


CHUNKED_DOCUMENTS = 1024  # chunked documents kept per process
_CHUNKED: OrderedDict[tuple[Any, ...], ChunkedDocument] = OrderedDict()


def _chunked(key: tuple[Any, ...], read: Callable[[], str], chunk_size: int) -> ChunkedDocument:
    """Chunk and tokenize a file once per run: every conversation indexing the same document
    (each scenario iteration does) reuses it. Keyed on the opened file's identity, size and
    mtime, so a file that changes is read again."""
    found = _CHUNKED.get((*key, chunk_size))
    if found is None:
        found = _CHUNKED[(*key, chunk_size)] = chunk_document(read(), chunk_size)
        if len(_CHUNKED) > CHUNKED_DOCUMENTS:
            _CHUNKED.popitem(last=False)
    else:
        _CHUNKED.move_to_end((*key, chunk_size))
    return found


def _resolve_in(root: Path, library: tuple[Path, ...], path: str) -> Path:
    """Where `path` points now, symlinks resolved (bare names against the library folders).
    Never cached: a file swapped for a symlink after its first read must be resolved again."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate
        if not candidate.exists():
            for folder in library:  # bare file names resolve against the library
                if (folder / path).exists():
                    candidate = folder / path
                    break
    return candidate.resolve()


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
    """list/index/query/read over the corpus (see `fence`); one instance per session."""

    def __init__(
        self,
        root: Path,
        library: Sequence[str],
        chunk_size: int,
        top_k: int = 4,
        fence: Fence | None = None,
        max_documents: int | None = None,
    ) -> None:
        # Without a fence of the run's corpus, the library folders alone are readable.
        self.fence = fence or build_fence(root, [(f, "library") for f in library])
        self.root = self.fence.root
        self.library = [self.root / folder for folder in library]
        self.chunk_size = chunk_size
        self.top_k = top_k
        self.index = Index()
        self.indexed: dict[str, int] = {}  # in the order indexed: the oldest is evicted first
        # At most this many documents indexed at once (None: no cap); indexing past it
        # evicts the oldest, and the result names what it evicted.
        if max_documents is not None and max_documents < 1:
            raise ValueError(f"max_documents must be at least 1, got {max_documents}")
        self.max_documents = max_documents
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
        except Fenced as exc:  # an attempt at the answer key or the runs: refused, counted
            record = ToolCall(name=name, arguments=arguments, ok=False, error=str(exc), fenced=True)
        except (ToolError, UnreadableDocument) as exc:  # a scanned or damaged PDF says why
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
        """The file `path` names inside the corpus; Fenced when it names one outside (a
        path that names nothing anywhere is simply not found)."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("path must be a non-empty string")
        try:
            resolved = _resolve_in(self.root, tuple(self.library), path)
            if not self.fence.admits(resolved):
                if resolved.exists() or resolved in self.fence.keys:
                    raise Fenced(self.fence.refusal(path))
                raise ToolError(f"file not found: {path}")
            found = resolved.is_file()
            if found and self.fence.links_protected(resolved.stat()):
                raise Fenced(self.fence.refusal(path))  # a hard link to a protected file
        except (OSError, ValueError, RuntimeError) as exc:  # NUL bytes, loops, permissions
            raise ToolError(f"cannot read {path}: {type(exc).__name__}") from exc
        if not found:
            raise ToolError(f"file not found: {path}")
        return resolved

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))

    def list_documents(self) -> dict[str, Any]:
        folders = tuple(self.library)  # a symlink out of the library is not offered
        readable = (
            p
            for p in _documents(self.library)
            if self.fence.admits(_resolve_in(self.root, folders, str(p)))
            and not self.fence.links_protected(p.stat())
        )
        available = sorted(self.relative(p) for p in readable)
        indexed = [{"path": p, "chunks": n} for p, n in sorted(self.indexed.items())]
        return {"indexed": indexed, "available": available}

    def index_document(self, path: str) -> dict[str, Any]:
        resolved = self.resolve(path)
        name = self.relative(resolved)
        if name in self.indexed:
            return {"path": name, "chunk_count": self.indexed[name], "already_indexed": True}
        with self.fence.opened(resolved, path) as (handle, stat):
            key = (str(resolved), stat.st_dev, stat.st_ino, stat.st_mtime_ns, stat.st_size)
            document = _chunked(key, lambda: read_text(resolved, handle.read()), self.chunk_size)
        evicted = []
        while self.max_documents is not None and len(self.indexed) >= self.max_documents:
            oldest = next(iter(self.indexed))
            self.index.remove_document(oldest)
            del self.indexed[oldest]
            evicted.append(oldest)
        self.indexed[name] = self.index.add_document(name, document)
        found: dict[str, Any] = {"path": name, "chunk_count": len(document.chunks)}
        if evicted:
            found["evicted"] = evicted
            found["note"] = (f"document cap {self.max_documents} reached: "
                             f"{', '.join(evicted)} no longer searchable")  # fmt: skip
        return found

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
        with self.fence.opened(resolved, path) as (handle, _):
            text = read_text(resolved, handle.read())
        return {
            "path": self.relative(resolved),
            "text": text[:max_chars],
            "truncated": len(text) > max_chars,
        }

    def search(self, query: str, top_k: int | None = None) -> list[Hit]:
        return self.index.search(query, top_k or self.top_k)
