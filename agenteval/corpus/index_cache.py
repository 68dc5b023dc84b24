"""An on-disk cache of document chunks that is rebuilt, never served, when it cannot be trusted.

One signed JSON entry per (document, chunk size). An entry is used only when it parses, its
HMAC-SHA256 signature (key in the cache folder's `.key`) matches its content, and it was made
from the document's current bytes with the current chunker; a truncated, tampered, unsigned,
garbage or stale entry is rebuilt from the document and the reason is reported.

`load` chunks prose documents; another chunker (the code retrieval benchmark's, whose chunks
are records with line spans) names itself as `identity` and uses `fetch` / `store`, so an
entry made by one chunker is never served to another.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.corpus.documents import read_text
from agenteval.corpus.retrieval import chunk_text
from agenteval.fileio import canonical_json, sha256_bytes, sha256_text, write_atomic

VERSION = 1  # bump when chunk_text or read_text change what they produce
KEY_FILE = ".key"


@dataclass(frozen=True)
class Loaded:
    chunks: list[str]
    source: str  # "cache" | "built" | "rebuilt: <why>"


PROSE = "prose"


class IndexCache:
    def __init__(self, folder: Path, chunk_size: int, identity: str = PROSE) -> None:
        self.folder = folder
        self.chunk_size = chunk_size
        self.identity = identity
        self._key: bytes | None = None

    @property
    def key(self) -> bytes:
        if self._key is None:
            path = self.folder / KEY_FILE
            try:
                self._key = bytes.fromhex(path.read_text(encoding="ascii").strip())
            except (OSError, ValueError):
                # A new key makes every older entry unsigned, hence rebuilt: never trusted.
                self._key = secrets.token_bytes(32)
                write_atomic(path, self._key.hex())
        return self._key

    def entry_path(self, name: str) -> Path:
        return self.folder / f"{sha256_text(f'{name}:{self.chunk_size}')[:32]}.json"

    def _sign(self, payload: dict[str, object]) -> str:
        return hmac.new(self.key, canonical_json(payload).encode(), hashlib.sha256).hexdigest()

    def load(self, path: Path, name: str) -> Loaded:
        """The chunks of `path` (reported as `name`), from the cache when it can be trusted."""
        data = path.read_bytes()
        digest = sha256_bytes(data)
        cached, why = self.fetch(name, digest)
        if cached is not None:
            return Loaded(list(cached), "cache")
        chunks = chunk_text(read_text(path), self.chunk_size)
        self.store(name, digest, chunks)
        return Loaded(chunks, "built" if why is None else f"rebuilt: {why}")

    def fetch(self, name: str, digest: str) -> tuple[list[Any] | None, str | None]:
        """(chunks, None) from a trusted entry made from bytes with this digest; (None, why)
        when the entry cannot be served; (None, None) when there is none."""
        entry = self.entry_path(name)
        if not entry.exists():
            return None, None
        why = self._why_not(entry, name, digest)
        if why is not None:
            return None, why
        return list(json.loads(entry.read_text(encoding="utf-8"))["payload"]["chunks"]), None

    def store(self, name: str, digest: str, chunks: list[Any]) -> None:
        payload: dict[str, object] = {
            "version": VERSION, "name": name, "source_sha256": digest,
            "chunk_size": self.chunk_size, "chunker": self.identity, "chunks": chunks,
        }  # fmt: skip
        record = {"payload": payload, "signature": self._sign(payload)}
        # No fsync: an entry a power cut truncates is rebuilt like any other it cannot trust.
        write_atomic(self.entry_path(name), json.dumps(record, ensure_ascii=False), durable=False)

    def _why_not(self, entry: Path, name: str, digest: str) -> str | None:
        """Why a stored entry cannot be served, or None when it can."""
        try:
            record = json.loads(entry.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            return "unreadable (truncated or garbage)"
        if not isinstance(record, dict) or not isinstance(record.get("payload"), dict):
            return "not a cache entry"
        payload = record["payload"]
        signature = record.get("signature")
        if not isinstance(signature, str):
            return "unsigned"
        if not hmac.compare_digest(signature, self._sign(payload)):
            return "signature mismatch (tampered)"
        expected = (VERSION, name, digest, self.chunk_size)
        found = tuple(payload.get(k) for k in ("version", "name", "source_sha256", "chunk_size"))
        if found != expected:
            return "stale (the document or the chunker changed)"
        if payload.get("chunker", PROSE) != self.identity:
            return f"made by another chunker ({payload.get('chunker', PROSE)})"
        if not isinstance(payload.get("chunks"), list):
            return "not a cache entry"
        return None

    def size_bytes(self) -> int:
        if not self.folder.is_dir():
            return 0
        return sum(p.stat().st_size for p in self.folder.glob("*.json"))
