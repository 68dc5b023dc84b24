"""`agenteval fetch`: bring every pinned corpus file into the cache, verify it, lay it out.

Two phases. First every distinct digest is made present and verified in the content cache
(downloaded, resumed, copied from a local path or mirror, or already there). Only if all of
them succeed is anything written under `<dest>/<source>/<path>`, so a failed run leaves the
destination as it was. With `allow_missing`, files that only the network kept from us are set
aside in `FetchReport.missing` and everything else is laid out: an offline machine or an
outage upstream must not stop a pipeline that can run on what is there.

Concurrency uses threads: the work is blocking I/O plus hashing (which releases the GIL),
httpx's sync client is thread-safe with one shared connection pool, and the CLI is
synchronous, so an event loop would add machinery without making anything faster.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import httpx

from agenteval import __version__
from agenteval.corpus.cache import (
    ContentCache,
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
    NetworkError,
    OfflineError,
    SourcesInvalid,
)
from agenteval.corpus.pins import pins_digest
from agenteval.corpus.progress import ProgressBar
from agenteval.corpus.report import Action, FetchReport, FileResult, MissingFile
from agenteval.schema.sources import (
    FilePin,
    SourcesError,
    SourcesFile,
    load_sources,
    local_path,
    url_kind,
)

__all__ = [
    "DEFAULT_DEST",
    "FetchReport",
    "FileResult",
    "MissingFile",
    "as_sources",
    "corpus_files_digest",
    "fetch_sources",
]

DEFAULT_DEST = Path("data/corpora")
T = TypeVar("T")


def corpus_files_digest(sources: SourcesFile | Path) -> str:
    """The corpus pins' digest (agenteval.corpus.pins.pins_digest) of a sources file."""
    return pins_digest(as_sources(sources))


@dataclass(frozen=True)
class _Candidate:
    """One place the bytes of a blob may come from."""

    location: str
    local: bool  # file:// or a path: no socket needed, usable offline
    mirror: bool  # from `mirrors`: wrong bytes there are not final, see _try_candidates

    @property
    def rank(self) -> int:
        """Local mirrors (cheap, no network), then pinned URLs, then remote mirrors."""
        return 1 if not self.mirror else 0 if self.local else 2


@dataclass
class _Blob:
    """One distinct digest; several pins may share it, and all their locations serve it."""

    sha256: str
    size: int
    candidates: list[_Candidate] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return self.labels[0]

    def add(self, location: str, mirror: bool) -> None:
        known = {c.location: c for c in self.candidates}
        if location in known and (mirror or not known[location].mirror):
            return
        if location in known:  # also some pin's url: the stricter url role wins
            self.candidates.remove(known[location])
        self.candidates.append(_Candidate(location, url_kind(location) != "http", mirror))
        self.candidates.sort(key=lambda c: c.rank)  # stable: file order within a rank


@dataclass(frozen=True)
class _Obtained:
    action: Action
    attempts: int
    transferred: int


class _NotCached(Exception):
    """Offline and no local copy to take the file from."""

    def __str__(self) -> str:
        return "offline: not in the cache and no local copy or mirror present"


@dataclass
class _Context:
    cache: ContentCache
    client: httpx.Client | None
    policy: RetryPolicy
    offline: bool
    base_dir: Path
    bar: ProgressBar
    allow_missing: bool = False


def as_sources(sources: SourcesFile | Path) -> SourcesFile:
    """The sources file, loaded when given as a path; SourcesInvalid names its problem."""
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
        blob.add(pin.url, mirror=False)
        for mirror in pin.mirrors:
            blob.add(mirror, mirror=True)
    return blobs


def _copy_local(src: Path, blob: _Blob, ctx: _Context, where: str) -> _Obtained:
    tmp = ctx.cache.temp(blob.sha256)
    copied = 0

    def counted(n: int) -> None:
        nonlocal copied
        copied += n
        ctx.bar.advance(n)

    try:
        copy_file(src, tmp, counted)
        ctx.cache.install(tmp, blob.sha256, blob.size, blob.label, where)
    except BaseException:
        tmp.unlink(missing_ok=True)
        ctx.bar.advance(-copied)  # the next candidate starts the bar for this file afresh
        raise
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
    candidates = [c for c in blob.candidates if c.local or not ctx.offline]
    if not candidates:
        raise _NotCached
    ctx.cache.entry(blob.sha256).parent.mkdir(parents=True, exist_ok=True)
    with ctx.cache.lock(blob.sha256):
        # Another process may have finished this digest while we waited for the lock.
        if ctx.cache.lookup(blob.sha256, blob.size, blob.label):
            ctx.bar.advance(blob.size)
            return _Obtained("cached", 0, 0)
        return _try_candidates(blob, candidates, ctx)


def _try_one(candidate: _Candidate, blob: _Blob, ctx: _Context) -> _Obtained | None:
    """The bytes from one location; None for a local mirror this machine does not have."""
    if not candidate.local:
        return _download(candidate.location, blob, ctx)
    src = local_path(candidate.location, ctx.base_dir)
    if candidate.mirror:
        if not src.is_file():
            return None
        try:
            return _copy_local(src, blob, ctx, f"copied from mirror {src}")
        except OSError as exc:  # unreadable mirror: the url may still be fine
            raise DownloadError(f"{blob.label}: cannot read mirror {src}: {exc}") from exc
    if not src.is_file():
        raise DownloadError(f"{blob.label}: local source not found: {src}")
    return _copy_local(src, blob, ctx, f"copied from {src}")


def _try_candidates(blob: _Blob, candidates: list[_Candidate], ctx: _Context) -> _Obtained:
    """The first location that yields the pinned bytes wins.

    Wrong bytes from a pinned `url` stop here: upstream changed, and a person has to look.
    Wrong bytes from a mirror only mean that copy is stale (a distribution updated its
    licence file, say); the next location is tried, and the mismatch is reported only if no
    location delivers, so a stale mirror never hides a good url.
    """
    failures: list[FetchError] = []
    for candidate in candidates:
        try:
            got = _try_one(candidate, blob, ctx)
        except IntegrityError as exc:
            if candidate.mirror:
                failures.append(exc)
            elif failures:  # say what the mirrors tried before it answered
                raise exc.with_also([str(f) for f in failures]) from exc
            else:
                raise
        except DownloadError as exc:  # not reachable or not there: try the next location
            failures.append(exc)
        else:
            if got is not None:
                return got
    raise _combined(blob, failures)


def _combined(blob: _Blob, failures: list[FetchError]) -> Exception:
    """One error for a blob no location could deliver; a mismatch outranks the rest."""
    if not failures:  # offline, and every local mirror absent
        return _NotCached()
    mismatch = next((f for f in failures if isinstance(f, IntegrityError)), None)
    others = [str(f) for f in failures if f is not mismatch]
    if mismatch is not None:
        return mismatch.with_also(others)
    if len(failures) == 1:
        return failures[0]
    # Any network failure means the file may well arrive once the network is back.
    networked = any(isinstance(f, NetworkError) for f in failures)
    kind = NetworkError if networked else DownloadError
    return kind(f"{blob.label}: every location failed: " + "; ".join(others))


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


def _obtain_all(
    blobs: list[_Blob], ctx: _Context, jobs: int
) -> tuple[dict[str, _Obtained], dict[str, str]]:
    """Obtained blobs by digest, and (with allow_missing) why each missing one is not."""

    def work(blob: _Blob) -> _Obtained:
        result = _guard_os_errors(blob.label, lambda: _obtain(blob, ctx))
        ctx.bar.files_done(len(blob.labels))
        return result

    obtained: dict[str, _Obtained] = {}
    set_aside: dict[str, str] = {}
    errors: list[BaseException] = []
    not_cached: list[str] = []
    for blob, outcome in _run_all(blobs, work, jobs):
        if isinstance(outcome, _Obtained):
            obtained[blob.sha256] = outcome
        elif ctx.allow_missing and isinstance(outcome, _NotCached | NetworkError):
            # MissingFile prints its own label; the error's would repeat it.
            set_aside[blob.sha256] = str(outcome).removeprefix(f"{blob.label}: ")
        elif isinstance(outcome, _NotCached):
            not_cached.extend(blob.labels)
        else:
            errors.append(outcome)
    _raise_collected(sorted(errors, key=str), not_cached, ctx.cache.root)
    return obtained, set_aside


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
    allow_missing: bool = False,
) -> FetchReport:
    """Fetch, verify and lay out every pinned file; raises a FetchError subclass on failure.

    Each file comes from the cache if present, else from its local mirrors, its url, then
    its remote mirrors: the first that has the pinned bytes. `retries` overrides
    `retry_policy.retries`; the policy carries the backoff timings. `link` hardlinks
    destination files to the cache when possible (copies otherwise). Offline, http(s)
    locations are skipped: files must be cached or have a local url or mirror.

    `allow_missing` lists files kept away by the network (unreachable host, DNS failure,
    timeouts, 429/5xx, or offline and not cached) in `FetchReport.missing` and lays out the
    rest. Wrong bytes anywhere still raise, and so does a file whose only failure is a
    permanent answer such as HTTP 404 (see NetworkError).
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    sf = as_sources(sources)
    cache = ContentCache(cache_dir if cache_dir is not None else default_cache_dir())
    policy = replace(retry_policy or RetryPolicy(), retries=retries)
    pins = list(sf.pins())
    blobs = _group_blobs(pins)
    total = sum(blob.size for blob in blobs.values())
    with (
        ProgressBar(progress, len(pins), total) as bar,
        _client(client, offline, jobs, timeout) as http,
    ):
        ctx = _Context(cache, http, policy, offline, sf.base_dir, bar, allow_missing)
        obtained, set_aside = _obtain_all(list(blobs.values()), ctx, jobs)
    present = [item for item in pins if item[2].sha256 in obtained]
    results = _materialise_all(present, obtained, cache, dest, link, jobs)
    missing = [
        MissingFile(name, rel, pin.sha256, pin.size, set_aside[pin.sha256])
        for name, rel, pin in pins
        if pin.sha256 in set_aside
    ]
    return FetchReport(tuple(results), dest, cache.root, tuple(missing))
