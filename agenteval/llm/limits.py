"""Per-endpoint bound on requests in flight.

Several roles (agent, user simulator, judge) may share one endpoint, each through its own
client; the bound is keyed by the endpoint, not the client, so `run.concurrency` limits
what the server sees no matter how many clients point at it. When units run in several
processes (`run.executor: ray`), each worker process `share`s the bound with the others:
every slot is then taken from one limiter per endpoint for the whole run.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

LimitKey = tuple[str, str, str]  # (protocol, base_url, model)


class SharedSlots(Protocol):
    """Slots of a bound that holds across processes (see agenteval.executors)."""

    def slot(self, key: LimitKey, limit: int) -> AbstractAsyncContextManager[None]: ...


class EndpointLimits:
    """Registry of semaphores keyed by (protocol, base_url, model).

    asyncio primitives are bound to the event loop that first waits on them, so the
    registry is kept per loop; a test suite or CLI that runs several loops gets fresh ones.
    The first bound registered for a key in a loop wins: the run configures one
    concurrency per endpoint, and silently resizing a semaphore other tasks are already
    waiting on would break the guarantee.
    """

    def __init__(self) -> None:
        self._by_loop: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, dict[LimitKey, tuple[int, asyncio.Semaphore]]
        ] = weakref.WeakKeyDictionary()
        self.shared: SharedSlots | None = None

    def share(self, shared: SharedSlots | None) -> None:
        """Take every slot from `shared` (None: from this process's semaphores again)."""
        self.shared = shared

    def semaphore(self, key: LimitKey, limit: int) -> asyncio.Semaphore:
        if limit < 1:
            raise ValueError("concurrency must be at least 1")
        loop = asyncio.get_running_loop()
        table = self._by_loop.setdefault(loop, {})
        if key not in table:
            table[key] = (limit, asyncio.Semaphore(limit))
        return table[key][1]

    def limit_for(self, key: LimitKey) -> int | None:
        """The bound in force for `key` in the running loop, if any."""
        table = self._by_loop.get(asyncio.get_running_loop(), {})
        entry = table.get(key)
        return entry[0] if entry else None

    @asynccontextmanager
    async def slot(self, key: LimitKey, limit: int) -> AsyncIterator[None]:
        if limit < 1:
            raise ValueError("concurrency must be at least 1")
        if self.shared is not None:
            async with self.shared.slot(key, limit):
                yield
            return
        async with self.semaphore(key, limit):
            yield


# Shared by every client created through make_client.
GLOBAL_LIMITS = EndpointLimits()
