"""What `fetch_sources` returns: per-file results, files left out, and their summary."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agenteval.corpus.cache import Placement

Action = Literal["cached", "downloaded", "resumed", "copied"]


@dataclass(frozen=True)
class FileResult:
    source: str
    path: str  # relative to <dest>/<source>
    sha256: str
    bytes: int
    action: Action  # how the bytes reached the cache in this run
    attempts: int  # requests made for them (0 when cached)
    transferred: int  # bytes received or copied in this run (shared digests count once)
    placed: Placement  # how the destination file was produced
    replaced: bool  # a stale or wrong destination file was overwritten
    destination: Path


@dataclass(frozen=True)
class MissingFile:
    """A pinned file left out by `allow_missing`: nothing under dest was written for it."""

    source: str
    path: str
    sha256: str
    bytes: int
    reason: str  # why no location could deliver it (network errors, or offline)

    @property
    def label(self) -> str:
        return f"{self.source}/{self.path}"

    def __str__(self) -> str:
        return f"{self.label}: {self.reason}"


@dataclass(frozen=True)
class FetchReport:
    files: tuple[FileResult, ...]
    dest: Path
    cache_dir: Path
    missing: tuple[MissingFile, ...] = ()

    @property
    def total_files(self) -> int:
        return len(self.files)

    @property
    def total_bytes(self) -> int:
        return sum(f.bytes for f in self.files)

    @property
    def transferred_bytes(self) -> int:
        return sum(f.transferred for f in self.files)

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for item in self.files:
            found[item.action] = found.get(item.action, 0) + 1
        return found

    def summary(self) -> str:
        """One line for the CLI, e.g. `5 files, 98,964 bytes in data/corpora: 5 cached`;
        files left out by `allow_missing` are named at the end."""
        parts = ", ".join(f"{n} {action}" for action, n in sorted(self.counts().items()))
        line = f"{self.total_files} files, {self.total_bytes:,} bytes in {self.dest}"
        line += f": {parts}" if parts else ""
        if self.missing:
            labels = ", ".join(m.label for m in self.missing)
            line += f"; {len(self.missing)} missing: {labels}"
        return line

    def as_dict(self) -> dict[str, Any]:
        return {
            "dest": str(self.dest),
            "cache_dir": str(self.cache_dir),
            "total_files": self.total_files,
            "total_bytes": self.total_bytes,
            "transferred_bytes": self.transferred_bytes,
            "counts": self.counts(),
            "files": [{**vars(f), "destination": str(f.destination)} for f in self.files],
            "missing": [vars(m) for m in self.missing],
        }
