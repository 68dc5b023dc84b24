"""A local HTTP server for tests: real sockets on 127.0.0.1, scriptable faults per path.

    with HTTPFixture() as server:
        server.add("/a.txt", b"hello", fail_times=2)           # two 500s, then the body
        server.add("/b.txt", data, drop_after=1000)             # cut the first response short
        fetch(server.url("/a.txt")); assert server.count("/a.txt") == 3

or use the `http_server` pytest fixture. Every request is recorded (path, headers, monotonic
arrival time) so tests can assert what the client sent and how long it waited between tries.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

_RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


@dataclass
class Route:
    """What one path serves, and how it misbehaves. Counters are updated by the server."""

    body: bytes
    fail_times: int = 0  # answer the first N requests with `fail_status` and no body
    fail_status: int = 500
    retry_after: str | None = None  # Retry-After header sent with those failures
    status: int = 200  # a permanent status (e.g. 404) instead of the body
    drop_after: int | None = None  # close the connection after this many body bytes...
    drop_times: int = 1  # ...on this many of the responses that carry a body
    honour_range: bool = True  # False: ignore Range, always 200 with the whole body
    serve: bytes | None = None  # bytes actually sent instead of `body` (corruption, wrong size)
    close_delimited: bool = False  # no Content-Length; the end of the body is the close
    chunk_size: int = 16 * 1024
    chunk_delay: float = 0.0  # seconds between chunks, to make transfers overlap
    headers: dict[str, str] = field(default_factory=dict)  # extra response headers
    failures_served: int = 0
    drops_served: int = 0


@dataclass(frozen=True)
class Request:
    path: str
    method: str
    headers: dict[str, str]  # lower-cased names
    time: float  # time.monotonic() when the request line arrived

    @property
    def range(self) -> str | None:
        return self.headers.get("range")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fixture: HTTPFixture

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that hang up (as fetch does on a wrong size) are expected, not test noise.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like real servers; bodies need a length
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        fixture = self.server.fixture
        path = self.path.split("?", 1)[0]
        route = fixture._record(Request(path, "GET", self._headers(), time.monotonic()))
        if route is None:
            self._empty(404)
            return
        with fixture.lock:
            failing = route.failures_served < route.fail_times
            route.failures_served += failing
        if failing:
            extra = {"Retry-After": route.retry_after} if route.retry_after else {}
            self._empty(route.fail_status, extra)
        elif route.status != 200:
            self._empty(route.status)
        else:
            self._serve(route)

    def _headers(self) -> dict[str, str]:
        return {name.lower(): value for name, value in self.headers.items()}

    def _empty(self, status: int, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _slice(self, route: Route, data: bytes) -> tuple[int, bytes, dict[str, str]] | None:
        """Status, body and headers for the request's Range (None: answered with 416)."""
        match = _RANGE.match(self.headers.get("Range", "").strip())
        if not (match and route.honour_range):
            return 200, data, {}
        start = int(match.group(1))
        end = int(match.group(2)) if match.group(2) else len(data) - 1
        if start >= len(data):
            self._empty(416, {"Content-Range": f"bytes */{len(data)}"})
            return None
        end = min(end, len(data) - 1)
        return 206, data[start : end + 1], {"Content-Range": f"bytes {start}-{end}/{len(data)}"}

    def _serve(self, route: Route) -> None:
        data = route.serve if route.serve is not None else route.body
        sliced = self._slice(route, data)
        if sliced is None:
            return
        status, body, extra = sliced
        with self.server.fixture.lock:
            drop = route.drop_after is not None and route.drops_served < route.drop_times
            route.drops_served += drop
        self.send_response(status)
        for name, value in {**extra, **route.headers}.items():
            self.send_header(name, value)
        if route.close_delimited:
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        limit = route.drop_after if drop and route.drop_after is not None else len(body)
        self._write(body[:limit], route)
        if drop or route.close_delimited:
            self._hang_up()

    def _write(self, body: bytes, route: Route) -> None:
        try:
            for start in range(0, len(body), route.chunk_size):
                self.wfile.write(body[start : start + route.chunk_size])
                self.wfile.flush()
                if route.chunk_delay:
                    time.sleep(route.chunk_delay)
        except OSError:  # the client went away mid-body
            self.close_connection = True

    def _hang_up(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):  # the client may have gone already
            self.connection.shutdown(socket.SHUT_RDWR)


class HTTPFixture:
    """A threaded HTTP/1.1 server on 127.0.0.1 with an ephemeral port."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.routes: dict[str, Route] = {}
        self.requests: list[Request] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> HTTPFixture:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fixture = self
        self._server = server
        # A short poll interval keeps stop() (and so each test's teardown) quick.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, name="http-fixture"
        )
        self._thread.daemon = True
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> HTTPFixture:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("server not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def add(self, path: str, body: bytes, **faults: Any) -> Route:
        """Serve `body` at `path` (which starts with '/'); `faults` are Route fields."""
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/': {path!r}")
        route = Route(body, **faults)
        with self.lock:
            self.routes[path] = route
        return route

    def _record(self, request: Request) -> Route | None:
        with self.lock:
            self.requests.append(request)
            return self.routes.get(request.path)

    def requests_for(self, path: str) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.path == path]

    def count(self, path: str | None = None) -> int:
        """Requests received for `path`, or for all paths."""
        with self.lock:
            return sum(1 for r in self.requests if path is None or r.path == path)


@pytest.fixture
def http_server() -> Iterator[HTTPFixture]:
    with HTTPFixture() as server:
        yield server
