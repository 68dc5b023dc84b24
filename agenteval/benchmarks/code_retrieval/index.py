"""The code index: a source tree's chunks, searched with BM25, kept in step with the tree and
saved so a later run (or the next commit) re-chunks only the files that changed.

On disk (`store/`): one signed entry per file, holding its chunks, in the shared chunk cache
(`corpus.index_cache`, keyed to this chunker so no other chunker's entry is served), and
`manifest.json`: the schema, the configuration (chunker, ranker, limits) and every indexed
file's sha256. A save writes the changed entries, then the manifest, each by an atomic
rename; a crash between them leaves a manifest that disagrees with its entries.

`CodeIndex.open(store)` serves a saved index without looking at the tree, and refuses
(IndexDamaged, naming what is wrong) anything it cannot trust: a missing, unreadable or
other-schema manifest, another configuration, a missing, damaged or disagreeing entry.
`CodeIndex.sync()` walks the tree and re-chunks what changed; a damaged entry is rebuilt
from its file (the reason is counted). Ranking is BM25 over chunks in (path, line) order,
so an index built step by step and one built at once rank alike.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.benchmarks.code_retrieval.chunks import (
    CHUNKER,
    CodeChunk,
    chunk_file,
    read_source,
    search_text,
    tokens_of,
)
from agenteval.benchmarks.code_retrieval.history import Selection
from agenteval.corpus.index_cache import IndexCache
from agenteval.fileio import sha256_bytes, write_atomic

SCHEMA = 2
RANKER = "bm25s (corpus.retrieval.tokenize, camelCase split)"
MANIFEST = "manifest.json"


class IndexDamaged(Exception):
    """A saved index that cannot be trusted; the message says why."""


@dataclass(frozen=True)
class IndexConfig:
    selection: Selection
    max_lines: int = 60
    max_bytes: int = 1_000_000

    def describe(self) -> dict[str, Any]:
        return {"chunker": CHUNKER, "ranker": RANKER, "max_lines": self.max_lines,
                "max_bytes": self.max_bytes, "extensions": list(self.selection.extensions),
                "exclude": list(self.selection.exclude)}  # fmt: skip


@dataclass
class SyncReport:
    rechunked: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    from_cache: int = 0
    rebuilt: dict[str, str] = field(default_factory=dict)  # path -> why the entry was not used
    skipped: dict[str, str] = field(default_factory=dict)  # path -> why it is not indexed


@dataclass(frozen=True)
class Hit:
    chunk: CodeChunk
    score: float


def walk(tree: Path, selection: Selection) -> Iterator[tuple[str, Path | None, str | None]]:
    """(relative path, file or None, why skipped) for every selected name under `tree`.

    Directory links are never followed (a link back up would loop, a link out leaves the
    repository); a file link is followed only to a file inside the tree."""
    root = tree.resolve()
    for folder, dirs, files in os.walk(tree, followlinks=False):
        dirs.sort()
        for name in sorted(files) + sorted(d for d in dirs if (Path(folder) / d).is_symlink()):
            path = Path(folder) / name
            rel = path.relative_to(tree).as_posix()
            if not selection.wants(rel):
                continue
            if path.is_symlink():
                target = path.resolve()
                if not target.exists():
                    yield rel, None, "dangling link"
                    continue
                if not target.is_relative_to(root):
                    yield rel, None, "link out of the tree"
                    continue
                if not target.is_file():
                    yield rel, None, "link to a directory"
                    continue
            yield rel, path, None


class CodeIndex:
    def __init__(self, tree: Path, store: Path, config: IndexConfig) -> None:
        self.tree, self.store, self.config = tree, store, config
        self.cache = IndexCache(store, config.max_lines, identity=CHUNKER)
        self.files: dict[str, str] = {}  # path -> sha256
        self.chunks: dict[str, list[CodeChunk]] = {}
        self._bm25: Any = None
        self._order: list[CodeChunk] = []

    # -- reading a saved index ------------------------------------------------------------
    @classmethod
    def open(cls, tree: Path, store: Path, config: IndexConfig) -> CodeIndex:
        index = cls(tree, store, config)
        manifest = index._manifest()
        for path, digest in manifest["files"].items():
            raw, why = index.cache.fetch(path, digest)
            if raw is None:
                raise IndexDamaged(f"entry of {path}: {why or 'missing'}")
            index.files[path] = digest
            index.chunks[path] = [CodeChunk.from_record(path, r) for r in raw]
        if sum(len(c) for c in index.chunks.values()) != manifest["chunks"]:
            raise IndexDamaged("the entries hold another number of chunks than the manifest")
        return index

    def _manifest(self) -> dict[str, Any]:
        path = self.store / MANIFEST
        if not path.is_file():
            raise IndexDamaged(f"no {MANIFEST} in {self.store}")
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            raise IndexDamaged(f"{MANIFEST} is unreadable (truncated, empty or garbage)") from None
        if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
            found = manifest.get("schema") if isinstance(manifest, dict) else None
            raise IndexDamaged(f"{MANIFEST} has schema {found!r}, this code reads {SCHEMA}")
        if manifest.get("config") != self.config.describe():
            raise IndexDamaged(
                f"built with another configuration: {manifest.get('config')} "
                f"(this run: {self.config.describe()})"
            )
        if not isinstance(manifest.get("files"), dict) or not isinstance(
            manifest.get("chunks"), int
        ):
            raise IndexDamaged(f"{MANIFEST} lacks its file list or chunk count")
        return manifest

    # -- keeping it in step with the tree ------------------------------------------------------
    def sync(self) -> SyncReport:
        report = SyncReport()
        seen: set[str] = set()
        for rel, path, why in walk(self.tree, self.config.selection):
            if path is None:
                report.skipped[rel] = str(why)
                continue
            data = path.read_bytes() if path.stat().st_size <= self.config.max_bytes else b""
            digest = sha256_bytes(data) if data else f"size:{path.stat().st_size}"
            seen.add(rel)
            if self.files.get(rel) == digest:
                continue
            chunks, why = self._chunks_of(rel, path, digest, report)
            if chunks is None:
                report.skipped[rel] = str(why)
                self._drop(rel)
                continue
            self.files[rel], self.chunks[rel] = digest, chunks
            report.rechunked.append(rel)
        for rel in sorted(set(self.files) - seen):
            self._drop(rel)
            report.removed.append(rel)
        if report.rechunked or report.removed:
            self._bm25 = None
        self.save()
        return report

    def _chunks_of(
        self, rel: str, path: Path, digest: str, report: SyncReport
    ) -> tuple[list[CodeChunk] | None, str | None]:
        raw, why = self.cache.fetch(rel, digest)
        if raw is not None:
            report.from_cache += 1
            return [CodeChunk.from_record(rel, r) for r in raw], None
        if why is not None:
            report.rebuilt[rel] = why
        text, skip = read_source(path, self.config.max_bytes)
        if text is None:
            return None, skip
        chunks = chunk_file(rel, text, self.config.max_lines)
        self.cache.store(rel, digest, [c.record() for c in chunks])
        return chunks, None

    def _drop(self, rel: str) -> None:
        if self.files.pop(rel, None) is not None:
            self._bm25 = None
        self.chunks.pop(rel, None)

    def save(self) -> None:
        manifest = {"schema": SCHEMA, "config": self.config.describe(),
                    "files": dict(sorted(self.files.items())),
                    "chunks": sum(len(c) for c in self.chunks.values())}  # fmt: skip
        write_atomic(self.store / MANIFEST, json.dumps(manifest, indent=1), durable=False)

    # -- searching ---------------------------------------------------------------------------
    def all_chunks(self) -> list[CodeChunk]:
        return [c for path in sorted(self.chunks) for c in self.chunks[path]]

    def search(self, query: str, depth: int) -> list[Hit]:
        from agenteval.benchmarks.code_retrieval.chunks import split_camel

        if self._bm25 is None:
            self._order = self.all_chunks()
            self._bm25 = bm25_index(self._order)
        hits = self._bm25.search(split_camel(query), depth)
        return [Hit(self._order[int(h.chunk.doc)], h.score) for h in hits]


def bm25_index(chunks: list[CodeChunk]) -> Any:
    """A corpus.retrieval Index with one document per chunk (named by its position), each
    tokenized once per process; two indexes of the same chunks share one BM25."""
    from agenteval.corpus.retrieval import Index

    index = Index()
    for i, chunk in enumerate(chunks):
        index.add_document(str(i), _document(chunk))
    return index


@functools.lru_cache(maxsize=100_000)
def _document(chunk: CodeChunk) -> Any:
    from collections import Counter

    from agenteval.corpus.retrieval import ChunkedDocument

    text = search_text(chunk)
    tokens = tokens_of(text)
    fingerprint = sha256_bytes(f"{chunk.id}\0{text}".encode())
    return ChunkedDocument((text,), (tokens,), Counter(set(tokens)), fingerprint)


def recover(tree: Path, store: Path, config: IndexConfig) -> tuple[CodeIndex, str | None]:
    """The saved index when it can be trusted, else one rebuilt from the tree (reusing every
    entry that still can be); the second value says why the saved one was not used."""
    try:
        index = CodeIndex.open(tree, store, config)
        why = None
    except IndexDamaged as exc:
        index, why = CodeIndex(tree, store, config), str(exc)
    index.sync()
    return index, why
