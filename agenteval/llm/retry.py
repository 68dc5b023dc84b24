"""Error taxonomy and the retry loop every LLM client shares.

The clients disable any retrying inside SDKs so that this one loop decides: transient
failures (connection errors, timeouts, 429, 5xx) back off and retry a bounded number of
times, while an exhausted quota or rejected credential stops at once, because retrying it
only burns time and, for a whole evaluation run, produces a wall of identical failures.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar

T = TypeVar("T")

# Lower-cased substrings that mark a response body as "the account cannot pay", as opposed
# to an ordinary rate limit that clears after a short wait.
QUOTA_MARKERS = (
    "insufficient_quota",
    "exceeded your current quota",
    "credit balance is too low",
    "billing_hard_limit",
    "billing_not_active",
    "out of credits",
    "insufficient credits",
    "insufficient_balance",
    "quota exhausted",
    "quota_exhausted",
)

_RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
_BODY_EXCERPT = 500


class LLMError(Exception):
    """Base of every error raised by agenteval.llm; messages never carry credentials."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


class TransientError(LLMError):
    """A transient failure that persisted through every allowed attempt."""


class QuotaExhausted(LLMError):
    """The account is out of quota/credit or its credential was rejected or missing.

    Raised without retrying; an evaluation run should stop and be resumed later.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        attempts: int = 1,
        reason: Literal["quota", "credential"] = "quota",
    ) -> None:
        super().__init__(message, status=status, attempts=attempts)
        self.reason = reason


class BadRequest(LLMError):
    """The provider rejected the request itself (4xx other than auth/quota/rate limit)."""


class RetryableFailure(LLMError):
    """One attempt failed in a way worth retrying; internal to the retry loop."""

    def __init__(
        self, message: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status)
        self.retry_after = retry_after


def _excerpt(body: str, scrub: Callable[[str], str]) -> str:
    text = scrub(body.strip())
    if len(text) > _BODY_EXCERPT:
        text = text[:_BODY_EXCERPT] + "..."
    return text


def is_quota_body(body: str) -> bool:
    lowered = body.lower()
    return any(marker in lowered for marker in QUOTA_MARKERS)


def classify_status(
    status: int,
    body: str,
    headers: Mapping[str, str],
    *,
    where: str,
    scrub: Callable[[str], str],
) -> LLMError:
    """Turn a non-2xx HTTP answer into the error the retry loop acts on."""
    detail = f"{where}: HTTP {status}: {_excerpt(body, scrub)}"
    if status in (401, 403):
        return QuotaExhausted(detail, status=status, reason="credential")
    if status == 402 or (status in (400, 429) and is_quota_body(body)):
        return QuotaExhausted(detail, status=status, reason="quota")
    if status in _RETRYABLE_STATUS or status >= 500:
        return RetryableFailure(detail, status=status, retry_after=parse_retry_after(headers))
    return BadRequest(detail, status=status)


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds to wait according to `retry-after-ms` or `Retry-After` (seconds or HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


@dataclass
class RetryPolicy:
    """Bounded, jittered exponential back-off.

    `sleep` and `rng` are injectable so tests can observe the delays without waiting.
    """

    max_attempts: int = 5
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    # A server asking for a very long pause is capped: the run would rather fail this call
    # (as TransientError) than hang for an hour.
    max_retry_after: float = 60.0
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")

    def delay_for(self, failed_attempts: int, retry_after: float | None) -> float:
        """Delay before the next attempt, after `failed_attempts` failures so far."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** (failed_attempts - 1))
        # Jitter in [ceiling/2, ceiling] spreads out many clients that failed together
        # while keeping a floor so retries never hammer the server back-to-back.
        return ceiling * (0.5 + 0.5 * self.rng.random())


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]], policy: RetryPolicy
) -> tuple[T, int]:
    """Run `attempt` until it succeeds; returns (result, attempts used).

    `attempt` signals a retryable failure by raising RetryableFailure; any other LLMError
    (quota, bad request) propagates immediately.
    """
    last: RetryableFailure | None = None
    for number in range(1, policy.max_attempts + 1):
        try:
            return await attempt(), number
        except RetryableFailure as failure:
            last = failure
            if number == policy.max_attempts:
                break
            await policy.sleep(policy.delay_for(number, failure.retry_after))
        except LLMError as error:
            error.attempts = number
            raise
    assert last is not None
    raise TransientError(
        f"gave up after {policy.max_attempts} attempts; last failure: {last}",
        status=last.status,
        attempts=policy.max_attempts,
    ) from None
