"""Small file helpers: canonical digests and atomic writes (temp file + rename)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_of(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    return sha256_text(canonical_json(value))


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write via a temp file in the same directory and rename, so readers never see halves."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Scrub(Protocol):
    def scrub(self, obj: Any) -> Any: ...

    def scrub_text(self, text: str) -> str: ...


_scrubber: _Scrub | None = None


def install_scrubber(scrubber: _Scrub | None) -> None:
    """Route every file this process writes through `scrubber` (known and shaped secrets)."""
    global _scrubber
    _scrubber = scrubber


def write_text(path: Path, text: str) -> None:
    write_atomic(path, _scrubber.scrub_text(text) if _scrubber else text)


def write_json(path: Path, value: Any) -> None:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    if _scrubber is not None:
        value = _scrubber.scrub(value)
    write_atomic(path, json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def code_digest() -> str:
    """sha256 over agenteval's own source files.

    Part of every agent's and judge's configuration digest: stored transcripts and verdicts
    are reused (resume, dvc repro with persisted outputs) only when the code that produced
    them is the same, so fixing a judge or an agent can never leave stale grades behind.
    """
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(str(path.relative_to(package)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()
