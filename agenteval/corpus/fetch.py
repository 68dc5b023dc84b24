"""`agenteval fetch`: bring every pinned corpus file into the cache, verify it, lay it out.

Two phases. First every distinct digest is made present and verified in the content cache
(downloaded, resumed, copied from a local path, or already there). Only if all of them succeed
is anything written under `<dest>/<source>/<path>`, so a failed run leaves the destination as
it was. Concurrency uses threads: the work is blocking I/O plus hashing (which releases the
GIL), httpx's sync client is thread-safe with one shared connection pool, and the CLI is
synchronous, so an event loop would add machinery without making anything faster.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import httpx
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from agenteval import __version__
from agenteval.corpus.cache import (
    ContentCache,
    Placement,
    copy_file,
    default_cache_dir,
    materialise,
)
from agenteval.corpus.download import RetryPolicy, download
from agenteval.corpus.errors import (
    DownloadError,
    FetchError,
    IntegrityError,
    MultipleFetchErrors,
    OfflineError,
    SourcesInvalid,
)
from agenteval.schema.sources import (
    FilePin,
    SourcesError,
    SourcesFile,
    load_sources,
    local_path,
    url_kind,
)

Action = Literal["cached", "downloaded", "resumed", "copied"]
DEFAULT_DEST = Path("data/corpora")
T = TypeVar("T")


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
class FetchReport:
    files: tuple[FileResult, ...]
    dest: Path
    cache_dir: Path

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
        """One line for the CLI, e.g. `5 files, 98,964 bytes in data/corpora: 5 cached`."""
        parts = ", ".join(f"{n} {action}" for action, n in sorted(self.counts().items()))
        return f"{self.total_files} files, {self.total_bytes:,} bytes in {self.dest}: {parts}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "dest": str(self.dest),
            "cache_dir": str(self.cache_dir),
            "total_files": self.total_files,
            "total_bytes": self.total_bytes,
            "transferred_bytes": self.transferred_bytes,
            "counts": self.counts(),
            "files": [{**vars(f), "destination": str(f.destination)} for f in self.files],
        }


def corpus_files_digest(sources: SourcesFile | Path) -> str:
    """sha256 over the pins: lines `<source>/<path>\\t<sha256>\\n`, sorted, UTF-8.

    Changes exactly when a file is added, removed, renamed or re-pinned; URLs and licence
    prose do not count, since moving a mirror does not change the corpus.
    """
    sf = _as_sources(sources)
    lines = sorted(f"{name}/{rel}\t{pin.sha256}\n" for name, rel, pin in sf.pins())
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


@dataclass
class _Blob:
    """One distinct digest; several pins may share it, and their URLs act as mirrors."""

    sha256: str
    size: int
    urls: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.labels[0]


@dataclass(frozen=True)
class _Obtained:
    action: Action
    attempts: int
    transferred: int


class _NotCached(Exception):
    """Offline and no local copy to take the file from."""


class _Bar:
    """rich progress (bytes, with files in the label) on an interactive stderr, else nothing."""

    def __init__(self, enabled: bool, files: int, total_bytes: int) -> None:
        self._files, self._done = files, 0
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task = TaskID(0)
        console = Console(stderr=True)
        if enabled and console.is_terminal:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                DownloadColumn(),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=console,
            )
            self._task = self._progress.add_task(self._label(), total=total_bytes)

    def _label(self) -> str:
        return f"corpora {self._done}/{self._files} files"

    def __enter__(self) -> _Bar:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(self, *_: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def advance(self, n: int) -> None:
        if self._progress is not None:
            self._progress.advance(self._task, n)

    def files_done(self, n: int) -> None:
        with self._lock:
            self._done += n
            if self._progress is not None:
                self._progress.update(self._task, description=self._label())


@dataclass
class _Context:
    cache: ContentCache
    client: httpx.Client | None
    policy: RetryPolicy
    offline: bool
    base_dir: Path
    bar: _Bar


def _as_sources(sources: SourcesFile | Path) -> SourcesFile:
    if isinstance(sources, SourcesFile):
        return sources
    try:
        return load_sources(Path(sources))
    except SourcesError as exc:
        raise SourcesInvalid(str(exc)) from exc
    except OSError as exc:
        raise SourcesInvalid(f"{sources}: cannot read sources file: {exc}") from exc


def _group_blobs(pins: list[tuple[str, str, FilePin]]) -> dict[str, _Blob]:
    blobs: dict[str, _Blob] = {}
    for name, rel, pin in pins:
        blob = blobs.setdefault(pin.sha256, _Blob(pin.sha256, pin.size))
        blob.labels.append(f"{name}/{rel}")
        if pin.url not in blob.urls:
            blob.urls.append(pin.url)
    return blobs


def _copy_local(url: str, blob: _Blob, ctx: _Context) -> _Obtained:
    src = local_path(url, ctx.base_dir)
    if not src.is_file():
        raise DownloadError(f"{blob.label}: local source not found: {src}")
    tmp = ctx.cache.temp(blob.sha256)
    try:
        copied = copy_file(src, tmp, ctx.bar.advance)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    ctx.cache.install(tmp, blob.sha256, blob.size, blob.label, f"copied from {src}")
    return _Obtained("copied", 1, copied)


def _download(url: str, blob: _Blob, ctx: _Context) -> _Obtained:
    if ctx.client is None:  # offline: callers filter http URLs out before this point
        raise DownloadError(f"{blob.label}: no network client for {url}")
    where = f"downloaded from {url}"
    part = ctx.cache.part(blob.sha256)
    try:
        got = download(ctx.client, url, part, blob.size, blob.label, ctx.policy, ctx.bar.advance)
        try:
            ctx.cache.install(part, blob.sha256, blob.size, blob.label, where)
        except IntegrityError:
            if not got.resumed:
                raise
            # The kept prefix may come from an older upstream version or another server;
            # one clean full download decides, and its mismatch is final.
            ctx.bar.advance(-blob.size)
            again = download(ctx.client, url, part, blob.size, blob.label, ctx.policy)
            ctx.bar.advance(blob.size)
            ctx.cache.install(part, blob.sha256, blob.size, blob.label, where)
            attempts, received = got.attempts + again.attempts, got.transferred + again.transferred
            return _Obtained("downloaded", attempts, received)
    except IntegrityError:
        part.unlink(missing_ok=True)  # wrong bytes must not be resumed by the next run
        raise
    return _Obtained("resumed" if got.resumed else "downloaded", got.attempts, got.transferred)


def _obtain(blob: _Blob, ctx: _Context) -> _Obtained:
    """Make the blob present and verified in the cache."""
    if ctx.cache.lookup(blob.sha256, blob.size, blob.label):
        ctx.bar.advance(blob.size)
        return _Obtained("cached", 0, 0)
    urls = [u for u in blob.urls if not (ctx.offline and url_kind(u) == "http")]
    if not urls:
        raise _NotCached
    ctx.cache.entry(blob.sha256).parent.mkdir(parents=True, exist_ok=True)
    with ctx.cache.lock(blob.sha256):
        # Another process may have finished this digest while we waited for the lock.
        if ctx.cache.lookup(blob.sha256, blob.size, blob.label):
            ctx.bar.advance(blob.size)
            return _Obtained("cached", 0, 0)
        failures: list[DownloadError] = []
        for url in urls:
            try:
                if url_kind(url) == "http":
                    return _download(url, blob, ctx)
                return _copy_local(url, blob, ctx)
            except DownloadError as exc:  # try the next mirror; integrity errors stop here
                failures.append(exc)
        if len(failures) == 1:
            raise failures[0]
        raise DownloadError(f"{blob.label}: every URL failed: " + "; ".join(map(str, failures)))


def _guard_os_errors(label: str, work: Callable[[], T]) -> T:
    try:
        return work()
    except OSError as exc:  # disk full, permissions: still one FetchError line for the CLI
        where = f" ({exc.filename})" if exc.filename else ""
        raise FetchError(f"{label}: {exc.strerror or exc}{where}") from exc


def _run_all(items: list[T], work: Callable[[T], Any], jobs: int) -> list[tuple[T, Any]]:
    """Run `work` over `items` on `jobs` threads; pairs each item with its result or error."""
    outcomes: list[tuple[T, Any]] = []
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(items)))) as pool:
        futures: dict[Future[Any], T] = {pool.submit(work, item): item for item in items}
        try:
            for future in as_completed(futures):
                error = future.exception()
                outcomes.append((futures[future], future.result() if error is None else error))
        except BaseException:  # Ctrl-C: do not start queued files
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return outcomes


def _raise_collected(errors: list[BaseException], missing: list[str], cache_dir: Path) -> None:
    for error in errors:
        if not isinstance(error, FetchError):
            raise error  # a bug or Ctrl-C, not a fetch failure: keep its own traceback
    failures = [e for e in errors if isinstance(e, FetchError)]
    if missing:
        failures.insert(0, OfflineError(sorted(missing), cache_dir))
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise MultipleFetchErrors(failures)


def _obtain_all(blobs: list[_Blob], ctx: _Context, jobs: int) -> dict[str, _Obtained]:
    def work(blob: _Blob) -> _Obtained:
        result = _guard_os_errors(blob.label, lambda: _obtain(blob, ctx))
        ctx.bar.files_done(len(blob.labels))
        return result

    obtained: dict[str, _Obtained] = {}
    errors: list[BaseException] = []
    missing: list[str] = []
    for blob, outcome in _run_all(blobs, work, jobs):
        if isinstance(outcome, _NotCached):
            missing.extend(blob.labels)
        elif isinstance(outcome, BaseException):
            errors.append(outcome)
        else:
            obtained[blob.sha256] = outcome
    _raise_collected(sorted(errors, key=str), missing, ctx.cache.root)
    return obtained


def _materialise_all(
    pins: list[tuple[str, str, FilePin]],
    obtained: dict[str, _Obtained],
    cache: ContentCache,
    dest: Path,
    link: bool,
    jobs: int,
) -> list[FileResult]:
    counted: set[str] = set()  # a digest shared by several pins was transferred once

    def work(pin_item: tuple[str, str, FilePin]) -> FileResult:
        name, rel, pin = pin_item
        label = f"{name}/{rel}"
        target = dest.joinpath(name, *rel.split("/"))
        entry = cache.entry(pin.sha256)
        placed, replaced = _guard_os_errors(
            label, lambda: materialise(entry, target, pin.sha256, pin.size, label, link=link)
        )
        got = obtained[pin.sha256]
        return FileResult(
            name, rel, pin.sha256, pin.size, got.action, got.attempts, 0, placed, replaced, target
        )

    results: dict[str, FileResult] = {}
    errors: list[BaseException] = []
    for (name, rel, _), outcome in _run_all(pins, work, jobs):
        if isinstance(outcome, BaseException):
            errors.append(outcome)
        else:
            results[f"{name}/{rel}"] = outcome
    _raise_collected(sorted(errors, key=str), [], cache.root)
    ordered = []
    for key in sorted(results):
        item = results[key]
        if item.sha256 not in counted:  # credit the transfer to the first pin, in path order
            counted.add(item.sha256)
            item = replace(item, transferred=obtained[item.sha256].transferred)
        ordered.append(item)
    return ordered


@contextmanager
def _client(
    given: httpx.Client | None, offline: bool, jobs: int, timeout: float
) -> Iterator[httpx.Client | None]:
    if offline:  # no client object at all: nothing here can open a socket
        yield None
    elif given is not None:
        yield given
    else:
        limits = httpx.Limits(max_connections=jobs, max_keepalive_connections=jobs)
        # identity: byte offsets for Range must be offsets into the file, not into gzip.
        headers = {"User-Agent": f"agenteval/{__version__}", "Accept-Encoding": "identity"}
        with httpx.Client(
            timeout=timeout, limits=limits, headers=headers, follow_redirects=True
        ) as client:
            yield client


def fetch_sources(
    sources: SourcesFile | Path,
    dest: Path = DEFAULT_DEST,
    *,
    offline: bool = False,
    jobs: int = 8,
    cache_dir: Path | None = None,
    progress: bool = True,
    retries: int = 5,
    timeout: float = 30,
    retry_policy: RetryPolicy | None = None,
    link: bool = True,
    client: httpx.Client | None = None,
) -> FetchReport:
    """Fetch, verify and lay out every pinned file; raises a FetchError subclass on failure.

    `retries` overrides `retry_policy.retries`; the policy carries the backoff timings.
    `link` hardlinks destination files to the cache when possible (copies otherwise).
    Offline, http(s) pins must already be cached; file:// and local paths are still copied.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    sf = _as_sources(sources)
    cache = ContentCache(cache_dir if cache_dir is not None else default_cache_dir())
    policy = replace(retry_policy or RetryPolicy(), retries=retries)
    pins = list(sf.pins())
    blobs = _group_blobs(pins)
    total = sum(blob.size for blob in blobs.values())
    with _Bar(progress, len(pins), total) as bar, _client(client, offline, jobs, timeout) as http:
        ctx = _Context(cache, http, policy, offline, sf.base_dir, bar)
        obtained = _obtain_all(list(blobs.values()), ctx, jobs)
    results = _materialise_all(pins, obtained, cache, dest, link, jobs)
    return FetchReport(tuple(results), dest, cache.root)
