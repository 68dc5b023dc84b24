"""Streaming HTTP download into a partial file: retries with backoff, Retry-After, Range resume.

This module only moves bytes. Whether they are the right bytes is decided by the caller, which
hashes the finished file; the size is enforced here too so a wrong file is stopped early
instead of filling the disk.

Two retry budgets. A busy or flaky server (429, 5xx, timeouts, a connection dropped mid-body)
gets the full `retries` with exponential backoff, because waiting is what helps. A failure to
connect at all (DNS resolution failure, network unreachable, connection refused) almost always
means the machine is offline or the host is gone, and waiting does not change that; it gets at
most `connect_retries` quick retries so an offline run learns so in well under a second per
file instead of sleeping through the whole backoff schedule.
"""

from __future__ import annotations

import email.utils
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from agenteval.corpus.errors import DownloadError, IntegrityError, NetworkError

ByteCallback = Callable[[int], None]


def _no_progress(_: int) -> None:
    pass


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. `sleep` and `seed` are injectable so tests run fast and repeatably."""

    retries: int = 5
    base_delay: float = 0.5
    max_delay: float = 30.0
    # A Retry-After longer than this fails the file instead of stalling the run for hours.
    max_retry_after: float = 600.0
    # httpx.ConnectError (DNS, unreachable, refused): few and short retries, see module doc.
    connect_retries: int = 2
    connect_delay: float = 0.25
    sleep: Callable[[float], None] = time.sleep
    seed: int | None = None

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Exponential backoff with "equal jitter": never zero, never in lock-step with
        the other workers retrying against the same server."""
        ceiling = min(self.max_delay, self.base_delay * 2.0 ** max(0, attempt - 1))
        return ceiling / 2 + rng.uniform(0, ceiling / 2)

    def connect_backoff(self, failures: int, rng: random.Random) -> float:
        """Delay after the n-th failed connect: the normal backoff, capped at `connect_delay`."""
        return min(self.connect_delay, self.backoff(failures, rng))


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date), else None."""
    if not value or not value.strip():
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def is_retryable_status(status: int) -> bool:
    # 501 and 505 are permanent answers about the method/protocol, not overload.
    return status in (408, 425, 429) or (500 <= status <= 599 and status not in (501, 505))


@dataclass
class DownloadResult:
    attempts: int  # HTTP requests made, including failed ones
    resumed: bool  # the finished file continues bytes kept from an earlier response or run
    transferred: int  # body bytes received over the network, including discarded ones


class _Retry(Exception):
    def __init__(self, reason: str, delay: float | None = None, connect: bool = False) -> None:
        super().__init__(reason)
        self.reason, self.delay = reason, delay
        self.connect = connect  # no connection was made at all: the short budget applies


def _content_range(header: str | None) -> tuple[int, int | None] | None:
    """(first byte, total or None) of a `bytes a-b/total` Content-Range."""
    if not header or not header.startswith("bytes "):
        return None
    span, _, total = header[6:].partition("/")
    first, _, _ = span.partition("-")
    if not first.strip().isdigit():
        return None
    return int(first), int(total) if total.strip().isdigit() else None


def _start_offset(part: Path, size: int) -> int:
    """Bytes of `part` worth keeping; a part longer than the pin is garbage."""
    try:
        have = part.stat().st_size
    except FileNotFoundError:
        return 0
    if have > size:
        part.unlink()
        return 0
    return have


class _Stream:
    """One GET: decides append vs overwrite from the status, then writes the body."""

    def __init__(self, url: str, part: Path, size: int, label: str, on_bytes: ByteCallback):
        self.url, self.part, self.size, self.label = url, part, size, label
        self.on_bytes = on_bytes
        self.received = 0

    def run(self, client: httpx.Client, offset: int) -> bool:
        """Returns True if the body was appended to an existing prefix (a resume)."""
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        try:
            with client.stream("GET", self.url, headers=headers) as response:
                append = self._check_status(response, offset)
                self._write(response, offset if append else 0, append)
                return append and offset > 0
        except httpx.ConnectError as exc:  # DNS failure, unreachable, refused
            raise _Retry(f"{type(exc).__name__}: {exc}", connect=True) from exc
        except httpx.TransportError as exc:  # timed out, reset, closed mid-body
            raise _Retry(f"{type(exc).__name__}: {exc}") from exc

    def _check_status(self, response: httpx.Response, offset: int) -> bool:
        status = response.status_code
        if status == 206 and offset:
            span = _content_range(response.headers.get("content-range"))
            if span is None or span[0] != offset:
                self._restart(offset)
                raise _Retry(f"HTTP 206 with unexpected Content-Range for offset {offset}", 0.0)
            if span[1] is not None and span[1] != self.size:
                self._size_error(f"{span[1]} bytes (Content-Range)")
            return True
        if status == 200:
            if offset:  # server ignored Range: the full body replaces what we had
                self.on_bytes(-offset)
            self._check_length(response)
            return False
        if status == 416 and offset:  # our prefix does not fit the server's file: start over
            self._restart(offset)
            raise _Retry("HTTP 416 for a resume request", 0.0)
        if is_retryable_status(status):
            raise _Retry(f"HTTP {status}", parse_retry_after(response.headers.get("retry-after")))
        raise DownloadError(f"{self.label}: HTTP {status} from {self.url}")

    def _check_length(self, response: httpx.Response) -> None:
        announced = response.headers.get("content-length", "")
        encoded = response.headers.get("content-encoding", "identity") != "identity"
        if announced.isdigit() and not encoded and int(announced) != self.size:
            self._size_error(f"{announced} bytes (Content-Length)")

    def _size_error(self, got: str) -> None:
        where = f"announced by {self.url}"
        raise IntegrityError(self.label, where, "size", f"{self.size} bytes", got)

    def _restart(self, offset: int) -> None:
        self.part.unlink(missing_ok=True)
        self.on_bytes(-offset)

    def _write(self, response: httpx.Response, offset: int, append: bool) -> None:
        written = offset
        with self.part.open("ab" if append else "wb") as handle:
            for chunk in response.iter_bytes():
                written += len(chunk)
                if written > self.size:
                    where = f"downloaded from {self.url}"
                    more = f"more than {self.size} bytes"
                    raise IntegrityError(self.label, where, "size", f"{self.size} bytes", more)
                handle.write(chunk)
                self.received += len(chunk)
                self.on_bytes(len(chunk))
            handle.flush()
            os.fsync(handle.fileno())
        if written < self.size:  # close-delimited body cut short: the next try resumes it
            raise _Retry(f"body ended at {written} of {self.size} bytes")


def download(
    client: httpx.Client,
    url: str,
    part: Path,
    size: int,
    label: str,
    policy: RetryPolicy,
    on_bytes: ByteCallback = _no_progress,
) -> DownloadResult:
    """Fill `part` with exactly `size` bytes from `url`, resuming whatever `part` holds.

    Retries timeouts, dropped connections, 408/425/429 and most 5xx with full backoff, and
    failures to connect a couple of times only; other statuses and size mismatches fail at
    once. Raises NetworkError when the retries run out, DownloadError for a permanent HTTP
    status, IntegrityError for a wrong size.
    """
    rng = random.Random(policy.seed)
    attempts = received = connect_failures = 0
    resumed = False
    while True:
        offset = _start_offset(part, size)
        if offset == size:  # a complete part left by an earlier run: the caller verifies it
            return DownloadResult(attempts, True, received)
        attempts += 1
        stream = _Stream(url, part, size, label, on_bytes)
        try:
            resumed = stream.run(client, offset)
            return DownloadResult(attempts, resumed, received + stream.received)
        except _Retry as exc:
            received += stream.received
            connect_failures += exc.connect
            _wait(exc, attempts, connect_failures, policy, rng, f"{label}: {url}")


def _wait(
    exc: _Retry,
    attempts: int,
    connect_failures: int,
    policy: RetryPolicy,
    rng: random.Random,
    what: str,
) -> None:
    give_up = attempts > policy.retries
    if exc.connect:
        give_up = give_up or connect_failures > min(policy.retries, policy.connect_retries)
    if give_up:
        raise NetworkError(f"{what}: gave up after {attempts} attempts, last: {exc.reason}")
    if exc.connect:
        policy.sleep(policy.connect_backoff(connect_failures, rng))
        return
    if exc.delay is None:
        policy.sleep(policy.backoff(attempts, rng))
        return
    if exc.delay > policy.max_retry_after:
        raise NetworkError(
            f"{what}: server asked to retry after {exc.delay:.0f}s"
            f" (more than the {policy.max_retry_after:.0f}s limit)"
        )
    # Retry-After is a floor; a little jitter keeps parallel workers from arriving together.
    policy.sleep(exc.delay + rng.uniform(0, min(policy.base_delay, 1.0)))
