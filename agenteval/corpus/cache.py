"""Content-addressed cache of corpus files, shared by every checkout on the machine.

Layout: `<cache>/sha256/<first two hex>/<sha256>`. A file only ever appears under that name by
`os.replace` after its size and digest were checked, so a reader sees a whole verified file or
nothing; in-flight bytes live under `.part`/`.tmp` names. Entries are made read-only because a
hardlinked destination shares the inode and an in-place edit there would corrupt the cache.
"""

from __future__ import annotations

import os
import secrets
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from agenteval.corpus.errors import FetchError, IntegrityError
from agenteval.fileio import sha256_file

if sys.platform != "win32":
    import fcntl

ENV_CACHE = "AGENTEVAL_CACHE"
_READ_ONLY = 0o444
_CHUNK = 1 << 20

Placement = Literal["linked", "copied", "unchanged"]


def default_cache_dir() -> Path:
    """`$AGENTEVAL_CACHE`, else `$XDG_CACHE_HOME/agenteval/corpora`, else `~/.cache/...`."""
    override = os.environ.get(ENV_CACHE)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "agenteval" / "corpora"


def unique_temp(directory: Path, name: str) -> Path:
    """A temp name no other process or thread will pick: pid plus a random suffix."""
    return directory / f".{name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"


def verify_file(path: Path, sha256: str, size: int, label: str, where: str) -> None:
    """Raise IntegrityError unless `path` has exactly `size` bytes hashing to `sha256`."""
    actual_size = path.stat().st_size
    if actual_size != size:
        raise IntegrityError(label, where, "size", f"{size} bytes", f"{actual_size} bytes")
    actual = sha256_file(path)
    if actual != sha256:
        raise IntegrityError(label, where, "sha256", sha256, actual)


def fsync_file(path: Path) -> None:
    """Flush file data before a rename publishes it; a crash must not leave an empty entry."""
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def copy_file(src: Path, dst: Path, on_bytes: Callable[[int], None] | None = None) -> int:
    """Copy in chunks, reporting progress through `on_bytes(n)`; returns the size copied."""
    total = 0
    with src.open("rb") as reader, dst.open("wb") as writer:
        while block := reader.read(_CHUNK):
            writer.write(block)
            total += len(block)
            if on_bytes is not None:
                on_bytes(len(block))
        writer.flush()
        os.fsync(writer.fileno())
    return total


class ContentCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def entry(self, sha256: str) -> Path:
        return self.root / "sha256" / sha256[:2] / sha256

    def part(self, sha256: str) -> Path:
        """Partial download. Its name is shared (so a later run can resume it) only where
        `lock` really excludes other processes; elsewhere each process gets its own."""
        entry = self.entry(sha256)
        if sys.platform == "win32":
            return unique_temp(entry.parent, sha256 + ".part")
        return entry.with_name(sha256 + ".part")

    def temp(self, sha256: str) -> Path:
        return unique_temp(self.entry(sha256).parent, sha256)

    def lookup(self, sha256: str, size: int, label: str) -> Path | None:
        """The verified entry, or None if absent. A present but wrong entry is an error:
        re-downloading would hide a tampered cache or a disk fault."""
        entry = self.entry(sha256)
        if not entry.exists():
            return None
        if not entry.is_file():
            raise FetchError(f"cache entry for {label} is not a regular file: {entry}")
        verify_file(entry, sha256, size, label, f"in cache {entry}")
        return entry

    @contextmanager
    def lock(self, sha256: str) -> Iterator[None]:
        """Exclusive per-digest lock across processes, so one of them downloads and the others
        then find the entry. The lock file stays: deleting it would race with waiters."""
        path = self.entry(sha256).with_name(sha256 + ".lock")
        path.parent.mkdir(parents=True, exist_ok=True)
        if sys.platform == "win32":
            yield
            return
        with path.open("ab") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def install(self, tmp: Path, sha256: str, size: int, label: str, where: str) -> Path:
        """Verify `tmp` and publish it as the entry; `tmp` is gone afterwards either way."""
        try:
            verify_file(tmp, sha256, size, label, where)
            fsync_file(tmp)
            tmp.chmod(_READ_ONLY)
            entry = self.entry(sha256)
            os.replace(tmp, entry)
        finally:
            tmp.unlink(missing_ok=True)
        return entry


def _place(entry: Path, tmp: Path, link: bool) -> Placement:
    if link:
        try:
            os.link(entry, tmp)
            return "linked"
        except OSError:  # other filesystem, or links unsupported: fall back to a copy
            pass
    shutil.copyfile(entry, tmp)
    fsync_file(tmp)
    return "copied"


def materialise(
    entry: Path, target: Path, sha256: str, size: int, label: str, *, link: bool = True
) -> tuple[Placement, bool]:
    """Put the cache entry at `target` atomically and verify it there.

    Returns how it was placed and whether a stale file (an older pin) was replaced. The
    destination is derived output, so a wrong file there is replaced, and reported.
    """
    replaced = target.is_symlink()  # a symlink there is replaced by a real file
    if target.is_dir() and not target.is_symlink():
        raise FetchError(f"destination for {label} is a directory: {target}")
    if target.is_file() and not target.is_symlink():
        try:
            verify_file(target, sha256, size, label, f"in destination {target}")
            return "unchanged", False
        except IntegrityError:
            replaced = True
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = unique_temp(target.parent, target.name)
    try:
        how = _place(entry, tmp, link)
        verify_file(tmp, sha256, size, label, f"materialised at {target}")
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return how, replaced
