"""The response cache never holds a secret: an endpoint that echoes the Authorization header
back (a real HTTP server on 127.0.0.1) leaves no key in .cache/ or, after `dvc commit` of the
infer stage's output, in .dvc/cache."""

from __future__ import annotations

import asyncio
import base64
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest
from servers import OpenAIServer, Reply

from agenteval.llm import Endpoint, make_client
from agenteval.llm.views import base64_cores

KEY = "sk-echo-7Hq2LmN3oPqRsTuVwXyZ0123456789ab"
CUSTOM = "zz-a9F3kQ7pL2mX8vB4nC6"  # a key of no known shape: only its value can find it


class EchoingServer(OpenAIServer):
    """Replies with the request's Authorization header, as a misconfigured proxy might."""

    def check_request(self, request: Any) -> Any:
        self.seen = request.headers.get("authorization", "")
        return super().check_request(request)

    def render(self, reply: Reply, request: Any) -> dict[str, Any]:
        echoed = Reply(text=f"debug: your header was {self.seen}", usage=reply.usage)
        return super().render(echoed, request)


@pytest.mark.parametrize("key", [KEY, CUSTOM])
def test_an_echoed_key_reaches_neither_the_cache_nor_dvc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str
) -> None:
    monkeypatch.setenv("ECHO_KEY", key)
    monkeypatch.chdir(tmp_path)
    cache = tmp_path / ".cache/agenteval/llm"
    with EchoingServer([Reply("x")] * 2, api_key=key) as server:
        ep = Endpoint(model="m", base_url=server.base_url, api_key_env="ECHO_KEY")

        async def ask() -> str:
            client = make_client(ep, cache_dir=cache)
            try:
                reply = await client.complete([{"role": "user", "content": "hi"}])
                again = await client.complete([{"role": "user", "content": "hi"}])
                assert again.cached and len(server.requests) == 1
                return reply.text or ""
            finally:
                await client.aclose()

        said = asyncio.run(ask())
        assert key in server.seen, "the endpoint did echo the key (the test would prove nothing)"
    # Nor does the reply the caller gets: the agent's own key would go back to it as its
    # earlier turn of a conversation (an outside red team's K1).
    assert "debug: your header was" in said and key not in said
    files = [p for p in cache.rglob("*") if p.is_file()]
    assert files and not any(key in p.read_text() for p in files)
    dvc = shutil.which("dvc")
    if key != CUSTOM or dvc is None:  # DVC copies what is on disk: checked once (~20 s)
        return
    for argv in (
        ["git", "init", "-q"],
        [dvc, "init", "-q"],
        [dvc, "add", "-q", ".cache/agenteval/llm"],
    ):
        subprocess.run(argv, cwd=tmp_path, check=True, capture_output=True)
    stored = [p for p in (tmp_path / ".dvc/cache").rglob("*") if p.is_file()]
    assert stored and not any(key.encode() in p.read_bytes() for p in stored)


class RewrappingServer(EchoingServer):
    """Echoes its key re-wrapped as a careless proxy's debug page might (split over lines,
    quoted pieces, JSON-escaped, URL-encoded) and the user's message back."""

    def render(self, reply: Reply, request: Any) -> dict[str, Any]:
        key = self.seen.removeprefix("Bearer ")
        said = request["messages"][-1]["content"]
        forms = [
            "\n".join(key[i : i + 10] for i in range(0, len(key), 10)),
            " + ".join(f'"{key[i : i + 8]}"' for i in range(0, len(key), 8)),
            json.dumps(key[:14] + "\n" + key[14:])[1:-1],
            quote(key[:16] + "\r\n" + key[16:], safe=""),
            base64.b64encode(f"{self.seen}\n{said}".encode()).decode(),  # header and body
        ]
        text = "debug:\n" + "\n---\n".join(forms) + "\nyou said: " + said
        text += "\nas JSON: " + json.dumps({"content": said})
        return super(EchoingServer, self).render(Reply(text=text, usage=reply.usage), request)


PERSONAL = {
    "address": "4099 Maple Grove Ave, Apt 3B, Springfield, IL 62704",
    "card": "4539 4794 7153 5547",
    "e-mail": "j.okonkwo%40outlook.com",
    "birth": "Jonas Lindqvist, born 1987-03-14",
    "home": "c:\\users\\aigerim\\.kube",
}
# A key a terminal wrapped over three lines (a provider's prefix finds its head only).
WRAPPED = "sk-ant-api03-" + "R7tKq2Lm9PzX4wVb3Nc8Hy5Jd1Fg6Sa0Qe-Tw2Ux7Zr4Cv9Bn1Mk3Lp6Gh8Df5"
WRAPPED_LINES = "\n".join(WRAPPED[i : i + 30] for i in range(0, len(WRAPPED), 30))


def test_a_rewrapped_key_and_personal_data_reach_no_cache_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "a9F3kQ7pL2mX8vB4nC6Qw7Er5Ty1Zu"  # no known shape, no separator of its own
    monkeypatch.setenv("ECHO_KEY", key)
    cache = tmp_path / ".cache/agenteval/llm"
    message = "Refund form: " + "; ".join(PERSONAL.values()) + "\ntoken:\n" + WRAPPED_LINES
    with RewrappingServer([Reply("x")], api_key=key) as server:
        ep = Endpoint(model="m", base_url=server.base_url, api_key_env="ECHO_KEY")

        async def ask() -> str:
            client = make_client(ep, cache_dir=cache)
            try:
                return (await client.complete([{"role": "user", "content": message}])).text or ""
            finally:
                await client.aclose()

        said = asyncio.run(ask())
        assert key in server.seen and PERSONAL["card"] in said, "the echo proves nothing"
    pieces = {key[i : i + 12] for i in range(len(key) - 11)} | base64_cores(key)
    flat_said = "".join(c for c in unquote(said) if c.isalnum())
    assert not any(piece in flat_said for piece in pieces), said  # nor in the reply itself
    pieces |= {WRAPPED[i : i + 12] for i in range(len(WRAPPED) - 11)}
    (entry,) = [p for p in cache.rglob("*.json")]
    stored = json.loads(entry.read_text())["completion"]["text"]
    flat = "".join(c for c in unquote(stored) if c.isalnum())
    assert not any(piece in flat or piece in stored for piece in pieces), stored
    for kind, value in PERSONAL.items():
        assert value not in stored and unquote(value) not in unquote(stored), kind
    assert "aigerim" not in stored and "okonkwo" not in stored
