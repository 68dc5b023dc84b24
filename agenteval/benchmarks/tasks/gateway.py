"""The model gateway: agents reach their model through it, so no agent process holds a key.

A local HTTP server on 127.0.0.1 speaking OpenAI's `/v1/chat/completions` and Anthropic's
`/v1/messages`. Each request is forwarded to the upstream the run's `target` names
(`target.base_url`, the key read from the variable `target.api_key_env` names), and the reply,
streamed or not, is passed back chunk by chunk. The agent gets the gateway's URL and a dummy
key; whatever credential it sends is dropped (Claude Code sends its own subscription
credential whatever ANTHROPIC_AUTH_TOKEN says), and only an allow-list of request headers
travels on.

On the Anthropic route, system-role entries inside `messages` are rewritten as user entries
in place: the format's system prompt is the top-level `system` field, and some Anthropic-format
servers (Lemonade) silently drop system-role entries inside `messages`, which is where Claude
Code puts each turn's context (working directory, git state). On the OpenAI route a system
entry in `messages` is the format's own system prompt and is left alone.

Every call's token counts, read from the upstream's usage fields (from the SSE events when
streamed), go into a ledger: the `harness_counts` cost source for harnesses behind it. A
call whose upstream reported no usage is recorded as uncounted, never as zero tokens.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.llm.types import Usage

HOST = "127.0.0.1"
DUMMY_KEY = "gateway-holds-the-key"  # what agents are given: not a credential anywhere
OPENAI_ROUTE = "/v1/chat/completions"
ANTHROPIC_ROUTE = "/v1/messages"
# Only these request headers reach the upstream; credentials and cookies never do.
FORWARDED_HEADERS = ("content-type", "accept", "anthropic-version", "anthropic-beta")
TAG_PATTERN = "[A-Za-z0-9_.-]{1,80}"
MAX_REQUEST_BYTES = 32 * 1024 * 1024
MAX_COUNTED_BODY_BYTES = 16 * 1024 * 1024  # a non-streamed reply larger than this is uncounted
CONNECT_TIMEOUT_S = 30.0


class GatewayConfigError(ValueError):
    """The upstream cannot be configured; the message names the key or variable."""


@dataclass(frozen=True)
class Upstream:
    """Where the gateway sends calls. `root` is the base URL without a trailing /v1."""

    root: str
    key: str | None = field(repr=False)  # never printed, logged or written
    key_env: str | None = None
    timeout_s: float = 600.0

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Upstream:
        """From `target.base_url` and `target.api_key_env`; refused naming the key."""
        target = params.get("target") or {}
        base = str(target.get("base_url") or "").strip().rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise GatewayConfigError(
                "target.base_url must name the upstream (http:// or https://) the gateway "
                f"forwards to; got {base or 'nothing'!r}"
            )
        key_env = target.get("api_key_env")
        key = None
        if key_env:
            key = os.environ.get(str(key_env), "").strip()
            if not key:
                raise GatewayConfigError(
                    f"target.api_key_env names {key_env}, which is not set in the environment"
                )
        timeout = float((params.get("run") or {}).get("request_timeout_s", 600.0))
        root = base[: -len("/v1")] if base.endswith("/v1") else base
        return cls(root=root, key=key, key_env=str(key_env) if key_env else None, timeout_s=timeout)

    def headers_for(self, route: str, agent_headers: Mapping[str, str]) -> dict[str, str]:
        """The allow-listed agent headers plus the real credential in the route's own form."""
        headers = {k: v for k, v in agent_headers.items() if k.lower() in FORWARDED_HEADERS}
        if self.key:
            if route == ANTHROPIC_ROUTE:
                headers["x-api-key"] = self.key
            else:
                headers["authorization"] = f"Bearer {self.key}"
        return headers


# -- pure: request rewriting and usage reading ----------------------------------------------
def rewrite_system_entries(body: dict[str, Any]) -> int:
    """Anthropic route: system-role entries inside `messages` become user entries, in place."""
    rewritten = 0
    for entry in body.get("messages") or []:
        if isinstance(entry, dict) and entry.get("role") == "system":
            entry["role"] = "user"
            rewritten += 1
    return rewritten


def _int(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def openai_usage(usage: Any) -> Usage | None:
    """OpenAI counts cached tokens inside prompt_tokens; the ledger keeps them apart."""
    if not isinstance(usage, dict):
        return None
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Usage(
        input_tokens=max(_int(usage.get("prompt_tokens")) - cached, 0),
        output_tokens=_int(usage.get("completion_tokens")),
        cache_read_tokens=cached,
    )


def anthropic_usage(usage: Any) -> Usage | None:
    if not isinstance(usage, dict):
        return None
    return Usage(
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=_int(usage.get("cache_read_input_tokens")),
        cache_write_tokens=_int(usage.get("cache_creation_input_tokens")),
    )


class UsageReader:
    """Reads one reply's usage as its bytes pass through, streamed (SSE) or whole (JSON)."""

    def __init__(self, route: str, streamed: bool) -> None:
        self.route = route
        self.streamed = streamed
        self.usage: Usage | None = None
        self._pending = b""
        self._body = bytearray()
        self._overflow = False

    def feed(self, chunk: bytes) -> None:
        if not self.streamed:
            if len(self._body) + len(chunk) > MAX_COUNTED_BODY_BYTES:
                self._overflow = True
            elif not self._overflow:
                self._body += chunk
            return
        lines = (self._pending + chunk).split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            self._event_line(line.strip())

    def finish(self) -> Usage | None:
        if self.streamed:
            self._event_line(self._pending.strip())
        elif not self._overflow:
            with contextlib.suppress(ValueError):
                reply = json.loads(self._body)
                if isinstance(reply, dict):
                    read = anthropic_usage if self.route == ANTHROPIC_ROUTE else openai_usage
                    self.usage = read(reply.get("usage"))
        return self.usage

    def _event_line(self, line: bytes) -> None:
        if not line.startswith(b"data:"):
            return
        try:
            event = json.loads(line[len(b"data:") :])
        except ValueError:
            return  # "[DONE]" and keep-alives
        if not isinstance(event, dict):
            return
        if self.route == OPENAI_ROUTE:
            usage = openai_usage(event.get("usage"))
            if usage is not None:
                self.usage = usage
            return
        self._anthropic_event(event)

    def _anthropic_event(self, event: dict[str, Any]) -> None:
        # message_start carries the input side; message_delta the running output count
        # (newer servers repeat the input side there too).
        message = event.get("message")
        found = anthropic_usage(
            message.get("usage") if isinstance(message, dict) else event.get("usage")
        )
        if found is None:
            return
        current = self.usage or Usage()
        self.usage = Usage(
            input_tokens=found.input_tokens or current.input_tokens,
            output_tokens=max(found.output_tokens, current.output_tokens),
            cache_read_tokens=found.cache_read_tokens or current.cache_read_tokens,
            cache_write_tokens=found.cache_write_tokens or current.cache_write_tokens,
        )


# -- the ledger: the harness_counts cost source ---------------------------------------------
@dataclass
class GatewayCall:
    route: str
    model: str | None
    status: int
    streamed: bool
    usage: Usage | None  # None: the upstream reported no usage (uncounted, not zero)
    tag: str | None = None  # the attempt whose base URL carried it

    def record(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "route": self.route,
            "model": self.model,
            "status": self.status,
            "streamed": self.streamed,
            "counted": self.usage is not None and not self.usage.is_empty(),
            "usage": self.usage.model_dump() if self.usage is not None else None,
        }


class Ledger:
    """Every call through the gateway, kept in memory and appended to `path` (JSON lines).

    What is written is the route, model, status and token counts: never a header or body.
    """

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self.calls: list[GatewayCall] = []
        self._lock = threading.Lock()

    def add(self, call: GatewayCall) -> None:
        with self._lock:
            self.calls.append(call)
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with self.path.open("a", encoding="utf-8") as out:
                    out.write(json.dumps(call.record(), sort_keys=True) + "\n")

    def tagged(self, tag: str | None) -> list[GatewayCall]:
        with self._lock:
            return [c for c in self.calls if tag is None or c.tag == tag]

    def total(self, tag: str | None = None) -> Usage:
        """The counted calls' tokens summed (empty when nothing was counted: n/a, not $0)."""
        counted = [c.usage for c in self.tagged(tag) if c.usage is not None]
        return Usage(
            input_tokens=sum(u.input_tokens for u in counted),
            output_tokens=sum(u.output_tokens for u in counted),
            cache_read_tokens=sum(u.cache_read_tokens for u in counted),
            cache_write_tokens=sum(u.cache_write_tokens for u in counted),
        )

    def uncounted(self, tag: str | None = None) -> int:
        return sum(1 for c in self.tagged(tag) if c.usage is None or c.usage.is_empty())


# -- the server (aiohttp, imported lazily: the CLI starts fast) ------------------------------
def _error(status: int, message: str) -> Any:
    from aiohttp import web

    body = {"type": "error", "error": {"type": "gateway_error", "message": message}}
    return web.json_response(body, status=status)


class Gateway:
    """The gateway's request handling; `running_gateway` and `serve_foreground` host it."""

    def __init__(self, upstream: Upstream, ledger: Ledger) -> None:
        self.upstream = upstream
        self.ledger = ledger
        self._session: Any = None

    def app(self) -> Any:
        from aiohttp import web

        app = web.Application(client_max_size=MAX_REQUEST_BYTES)
        for route in (OPENAI_ROUTE, ANTHROPIC_ROUTE):
            app.router.add_post(route, self.forward)
            # /t/<tag>/v1/...: an attempt's own base URL, so its calls are counted apart
            app.router.add_post(f"/t/{{tag:{TAG_PATTERN}}}{route}", self.forward)
        app.on_cleanup.append(self._close)
        return app

    async def _close(self, _app: Any) -> None:
        if self._session is not None:
            await self._session.close()

    def _client(self) -> Any:
        import aiohttp

        if self._session is None:
            timeout = aiohttp.ClientTimeout(
                total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=self.upstream.timeout_s
            )
            self._session = aiohttp.ClientSession(timeout=timeout, auto_decompress=False)
        return self._session

    async def forward(self, request: Any) -> Any:
        import aiohttp

        tag = request.match_info.get("tag")
        route = OPENAI_ROUTE if request.path.endswith(OPENAI_ROUTE) else ANTHROPIC_ROUTE
        try:
            body = json.loads(await request.read())
        except ValueError:
            return _error(400, "the request body is not JSON")
        if not isinstance(body, dict):
            return _error(400, "the request body must be a JSON object")
        if route == ANTHROPIC_ROUTE:
            rewrite_system_entries(body)
        streamed = body.get("stream") is True
        model = body.get("model") if isinstance(body.get("model"), str) else None
        headers = self.upstream.headers_for(route, request.headers)
        headers["content-type"] = "application/json"
        try:
            async with self._client().post(
                self.upstream.root + route, data=json.dumps(body).encode(), headers=headers
            ) as reply:
                return await self._relay(
                    request, reply, GatewayCall(route, model, 0, streamed, None, tag)
                )
        except (aiohttp.ClientError, TimeoutError) as exc:
            # The exception names the URL at most, never a header: no key in the message.
            self.ledger.add(GatewayCall(route, model, 502, streamed, None, tag))
            return _error(502, f"upstream unreachable: {type(exc).__name__}")

    async def _relay(self, request: Any, reply: Any, call: GatewayCall) -> Any:
        from aiohttp import web

        out = web.StreamResponse(status=reply.status)
        for name in ("content-type", "content-encoding", "cache-control"):
            if name in reply.headers:
                out.headers[name] = reply.headers[name]
        await out.prepare(request)
        reader = UsageReader(call.route, call.streamed)
        async for chunk in reply.content.iter_any():
            reader.feed(chunk)
            await out.write(chunk)
        await out.write_eof()
        call.status = reply.status
        call.usage = reader.finish() if reply.status == 200 else None
        self.ledger.add(call)
        return out


class RunningGateway:
    """A gateway serving on a background thread; `url` is what agents are given."""

    def __init__(self, gateway: Gateway, port: int = 0) -> None:
        self.gateway = gateway
        self.port = port
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._runner: Any = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _start(self) -> int:
        from aiohttp import web

        self._runner = web.AppRunner(self.gateway.app(), access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, HOST, self.port)
        await site.start()
        return int(self._runner.addresses[0][1])  # the port bound (0: any free)

    def start(self) -> RunningGateway:
        self._thread.start()
        bound = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        self.url = f"http://{HOST}:{bound}"
        return self

    def stop(self) -> None:
        if self._runner is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
            self._runner = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()


# The gateways this process runs, by URL: harnesses are built from params, so they find
# their attempt's calls in the ledger of the gateway the URL names (none for an outside one).
_RUNNING: dict[str, Ledger] = {}


@contextlib.contextmanager
def running_gateway(
    upstream: Upstream, ledger: Ledger | None = None, port: int = 0
) -> Iterator[RunningGateway]:
    """A gateway on 127.0.0.1 for the duration of the block (port 0: any free port)."""
    running = RunningGateway(Gateway(upstream, ledger or Ledger()), port)
    try:
        running.start()
        _RUNNING[running.url] = running.gateway.ledger
        yield running
    finally:
        _RUNNING.pop(running.url, None)
        running.stop()


def ledger_at(gateway_url: str) -> Ledger | None:
    """The ledger of a gateway this process runs at that URL; None for one run elsewhere."""
    return _RUNNING.get(gateway_url.rstrip("/"))


def needs_gateway(params: Mapping[str, Any]) -> bool:
    """A chat or Claude Code run whose target names an upstream and no gateway of its own."""
    section = params.get("tasks") or {}
    if section.get("harness") not in ("chat", "claude-code") or section.get("gateway_url"):
        return False
    return bool((params.get("target") or {}).get("base_url"))


@contextlib.contextmanager
def gateway_for_run(params: dict[str, Any], ledger_path: Path) -> Iterator[dict[str, Any]]:
    """The run's params with `tasks.gateway_url` naming the gateway its agents use: one
    started here for the run when none is named (GatewayConfigError before any work)."""
    if not needs_gateway(params):
        yield params
        return
    with running_gateway(Upstream.from_params(params), Ledger(ledger_path)) as gateway:
        yield {**params, "tasks": {**(params.get("tasks") or {}), "gateway_url": gateway.url}}


def agent_endpoint(gateway_url: str, protocol: str, tag: str | None = None) -> tuple[str, str]:
    """(base_url, key) an agent is given: the gateway's URL in its protocol's form (tagged
    with its attempt when given), and a dummy key."""
    base = gateway_url.rstrip("/") + (f"/t/{tag}" if tag else "")
    return (f"{base}/v1" if protocol == "openai" else base), DUMMY_KEY
