"""OpenAI's chat completions protocol over HTTP for the local model (`serve.local_engine`).

`python -m agenteval.serve.local_http --model PATH --host H --port P ...` is the child that
`serve.local` starts. It speaks the wire format OpenAI clients expect: `GET /v1/models`,
`POST /v1/chat/completions` with a JSON reply or, with `"stream": true`, server-sent events
(`data: {chunk}` lines, a usage event when `stream_options.include_usage` asks, then
`data: [DONE]`), and errors as `{"error": {"message", "type"}}` with a 4xx/5xx status.
Structured output (`response_format` json_schema / json_object) constrains decoding with a
grammar (`serve.gbnf`).

The model has one slot: requests are served one at a time, each to its end (a request that
arrives while another streams waits its turn; it never cuts the other short). One
access-log line per request goes to stderr, as `"POST /v1/chat/completions HTTP/1.1" 200`.
The standard library's threaded HTTP server is enough for one local client and keeps the
`local` extra to the model runtime alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from agenteval.serve.gbnf import UnsupportedSchema, response_format_grammar
from agenteval.serve.local_engine import Generation, LocalModel, RequestError, Sampling

MAX_BODY_BYTES = 8 * 1024 * 1024
DEFAULT_MAX_TOKENS = 512


class BadRequest(ValueError):
    """A request refused before any work, with OpenAI's invalid_request_error."""


def _number(body: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = body.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise BadRequest(f"{key}: must be a number from {low} to {high}, got {value!r}")
    return float(value)


def parse_request(body: Any) -> tuple[list[dict[str, Any]], Sampling, bool, bool]:
    """(messages, sampling, stream, include_usage) from a chat completions body."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: must be a non-empty list")
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequest(f"messages[{i}]: must be an object with a role")
        if not isinstance(message.get("content", ""), (str, type(None))):
            raise BadRequest(f"messages[{i}].content: only text content is supported")
    limit = body.get("max_completion_tokens", body.get("max_tokens"))
    limit = DEFAULT_MAX_TOKENS if limit is None else limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise BadRequest(f"max_tokens: must be a positive integer, got {limit!r}")
    stop = body.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    if not isinstance(stop, list) or not all(isinstance(s, str) for s in stop):
        raise BadRequest("stop: must be a string or a list of strings")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise BadRequest(f"seed: must be an integer, got {seed!r}")
    try:
        grammar = response_format_grammar(body.get("response_format"))
    except UnsupportedSchema as exc:
        raise BadRequest(str(exc)) from exc
    sampling = Sampling(
        max_tokens=limit,
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 0.0, 1.0),
        seed=seed,
        stop=tuple(stop),
        grammar=grammar,
    )
    options = body.get("stream_options") or {}
    include_usage = bool(isinstance(options, dict) and options.get("include_usage"))
    return messages, sampling, bool(body.get("stream")), include_usage


def _usage(result: Generation) -> dict[str, int]:
    return {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalModelServer

    def log_message(self, format: str, *args: Any) -> None:
        sys.stderr.write(f"{self.address_string()} - - [{self.log_date_time_string()}] "
                         f"{format % args}\n")  # fmt: skip
        sys.stderr.flush()

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        self._send_json(status, {"error": {"message": message, "type": kind, "code": None}})

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            self._error(404, f"no route {self.path}", "not_found_error")
            return
        model = {"id": self.server.alias, "object": "model", "created": self.server.created,
                 "owned_by": "agenteval", "weights": self.server.model.name}  # fmt: skip
        self._send_json(200, {"object": "list", "data": [model]})

    def do_POST(self) -> None:
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no route {self.path}", "not_found_error")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY_BYTES:
            self._error(400 if length <= 0 else 413, "a JSON body of at most 8 MiB is required")
            return
        try:
            body = json.loads(self.rfile.read(length))
            messages, sampling, stream, include_usage = parse_request(body)
        except (ValueError, BadRequest) as exc:
            self._error(400, str(exc))
            return
        with self.server.slot:
            self._complete(messages, sampling, stream, include_usage)

    def _complete(
        self, messages: list[dict[str, Any]], sampling: Sampling, stream: bool, usage: bool
    ) -> None:
        result = Generation()
        pieces = self.server.model.generate(messages, sampling, result)
        try:
            first = next(pieces, None)  # errors before the reply starts get a status
        except RequestError as exc:
            self._error(400, str(exc))
            return
        except RuntimeError as exc:
            self._error(500, str(exc), "server_error")
            return
        head = [] if first is None else [first]
        if stream:
            self._stream(_chain(head, pieces), result, usage)
            return
        try:
            text = "".join(_chain(head, pieces))
        except RuntimeError as exc:
            self._error(500, str(exc), "server_error")
            return
        choice = {"index": 0, "message": {"role": "assistant", "content": text},
                  "logprobs": None, "finish_reason": result.finish_reason}  # fmt: skip
        self._send_json(200, {**self._envelope("chat.completion"), "choices": [choice],
                              "usage": _usage(result)})  # fmt: skip

    def _envelope(self, kind: str) -> dict[str, Any]:
        return {"id": self._id, "object": kind, "created": int(time.time()),
                "model": self.server.alias}  # fmt: skip

    def _event(self, payload: dict[str, Any] | str) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        chunk = f"data: {data}\n\n".encode()
        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.flush()

    def _stream(self, pieces: Iterator[str], result: Generation, include_usage: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

        def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {**self._envelope("chat.completion.chunk"), "choices": [choice]}

        self._event(chunk({"role": "assistant", "content": ""}, None))
        for piece in pieces:
            self._event(chunk({"content": piece}, None))
        self._event(chunk({}, result.finish_reason))
        if include_usage:
            self._event({**self._envelope("chat.completion.chunk"), "choices": [],
                         "usage": _usage(result)})  # fmt: skip
        self._event("[DONE]")
        self.wfile.write(b"0\r\n\r\n")

    @property
    def _id(self) -> str:
        if not hasattr(self, "_completion_id"):
            self._completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        return self._completion_id


def _chain(head: list[str], rest: Iterator[str]) -> Iterator[str]:
    yield from head
    yield from rest


class LocalModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: LocalModel, alias: str) -> None:
        super().__init__(address, _Handler)
        self.model = model
        self.alias = alias
        self.created = int(time.time())
        self.slot = threading.Lock()  # one generation at a time


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m agenteval.serve.local_http")
    parser.add_argument("--model", required=True, type=Path)
    parser.add_argument("--model_alias", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", required=True, type=int)
    parser.add_argument("--n_ctx", type=int, default=4096)
    parser.add_argument("--n_threads", type=int, default=None)
    args = parser.parse_args(argv)
    model = LocalModel(args.model, n_ctx=args.n_ctx, n_threads=args.n_threads)
    server = LocalModelServer((args.host, args.port), model, args.model_alias)
    print(f"serving {model.name} as {args.model_alias} on http://{args.host}:{args.port}/v1",
          file=sys.stderr, flush=True)  # fmt: skip
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main(sys.argv[1:])
