"""Endpoint plumbing every model-backed role shares (target `chat`, simulator and judge `llm`).

A role's params section names its endpoint; `run.*` holds the client settings. The usage sum
turns several completions into the transcript's Usage shape.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import AsyncGenerator, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.fileio import canonical_json
from agenteval.llm import BaseChatClient, Completion, Endpoint, make_client
from agenteval.schema.transcript import Usage

ENDPOINT_FIELDS = ("model", "base_url", "api_key_env", "protocol", "params")
# Knobs of the harness that live in `<role>.params` next to request fields; they configure
# retrieval and must never reach the model server, which would reject unknown fields.
HARNESS_KNOBS = frozenset({"chunk_size", "top_k", "abstain_threshold"})
DEFAULT_CACHE_DIR = ".cache/agenteval/llm"


def endpoint_from(section: Mapping[str, Any], role: str) -> Endpoint:
    """The Endpoint described by a params section (`target`, `simulator` or `judge`)."""
    fields = {name: section[name] for name in ENDPOINT_FIELDS if section.get(name) is not None}
    if not fields.get("model"):
        raise ValueError(f"{role}.model is required for {role}.kind={section.get('kind')!r}")
    if not fields.get("base_url"):
        # No default host: a request goes only where the user said (llm.endpoint's defaults
        # are the providers' documented hosts, never a fallback for a missing setting).
        raise ValueError(f"{role}.base_url is required for {role}.kind={section.get('kind')!r}")
    params = dict(fields.get("params") or {})
    fields["params"] = {k: v for k, v in params.items() if k not in HARNESS_KNOBS}
    return Endpoint.model_validate(fields)


@dataclass(frozen=True)
class EndpointConfig:
    """An endpoint plus the run-wide client settings (`run.*`)."""

    endpoint: Endpoint
    cache_dir: Path | None
    prices: Mapping[str, Any] | None
    concurrency: int
    max_attempts: int
    timeout: float
    estimate_missing_usage: bool

    @classmethod
    def from_params(cls, params: Mapping[str, Any], role: str, root: Path) -> EndpointConfig:
        run = params.get("run") or {}
        raw_cache = run.get("cache_dir", DEFAULT_CACHE_DIR)
        # `run.cache: false`, or an explicit null/empty cache_dir, switches the cache off.
        cached = bool(run.get("cache", True)) and raw_cache
        return cls(
            endpoint=endpoint_from(params.get(role) or {}, role),
            cache_dir=(root / str(raw_cache)) if cached else None,
            prices=run.get("prices") or None,
            concurrency=int(run.get("concurrency", 4)),
            max_attempts=int(run.get("max_attempts", 5)),
            timeout=float(run.get("request_timeout_s", 60.0)),
            estimate_missing_usage=bool(run.get("estimate_missing_usage", False)),
        )

    def open(self) -> BaseChatClient:
        """A new client; the caller closes it. Roles use `client()` instead."""
        return make_client(
            self.endpoint,
            cache_dir=self.cache_dir,
            prices=self.prices,
            concurrency=self.concurrency,
            max_attempts=self.max_attempts,
            timeout=self.timeout,
            estimate_missing_usage=self.estimate_missing_usage,
        )

    async def client(self) -> BaseChatClient:
        """The client for this configuration in the running event loop, shared by callers.

        Building an HTTP client costs tens of milliseconds (TLS context, certificate store),
        far more than the harness's own work per sample, and a shared client also reuses
        connections. It cannot be shared across loops (the pipeline runs inference and
        judging in separate `asyncio.run` calls), so there is one per loop, closed when
        the loop shuts down.
        """
        loop = asyncio.get_running_loop()
        table = _LOOP_CLIENTS.setdefault(loop, {})
        key = self._client_key
        if key not in table:
            client = self.open()
            keeper = _close_with_loop(client, loop, key)
            table[key] = (client, keeper)  # registered before the await: no second client
            await keeper.__anext__()
        return table[key][0]

    @functools.cached_property
    def _client_key(self) -> str:
        # Taken once: every session asks for its client, and the fields never change.
        return canonical_json([self.describe(), str(self.cache_dir), self.prices, self.options()])

    def options(self) -> list[Any]:
        return [self.concurrency, self.max_attempts, self.timeout, self.estimate_missing_usage]

    def describe(self) -> dict[str, Any]:
        """Provenance: which model, where, with which request params; never the key."""
        return {**self.endpoint.describe(), "params": dict(self.endpoint.params)}


_LOOP_CLIENTS: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[str, tuple[BaseChatClient, AsyncGenerator[None, None]]]
] = weakref.WeakKeyDictionary()


async def _close_with_loop(
    client: BaseChatClient, loop: asyncio.AbstractEventLoop, key: str
) -> AsyncGenerator[None, None]:
    # asyncio.run closes every suspended async generator of its loop before closing the loop
    # (shutdown_asyncgens), which makes this parked generator a loop-exit hook.
    try:
        yield
    finally:
        # Drop the entry first: the client references the loop, so a stale entry would keep
        # the closed loop (and the client) alive for the rest of the process.
        table = _LOOP_CLIENTS.get(loop, {})
        table.pop(key, None)
        if not table:
            _LOOP_CLIENTS.pop(loop, None)
        await client.aclose()


def sum_usage(completions: Iterable[Completion]) -> Usage | None:
    """Token and cost totals over several calls, in the transcript's Usage shape.

    The cost is None (n/a) as soon as one call's cost is unknown: a partial sum would read
    as the full price. Estimated token counts are used only when the provider gave none,
    and then the whole total is labelled `estimated`.
    """
    done = list(completions)
    if not done:
        return None
    totals = {
        "input_tokens": 0,
        "output_tokens": 0,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    counted = False
    cost: float | None = 0.0
    sources: set[str] = set()
    for completion in done:
        usage = completion.usage or completion.estimated_usage
        if usage is not None:
            counted = True
            for name in totals:
                totals[name] += int(getattr(usage, name))
        if completion.cost_usd is None or cost is None:
            cost = None
        else:
            cost += completion.cost_usd
        if completion.cost_source:
            sources.add(completion.cost_source)
    source = None
    if cost is not None:
        source = "estimated" if "estimated" in sources else "harness_counts"
    if not counted:
        return Usage(cost_usd=cost, cost_source=source)
    return Usage(**totals, cost_usd=None if cost is None else round(cost, 8), cost_source=source)


# -- the target ---------------------------------------------------------------------------
