"""A loopback OpenAI-compatible endpoint for benchmarks: fixed latency, its own process.

    python bench/loopback.py --latency 0.05 [--tools]     prints its port, serves until killed

POST /v1/chat/completions answers after `latency` seconds. With --tools, a request that
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
import json
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
        }


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
                reply = answer_for(body, self.tools)
                asyncio.get_running_loop().call_later(self.latency, self._send, reply)

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


def start_server(latency: float, tools: bool) -> tuple[subprocess.Popen[str], int]:
    """The endpoint in its own process (its CPU is not the harness's); (process, port)."""
    cmd = [sys.executable, __file__, "--latency", str(latency)] + (["--tools"] if tools else [])
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
    args = parser.parse_args()
    asyncio.run(serve(args.latency, args.tools))
    return 0


if __name__ == "__main__":
    sys.exit(main())
