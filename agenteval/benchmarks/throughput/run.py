"""The sweep: every email streamed to an endpoint at each concurrency level, repeated.

A level runs `level` workers that each take the next email and stream it, so at most that
many requests are in flight and none waits in a queue of ours. Each level sends every email
ceil(level / emails) times, so the pool is full at levels above the workload's size. A fresh
client (its own connections and its own in-flight bound) serves each repeat of each level.
Before the sweep, `warmup` requests go to the endpoint one at a time and are thrown away: a
server's first requests pay for loading, compiling and caching that later ones do not.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from agenteval.benchmarks.throughput.loopback import LOOPBACK_MODEL, Script, loopback_server
from agenteval.benchmarks.throughput.metrics import RequestRecord
from agenteval.benchmarks.throughput.settings import ThroughputEndpoint
from agenteval.benchmarks.throughput.tokens import Tokenizer, count_output
from agenteval.benchmarks.throughput.workload import Workload, messages_for, read_label
from agenteval.fileio import sha256_file
from agenteval.llm import Endpoint, EndpointLimits, LLMError, QuotaExhausted, make_client
from agenteval.llm.base import BaseChatClient

LAG_TICK_S = 0.005


@dataclass(frozen=True)
class Settings:
    concurrency: list[int]
    repeats: int
    warmup: int
    max_tokens: int
    temperature: float
    timeout_s: float
    max_attempts: int


@dataclass(frozen=True)
class Target:
    """An endpoint being measured and what identifies it for the gate."""

    name: str
    endpoint: Endpoint
    identity: dict[str, Any]


@contextlib.contextmanager
def open_target(spec: ThroughputEndpoint, settings: Settings) -> Iterator[Target]:
    """Start what the spec needs (the scripted loopback or the local model) and describe it."""
    kind, name = spec.kind, spec.name
    params = {"max_tokens": settings.max_tokens, "temperature": settings.temperature}
    if kind == "loopback":
        script = Script(**(spec.script.model_dump() if spec.script else {}))
        protocol = spec.protocol or "openai"
        with loopback_server(script) as url:
            base = f"{url}/v1" if protocol == "openai" else url
            endpoint = Endpoint(model=LOOPBACK_MODEL, base_url=base, protocol=protocol,
                                params=params)  # fmt: skip
            script_id = {k: getattr(script, k) for k in script.__dataclass_fields__}
            identity = {"kind": kind, "protocol": protocol, "model": LOOPBACK_MODEL,
                        "script": script_id}  # fmt: skip
            yield Target(name, endpoint, identity)
    elif kind == "local":
        from agenteval.serve.local import DEFAULT_ALIAS, find_model_file, local_server

        weights = find_model_file()
        with local_server(model_alias=DEFAULT_ALIAS) as url:
            endpoint = Endpoint(model=DEFAULT_ALIAS, base_url=url, params=params)
            weights_id = f"{weights.name} sha256:{sha256_file(weights)[:16]}"
            identity = {"kind": kind, "protocol": "openai", "model": DEFAULT_ALIAS,
                        "weights": weights_id}  # fmt: skip
            yield Target(name, endpoint, identity)
    else:
        endpoint = Endpoint(
            model=str(spec.model), base_url=spec.base_url, protocol=spec.protocol or "openai",
            api_key_env=spec.api_key_env, params=params,
        )  # fmt: skip
        yield Target(name, endpoint, {"kind": "url", **endpoint.describe()})


def _client(target: Target, settings: Settings, level: int) -> BaseChatClient:
    return make_client(
        target.endpoint,
        concurrency=level,
        limits=EndpointLimits(),  # this level's bound only: never another level's
        max_attempts=settings.max_attempts,
        backoff_base=0.1,
        timeout=settings.timeout_s,
    )


async def _one(
    client: BaseChatClient, target: Target, email: Any, workload: Workload,
    tokenizer: Tokenizer | None, where: tuple[int, int],
) -> RequestRecord:  # fmt: skip
    sent = time.perf_counter()
    try:
        reply = await client.stream(messages_for(email, workload.prompt))
    except QuotaExhausted:
        raise
    except LLMError as exc:
        done = time.perf_counter()
        return RequestRecord(
            target.name, where[0], where[1], email.id, email.label, sent, done, None,
            (done - sent) * 1000, None, "none", exc.attempts, str(exc)[:300], None, "",
        )  # fmt: skip
    usage = reply.usage.output_tokens if reply.usage else None
    counted = count_output(usage, reply.text, tokenizer)
    first = reply.first_token_at
    return RequestRecord(
        target.name, where[0], where[1], email.id, email.label, sent, reply.done_at,
        (first - sent) * 1000 if first is not None else None, (reply.done_at - sent) * 1000,
        counted.tokens, counted.source, reply.attempts, None, read_label(reply.text),
        reply.text,
    )  # fmt: skip


async def run_level(
    target: Target, workload: Workload, settings: Settings, tokenizer: Tokenizer | None,
    level: int, repeat: int,
) -> tuple[list[RequestRecord], list[float]]:  # fmt: skip
    """The records of one repeat of one level, and the event loop's lag (ms) through it."""
    rounds = math.ceil(level / len(workload.emails))
    queue = deque(email for _ in range(rounds) for email in workload.emails)
    records: list[RequestRecord] = []
    client = _client(target, settings, level)

    async def worker() -> None:
        while queue:
            email = queue.popleft()
            records.append(await _one(client, target, email, workload, tokenizer, (level, repeat)))

    lags: list[float] = []
    watch = asyncio.create_task(_watch_loop(lags))
    try:
        await asyncio.gather(*(worker() for _ in range(level)))
    finally:
        watch.cancel()
        await client.aclose()
    return records, lags


async def _watch_loop(lags: list[float]) -> None:
    """How late this event loop wakes from a short sleep, all through a level: when it is
    late the client reads tokens late too, and what it times is itself, not the endpoint."""
    while True:
        start = time.perf_counter()
        await asyncio.sleep(LAG_TICK_S)
        lags.append((time.perf_counter() - start - LAG_TICK_S) * 1000.0)


async def warm_up(target: Target, workload: Workload, settings: Settings) -> int:
    """Send the first `warmup` emails one at a time; their figures are discarded."""
    client = _client(target, settings, 1)
    try:
        for email in workload.emails[: settings.warmup]:
            await _one(client, target, email, workload, None, (0, -1))
    finally:
        await client.aclose()
    return min(settings.warmup, len(workload.emails))


@dataclass
class SweepRun:
    warmed: int
    records: list[RequestRecord]
    loop_lag_ms: dict[tuple[int, int], list[float]]  # (level, repeat) -> lag samples


async def sweep(
    target: Target, workload: Workload, settings: Settings, tokenizer: Tokenizer | None
) -> SweepRun:
    run = SweepRun(await warm_up(target, workload, settings), [], {})
    for level in settings.concurrency:
        for repeat in range(settings.repeats):
            records, lags = await run_level(target, workload, settings, tokenizer, level, repeat)
            run.records += records
            run.loop_lag_ms[level, repeat] = lags
    return run
