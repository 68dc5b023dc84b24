"""`agenteval fetch --verify`: every pinned file checked again, byte for byte, nothing fetched.

A laid-out file (`<dest>/<source>/<path>`) must be there with the pinned size and sha256; its
entry in the shared content cache, when present, must be too (a hardlinked entry is the same
file and is hashed once). A missing cache entry is no fault: the cache is only a cache. The
check reads files and opens no socket, so it answers the same offline.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agenteval.corpus.cache import ContentCache, default_cache_dir, verify_file
from agenteval.corpus.errors import IntegrityError
from agenteval.schema.sources import FilePin, SourcesFile


@dataclass(frozen=True)
class Fault:
    """One file that does not hold what its pin says, or is not there."""

    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Verification:
    files: int  # pinned files checked
    bytes: int  # their pinned sizes, summed
    dest: Path
    cache_dir: Path
    faults: tuple[Fault, ...]

    def summary(self) -> str:
        line = f"verified {self.files} pinned file(s), {self.bytes:,} bytes, in {self.dest}"
        line += f" and the cache {self.cache_dir}"
        return line + (f": {len(self.faults)} fault(s)" if self.faults else ": all match")


def verify_sources(
    sources: SourcesFile | Path, dest: Path, cache_dir: Path | None = None
) -> Verification:
    """Check every pinned file under `dest` and its cache entry; raises SourcesInvalid for an
    unreadable sources file, reports everything else as a Fault."""
    from agenteval.corpus.fetch import as_sources

    pins = list(as_sources(sources).pins())
    cache = ContentCache(cache_dir if cache_dir is not None else default_cache_dir())
    faults: list[Fault] = []
    for name, rel, pin in pins:
        target = dest.joinpath(name, *rel.split("/"))
        faults += _check_pair(target, cache.entry(pin.sha256), pin, f"{name}/{rel}")
    total = sum(pin.size for _, _, pin in pins)
    return Verification(len(pins), total, dest, cache.root, tuple(faults))


def _check_pair(target: Path, entry: Path, pin: FilePin, label: str) -> list[Fault]:
    if not target.is_file():
        found = [Fault(target, f"missing: {label} is not laid out (run `agenteval fetch`)")]
    else:
        found = _check(target, pin, label)
    if not entry.exists():
        return found
    if target.is_file() and _same_file(target, entry):  # hardlinked: one file, hashed once
        cached = [Fault(entry, f"{f.message} (the same file)") for f in found]
    else:
        cached = _check(entry, pin, label)
    # fetch never replaces a wrong cache entry by itself: a person has to look first.
    return found + [Fault(f.path, f"{f.message}; remove this cache entry, then `agenteval "
                                  "fetch`") for f in cached]  # fmt: skip


def _check(path: Path, pin: FilePin, label: str) -> list[Fault]:
    try:
        verify_file(path, pin.sha256, pin.size, label, str(path))
    except IntegrityError as exc:
        return [Fault(path, f"{exc.what} mismatch for {label}: pinned {exc.expected}, "
                            f"found {exc.actual}")]  # fmt: skip
    except OSError as exc:
        return [Fault(path, f"unreadable: {exc.strerror or exc}")]
    return []


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
