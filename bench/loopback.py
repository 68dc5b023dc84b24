"""A loopback OpenAI-compatible endpoint for benchmarks: fixed latency, its own process.

    python bench/loopback.py --latency 0.05 [--tools]     prints its port, serves until killed

POST /v1/chat/completions answers after `latency` seconds, or after a latency drawn from a
lognormal distribution (`--median 1 --p95 4`); a request with `"stream": true` is answered
as server-sent events, its first chunk at a fifth of the latency. With --tools, a request that
offers tools and whose last message is not a tool result gets one `query_documents` call
back; every other request gets a plain text answer with usage. So a single-turn scenario
through the chat target makes two requests (call, then answer) and a request without tools
(a peer harness) makes one. GET /stats returns the requests served, TCP connections and the
server's own CPU time, so a benchmark can check what was sent and that the server was not
the bottleneck. HTTP/1.1 keep-alive; one asyncio protocol per connection; 127.0.0.1 only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import random
import subprocess
import sys
import time
import urllib.request
from typing import Any

MODEL = "bench-model"
REPLY_TEXT = "The opening hours are 9:00 to 17:00 on weekdays."
USAGE = {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132}


def completion(message: dict[str, Any], finish: str) -> bytes:
    body = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": USAGE,
    }
    return http_response(json.dumps(body).encode())


def http_response(payload: bytes) -> bytes:
    head = (
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\nconnection: keep-alive\r\n\r\n"
    )
    return head.encode() + payload


TEXT_REPLY = completion({"role": "assistant", "content": REPLY_TEXT}, "stop")


def tool_reply(query: str) -> bytes:
    call = {
        "id": "call_bench",
        "type": "function",
        "function": {"name": "query_documents", "arguments": json.dumps({"query": query})},
    }
    return completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")


def answer_for(body: bytes, tools: bool) -> bytes:
    """A tool call for a fresh user message when tools are offered, else the text reply."""
    if not tools:
        return TEXT_REPLY
    request = json.loads(body or b"{}")
    messages = request.get("messages") or [{}]
    last = messages[-1]
    if request.get("tools") and last.get("role") == "user":
        return tool_reply(str(last.get("content") or "")[:200])
    return TEXT_REPLY


class Stats:
    served = 0
    connections_made = 0
    open_connections = 0
    peak_connections = 0

    @classmethod
    def as_dict(cls) -> dict[str, Any]:
        return {
            "served": cls.served,
            "connections_made": cls.connections_made,
            "peak_connections": cls.peak_connections,
            "cpu_s": time.process_time(),
            "latency_s": sum(LATENCY.by_conversation.values()),
            "longest_conversation_s": max(LATENCY.by_conversation.values(), default=0.0),
            "conversations": len(LATENCY.by_conversation),
        }


class Latency:
    """Each request's latency: fixed, or drawn from a lognormal distribution (median and
    95th percentile given, seeded); every draw is recorded per conversation, keyed by the
    request's first user message, so a benchmark computes its physical limit from the
    latencies actually served."""

    def __init__(self, fixed: float, median: float = 0.0, p95: float = 0.0, seed: int = 0):
        self.fixed, self.median, self.p95 = fixed, median, p95
        self.random = random.Random(seed)
        self.by_conversation: dict[str, float] = {}

    def draw(self, body: bytes) -> float:
        if not self.median:
            return self.fixed
        sigma = math.log(self.p95 / self.median) / 1.6448536269514722  # z of 0.95
        value = self.random.lognormvariate(math.log(self.median), sigma)
        key = first_user_message(body)
        self.by_conversation[key] = self.by_conversation.get(key, 0.0) + value
        return value


def first_user_message(body: bytes) -> str:
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        for message in json.loads(body or b"{}").get("messages") or []:
            if message.get("role") == "user":
                return str(message.get("content"))[:200]
    return ""


LATENCY = Latency(0.05)


def stream_parts(reply: bytes) -> list[bytes]:
    """A whole chat.completion as server-sent chunks (headers, a first delta with the
    text's first word, the rest, usage, [DONE]): what a streaming endpoint sends."""
    body = json.loads(reply.split(b"\r\n\r\n", 1)[1])
    message = body["choices"][0]["message"]
    text = message.get("content") or ""
    head, _, rest = text.partition(" ")
    base = {"id": body["id"], "object": "chat.completion.chunk", "created": 0, "model": MODEL}
    deltas: list[dict[str, Any]] = [{"role": "assistant", "content": head}, {"content": " " + rest}]
    if message.get("tool_calls"):
        deltas = [{"role": "assistant", "tool_calls": [
            dict(call, index=i) for i, call in enumerate(message["tool_calls"])]}]  # fmt: skip
    finish = body["choices"][0]["finish_reason"]
    events = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
    events.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]))
    events.append(dict(base, choices=[], usage=USAGE))
    chunks = [b"data: " + json.dumps(e).encode() + b"\n\n" for e in events] + [b"data: [DONE]\n\n"]
    framed = [f"{len(c):x}\r\n".encode() + c + b"\r\n" for c in chunks]
    start = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
             b"transfer-encoding: chunked\r\nconnection: keep-alive\r\n\r\n")  # fmt: skip
    return [start + framed[0], b"".join(framed[1:]) + b"0\r\n\r\n"]


class EndpointProtocol(asyncio.Protocol):
    """HTTP/1.1 keep-alive, requests answered in order on each connection."""

    def __init__(self, latency: float, tools: bool) -> None:
        self.latency, self.tools = latency, tools
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        Stats.connections_made += 1
        Stats.open_connections += 1
        Stats.peak_connections = max(Stats.peak_connections, Stats.open_connections)

    def connection_lost(self, exc: Exception | None) -> None:
        Stats.open_connections -= 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            head = self.buffer[:end].lower()
            length = 0
            at = head.find(b"content-length:")
            if at >= 0:
                stop = head.find(b"\r\n", at)
                length = int(head[at + 15 : stop if stop >= 0 else None])
            total = end + 4 + length
            if len(self.buffer) < total:
                return
            body, self.buffer = self.buffer[end + 4 : total], self.buffer[total:]
            if head.startswith(b"get /stats"):
                self._send(http_response(json.dumps(Stats.as_dict()).encode()), counted=False)
            else:
                self._answer(body)

    def _answer(self, body: bytes) -> None:
        """After the request's latency; a streamed request gets its first chunk at a fifth
        of it (time to first token) and the rest at the end."""
        reply, loop = answer_for(body, self.tools), asyncio.get_running_loop()
        delay = LATENCY.draw(body) if LATENCY.median else self.latency
        if b'"stream": true' not in body and b'"stream":true' not in body:
            loop.call_later(delay, self._send, reply)
            return
        first, rest = stream_parts(reply)
        loop.call_later(delay / 5, self._send, first, False)
        loop.call_later(delay, self._send, rest)

    def _send(self, data: bytes, counted: bool = True) -> None:
        if self.transport is not None and not self.transport.is_closing():
            Stats.served += int(counted)
            self.transport.write(data)


async def serve(latency: float, tools: bool) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: EndpointProtocol(latency, tools), "127.0.0.1", 0, backlog=4096
    )
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


def start_server(
    latency: float, tools: bool, lognormal: tuple[float, float] | None = None
) -> tuple[subprocess.Popen[str], int]:
    """The endpoint in its own process (its CPU is not the harness's); (process, port).
    `lognormal`: (median, p95) seconds of a drawn latency instead of the fixed one."""
    cmd = [sys.executable, __file__, "--latency", str(latency)] + (["--tools"] if tools else [])
    if lognormal:
        cmd += ["--median", str(lognormal[0]), "--p95", str(lognormal[1])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(timeout=10)


def fetch_stats(port: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as response:
        stats: dict[str, Any] = json.loads(response.read())
        return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--tools", action="store_true")
    parser.add_argument("--median", type=float, default=0.0, help="lognormal latency median")
    parser.add_argument("--p95", type=float, default=0.0, help="lognormal latency p95")
    args = parser.parse_args()
    global LATENCY
    LATENCY = Latency(args.latency, args.median, args.p95)
    asyncio.run(serve(args.latency, args.tools))
    return 0


if __name__ == "__main__":
    sys.exit(main())
