"""Machinery shared by the fake LLM servers: a real HTTP server on 127.0.0.1 in a thread.

A server answers from a script (a queue of replies and faults), then from an optional
reply function, then with a default "ok" reply. It records every request (headers and raw
body) and the peak number of requests in flight, so tests can check retries, concurrency
bounds and where credentials travelled.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

# Long enough for any test, short enough that a forgotten gate cannot hang the suite.
GATE_TIMEOUT_S = 30.0


@dataclass
class Call:
    """A tool call the fake model makes; `arguments` as a str is sent verbatim."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


def default_usage() -> dict[str, int]:
    return {"input": 12, "output": 7}


@dataclass
class Reply:
    """A successful model reply, rendered in the server's wire format.

    `usage` keys: input (uncached), output, cache_read, cache_write; None omits usage.
    """

    text: str = "ok"
    tool_calls: list[Call] = field(default_factory=list)
    usage: dict[str, int] | None = field(default_factory=default_usage)
    finish_reason: str | None = None
    model: str | None = None
    delay: float = 0.0


@dataclass
class Raw:
    """An HTTP answer sent exactly as given (faults, malformed bodies)."""

    status: int
    body: Any = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Drop:
    """Close the connection without answering, as a server or proxy dying mid-request."""


Action = Reply | Raw | Drop
ReplyFn = Callable[[Any], Action]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: str

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def rate_limited(retry_after: str | None = "0") -> Raw:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    body = {"error": {"type": "rate_limit_error", "message": "slow down (test server)"}}
    return Raw(429, body, headers)


def server_error(status: int = 500) -> Raw:
    return Raw(status, {"error": {"type": "server_error", "message": "boom (test server)"}})


def malformed_body() -> Raw:
    """A 200 whose body is not JSON, as a broken proxy might send."""
    return Raw(200, "<html>this is not json")


def malformed_json_text() -> Reply:
    """A well-formed reply whose text is truncated JSON, for judge-parsing tests."""
    return Reply(text='{"verdict": "A", "reason": "the answer matches')


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean

    def do_POST(self) -> None:
        self.server.fake.handle(self)

    def do_GET(self) -> None:
        self.server.fake.handle(self)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeLLMServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients that time out and hang up are expected in fault tests


class FakeLLMServer:
    """Base class; subclasses render replies and errors in one provider's wire format."""

    def __init__(
        self,
        script: Iterable[Action] = (),
        *,
        reply_fn: ReplyFn | None = None,
        api_key: str | None = None,
    ) -> None:
        self.script: deque[Action] = deque(script)
        self.reply_fn = reply_fn
        self.api_key = api_key
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        # When set to an Event, every request waits for it before answering.
        self.gate: threading.Event | None = None
        self._lock = threading.Lock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ----- protocol hooks -------------------------------------------------------------
    def route_ok(self, method: str, path: str) -> bool:
        raise NotImplementedError

    def check_request(self, request: RecordedRequest) -> Raw | None:
        """A rejection (auth, malformed request) or None to proceed."""
        raise NotImplementedError

    def render(self, reply: Reply, request: Any) -> dict[str, Any]:
        raise NotImplementedError

    # ----- lifecycle ------------------------------------------------------------------
    def start(self) -> Self:
        httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
        httpd.fake = self
        self._httpd = httpd
        # A short poll interval keeps stop() (which waits for the next poll) fast.
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self.gate is not None:
            self.gate.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """What an Endpoint's base_url should be for this server."""
        raise NotImplementedError

    @property
    def url(self) -> str:
        assert self._httpd is not None, "server not started"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    # ----- scripting and inspection ---------------------------------------------------
    def push(self, *actions: Action) -> None:
        with self._lock:
            self.script.extend(actions)

    @property
    def request_count(self) -> int:
        with self._lock:
            return len(self.requests)

    def _next_action(self, request: RecordedRequest) -> Action:
        with self._lock:
            if self.script:
                return self.script.popleft()
        if self.reply_fn is not None:
            return self.reply_fn(request.json)
        return Reply()

    # ----- request handling (runs on server threads) ----------------------------------
    def handle(self, handler: _Handler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        body = handler.rfile.read(length).decode("utf-8") if length else ""
        headers = {k.lower(): v for k, v in handler.headers.items()}
        request = RecordedRequest(handler.command, handler.path, headers, body)
        with self._lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            answer = self._answer(request)
        finally:
            # Leave the in-flight count before the client can see the answer, otherwise
            # its next request could overlap this one in the count and fake a violation.
            with self._lock:
                self.in_flight -= 1
        if answer is None:  # Drop: the socket closes with nothing sent
            handler.close_connection = True
            return
        self._write(handler, *answer)

    def _answer(self, request: RecordedRequest) -> tuple[int, bytes, dict[str, str]] | None:
        if not self.route_ok(request.method, request.path):
            return 404, b'{"error": {"type": "not_found_error", "message": "no route"}}', {}
        action: Action | None = self.check_request(request)
        if action is None:
            action = self._next_action(request)
        if isinstance(action, Drop):
            return None
        if action.delay:
            time.sleep(action.delay)
        gate = self.gate
        if gate is not None:
            gate.wait(GATE_TIMEOUT_S)
        if isinstance(action, Raw):
            body = action.body
            text = body if isinstance(body, str) else json.dumps(body)
            return action.status, text.encode("utf-8"), dict(action.headers)
        payload = self.render(action, request.json)
        return 200, json.dumps(payload).encode("utf-8"), {}

    @staticmethod
    def _write(handler: _Handler, status: int, payload: bytes, headers: dict[str, str]) -> None:
        try:
            handler.send_response(status)
            if "content-type" not in {name.lower() for name in headers}:
                handler.send_header("content-type", "application/json")  # Raw may name its own
            handler.send_header("content-length", str(len(payload)))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout tests)
