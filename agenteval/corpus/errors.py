"""Fetch errors: one base class, one line each, so the CLI can print `str(exc)` and exit 2."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class FetchError(Exception):
    """Base of every corpus fetch failure."""


class SourcesInvalid(FetchError):
    """The sources file has errors (the message names the first, with path:line)."""


class IntegrityError(FetchError):
    """Bytes that do not match their pin: after download, in the cache or in the destination.

    Never answered by a silent re-download: a changed upstream or a tampered cache is something
    a person has to look at.
    """

    def __init__(
        self,
        label: str,
        where: str,
        what: str,
        expected: str,
        actual: str,
        also: Sequence[str] = (),
    ) -> None:
        self.label, self.where, self.what = label, where, what
        self.expected, self.actual = expected, actual
        self.also = tuple(also)  # what the other candidate locations answered, if any
        tail = f"; also tried: {'; '.join(self.also)}" if self.also else ""
        super().__init__(
            f"{what} mismatch for {label} ({where}): expected {expected}, got {actual}{tail}"
        )

    def with_also(self, also: Sequence[str]) -> IntegrityError:
        """The same mismatch, its message extended with the other candidates' failures."""
        return IntegrityError(
            self.label, self.where, self.what, self.expected, self.actual, [*self.also, *also]
        )


class DownloadError(FetchError):
    """A file could not be obtained: HTTP error, retries exhausted, local file missing."""


class NetworkError(DownloadError):
    """The network, not the pin, is at fault: host unreachable, DNS failure, connection
    refused, timeouts, or 429/5xx until the retries ran out.

    `fetch_sources(allow_missing=True)` reports such a file as missing instead of failing
    the run. A permanent answer such as HTTP 404 on its own stays a DownloadError, because
    the pin needs fixing; when several locations fail and any of them for network reasons,
    the file may arrive once the network is back, so the combined error is a NetworkError.
    """


class OfflineError(FetchError):
    """Offline mode and some pinned files are not in the cache."""

    def __init__(self, missing: list[str], cache_dir: Path) -> None:
        self.missing = missing
        super().__init__(
            f"offline: {len(missing)} file(s) not in cache {cache_dir}: {', '.join(missing)}"
        )


class MultipleFetchErrors(FetchError):
    """Several files failed; `errors` holds each one, the message leads with the first."""

    def __init__(self, errors: list[FetchError]) -> None:
        self.errors = errors
        super().__init__(f"{errors[0]} (and {len(errors) - 1} more failed file(s))")
