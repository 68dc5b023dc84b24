"""What the workers of one Ray run share: a coordinator and one limiter actor per endpoint.

The classes are plain Python (Ray is imported lazily by whoever makes actors of them). The
coordinator is created by the driver and lives as long as the run; it creates each
endpoint's limiter on first use, so the limiters die with it. A slot is a lease the holder
renews while its request is in flight; a worker that dies stops renewing and its slot
returns to the pool after LEASE_S, so a lost worker never shrinks the bound for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from agenteval.llm.limits import LimitKey

LEASE_S = 30.0  # a dead holder's slot is free again after this long
RENEW_S = 10.0  # live holders renew this often (well inside the lease)


class EndpointLimiter:
    """At most `limit` slots held at once, for every process of the run (a Ray actor)."""

    def __init__(self, limit: int, lease_s: float = LEASE_S) -> None:
        self.limit, self.lease_s = max(1, limit), lease_s
        self.leases: dict[int, float] = {}  # lease id -> when it expires (monotonic)
        self.ids = itertools.count(1)
        self.changed = asyncio.Condition()
        self.peak = self.granted = self.reclaimed = 0

    def _expire(self) -> float | None:
        """Drop expired leases; seconds until the next one expires (None: no lease held)."""
        now = time.monotonic()
        for lease, until in list(self.leases.items()):
            if until <= now:
                del self.leases[lease]
                self.reclaimed += 1
        return min(self.leases.values()) - now if self.leases else None

    async def acquire(self) -> int:
        async with self.changed:
            while True:
                wait = self._expire()
                if len(self.leases) < self.limit:
                    break
                # Woken by a release, or when the next lease runs out.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), timeout=wait)
            lease = next(self.ids)
            self.leases[lease] = time.monotonic() + self.lease_s
            self.granted += 1
            self.peak = max(self.peak, len(self.leases))
            return lease

    async def renew(self, lease: int) -> bool:
        if lease not in self.leases:
            return False
        self.leases[lease] = time.monotonic() + self.lease_s
        return True

    async def release(self, lease: int) -> None:
        async with self.changed:
            self.leases.pop(lease, None)
            self.changed.notify()

    async def stats(self) -> dict[str, int]:
        self._expire()
        return {
            "limit": self.limit,
            "held": len(self.leases),
            "peak": self.peak,
            "granted": self.granted,
            "reclaimed": self.reclaimed,
        }


class RunCoordinator:
    """One per run (a Ray actor owned by the driver): the endpoints' limiters, the run's
    spending across workers, and every attempt at every unit."""

    def __init__(self, lease_s: float = LEASE_S) -> None:
        self.lease_s = lease_s
        self.limiters: dict[LimitKey, Any] = {}
        self.spent_usd = 0.0
        self.attempts: Counter[str] = Counter()
        self.workers: set[tuple[str, int]] = set()

    def limiter(self, key: tuple[str, str, str], limit: int) -> Any:
        """The endpoint's limiter actor; the first bound asked for wins (as in-process)."""
        import ray

        endpoint: LimitKey = (key[0], key[1], key[2])
        found = self.limiters.get(endpoint)
        if found is None:
            actor = ray.remote(num_cpus=0)(EndpointLimiter)
            found = self.limiters[endpoint] = actor.remote(limit, self.lease_s)
        return found

    def add_spent(self, cost: float) -> float:
        self.spent_usd += cost
        return self.spent_usd

    def begin(self, unit: str, node: str, pid: int, attempt: int | None = None) -> int:
        """A worker starts `unit`, Ray's `attempt` of it (0 first); how many times it has
        been started: counted here, or more where Ray knows of attempts that died earlier."""
        self.attempts[unit] = max(self.attempts[unit] + 1, (attempt or 0) + 1)
        self.workers.add((node, pid))
        return self.attempts[unit]

    def report(self) -> dict[str, Any]:
        return {
            "attempts": dict(self.attempts),
            "workers": sorted(self.workers),
            "spent_usd": self.spent_usd,
        }

    def limiter_stats(self) -> dict[str, Any]:
        import ray

        keys = list(self.limiters)
        found = ray.get([self.limiters[k].stats.remote() for k in keys])
        return {" ".join(k): stats for k, stats in zip(keys, found, strict=True)}


class RaySlots:
    """`llm.limits.SharedSlots` over the run's limiter actors (installed in each worker)."""

    def __init__(self, coordinator: Any, renew_s: float = RENEW_S) -> None:
        self.coordinator, self.renew_s = coordinator, renew_s
        self.limiters: dict[LimitKey, Any] = {}

    @asynccontextmanager
    async def slot(self, key: LimitKey, limit: int) -> AsyncIterator[None]:
        limiter = self.limiters.get(key)
        if limiter is None:
            limiter = self.limiters[key] = await self.coordinator.limiter.remote(key, limit)
        lease = await limiter.acquire.remote()
        renewing = asyncio.create_task(self._renew(limiter, lease))
        try:
            yield
        finally:
            renewing.cancel()
            # Sent, not awaited: a cancelled request (a timeout) still gives its slot back,
            # and Ray delivers one caller's calls to an actor in order.
            limiter.release.remote(lease)

    async def _renew(self, limiter: Any, lease: int) -> None:
        while True:
            await asyncio.sleep(self.renew_s)
            await limiter.renew.remote(lease)
