"""A scripted streaming endpoint on 127.0.0.1 that speaks both protocols' event streams.

It is the throughput benchmark's calibration target: every reply starts `ttft_ms` after the
request arrived and then streams one token per event at `tokens_per_s`, each on a fixed
schedule from the arrival (a late event does not delay the ones after it), so what the
benchmark measures can be compared with what the script promised. Its "model" is a keyword
rule that triages the email in the last user message (`scripted_label`): a real, imperfect
classifier, so the accuracy reported beside the speed is measured, not assumed. Its reply is
`LABEL: <label>` and a fixed sentence of `reply_words` words.

POST /v1/chat/completions streams OpenAI `chat.completion.chunk` events (usage in a last
event when asked with stream_options.include_usage); POST /v1/messages streams Anthropic's
message_start ... message_stop events. `fail_every` N answers every Nth request with a 503
(Retry-After: 0) before streaming, to exercise retries; `usage: false` leaves usage out.

It runs in a child process (`python -m agenteval.benchmarks.throughput.loopback`), like a
real endpoint: the benchmark's own CPU work cannot stall its clock.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

LOOPBACK_MODEL = "loopback-scripted"
READY = "loopback ready on port "
STARTUP_TIMEOUT_S = 60.0
# The keyword rule: the label whose words appear most often; ties go to the earlier label.
KEYWORDS: dict[str, tuple[str, ...]] = {
    "urgent": ("right now", "immediately", "today", "outage", "down", "breach", "locked",
               "can't work", "cannot", "waiting", "deadline"),
    "billing": ("invoice", "refund", "charged", "charge", "card", "receipt", "vat", "tax",
                "payment", "billing"),
    "sales": ("quote", "price", "pricing", "discount", "demo", "plan", "upgrade", "partner",
              "contract", "trial"),
    "spam": ("click", "won", "bank details", "password", "guarantee", "unsubscribe",
             "crypto", "passport", "fee", "attached as"),
    "support": ("how do", "how can", "is there a way", "is it possible", "where can",
                "settings", "export", "filter", "can we"),
    "info": ("thanks", "thank you", "no need to reply", "no action", "out of the office",
             "newsletter", "just letting you know", "note"),
}  # fmt: skip
FILLER = (
    "Thank you for writing to Larchmont Data; we have read your message and a member of "
    "the team will follow up with the details you asked for as soon as possible today."
).split()


@dataclass(frozen=True)
class Script:
    ttft_ms: float = 25.0
    tokens_per_s: float = 250.0
    reply_words: int = 24
    fail_every: int = 0
    usage: bool = True


def scripted_label(email: str) -> str:
    text = email.lower()
    hits = {label: sum(text.count(k) for k in words) for label, words in KEYWORDS.items()}
    best = max(hits.values())
    return next(label for label, n in hits.items() if n == best) if best else "support"


def scripted_tokens(email: str, script: Script) -> list[str]:
    """The reply as the tokens it is streamed in: one word (with its trailing space) each."""
    words = [f"LABEL: {scripted_label(email)}\n"]
    words += [FILLER[i % len(FILLER)] for i in range(script.reply_words)]
    return [w if w.endswith("\n") else f"{w} " for w in words]


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return str(content or "")
    return ""


def _prompt_words(body: dict[str, Any]) -> int:
    texts = [json.dumps(m.get("content")) for m in body.get("messages") or []]
    return len(re.findall(r"\S+", " ".join(texts) + " " + str(body.get("system") or "")))


def _sse(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _openai_events(body: dict[str, Any], tokens: list[str], script: Script) -> Iterator[bytes]:
    model = body.get("model") or LOOPBACK_MODEL
    base = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk", "model": model}
    for token in tokens:
        yield _sse(base | {"choices": [{"index": 0, "delta": {"content": token}}]})
    yield _sse(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    wants = (body.get("stream_options") or {}).get("include_usage")
    if script.usage and wants:
        usage = {"prompt_tokens": _prompt_words(body), "completion_tokens": len(tokens)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        yield _sse(base | {"choices": [], "usage": usage})
    yield b"data: [DONE]\n\n"


def _anthropic_events(body: dict[str, Any], tokens: list[str], script: Script) -> Iterator[bytes]:
    usage_in = {"input_tokens": _prompt_words(body) if script.usage else 0, "output_tokens": 0}
    message: dict[str, Any] = {
        "id": "msg_loopback", "type": "message", "role": "assistant", "content": [],
        "model": body.get("model") or LOOPBACK_MODEL, "stop_reason": None,
        "stop_sequence": None, "usage": usage_in,
    }  # fmt: skip
    yield _sse({"type": "message_start", "message": message}, "message_start")
    block = {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "text", "text": ""},
    }
    yield _sse(block, "content_block_start")
    for token in tokens:
        delta = {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": token}}  # fmt: skip
        yield _sse(delta, "content_block_delta")
    yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
    out = {"output_tokens": len(tokens) if script.usage else 0}
    end = {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
           "usage": out}  # fmt: skip
    yield _sse(end, "message_delta")
    yield _sse({"type": "message_stop"}, "message_stop")


def make_app(script: Script) -> Any:
    from aiohttp import web

    counter = itertools.count(1)

    async def answer(request: web.Request) -> web.StreamResponse:
        arrived = time.perf_counter()
        body = await request.json()
        if script.fail_every and next(counter) % script.fail_every == 0:
            error = {"error": {"type": "overloaded_error", "message": "scripted 503"}}
            return web.json_response(error, status=503, headers={"retry-after": "0"})
        anthropic = request.path.rstrip("/").endswith("/messages")
        tokens = scripted_tokens(_last_user_text(body), script)
        events = (_anthropic_events if anthropic else _openai_events)(body, tokens, script)
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        first, gap = script.ttft_ms / 1000.0, 1.0 / script.tokens_per_s
        offset = 2 if anthropic else 0  # message_start, content_block_start
        for i, event in enumerate(events):
            # Token i is due at arrival + ttft + i * gap; events before the first token
            # (message_start) go with it, the closing ones right after the last.
            due = arrived + first + max(0, min(i - offset, len(tokens) - 1)) * gap
            wait = due - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            await response.write(event)
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    app.router.add_post("/v1/messages", answer)
    return app


def _flag(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    for name, value in asdict(Script()).items():
        kind = _flag if isinstance(value, bool) else type(value)
        parser.add_argument(f"--{name.replace('_', '-')}", type=kind, default=value)
    args = parser.parse_args(argv)
    script = Script(**{k: getattr(args, k) for k in asdict(Script())})
    asyncio.run(_serve(script, args.port))


async def _serve(script: Script, port: int) -> None:
    from aiohttp import web

    runner = web.AppRunner(make_app(script), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    print(f"{READY}{bound}", flush=True)
    await asyncio.Event().wait()


@contextlib.contextmanager
def loopback_server(script: Script) -> Iterator[str]:
    """Run the scripted endpoint in a child process; yields its root URL."""
    args = [f"--{k.replace('_', '-')}={v}" for k, v in asdict(script).items()]
    proc = subprocess.Popen(
        [sys.executable, "-m", "agenteval.benchmarks.throughput.loopback", *args],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = _ready_line(proc)
        yield f"http://127.0.0.1:{int(line[len(READY) :])}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _ready_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if line.startswith(READY):
            return line.strip()
        if not line and proc.poll() is not None:
            break
    raise RuntimeError(f"the loopback endpoint did not start (exit status {proc.poll()})")


if __name__ == "__main__":
    main()
