"""The throughput benchmark against the scripted loopback endpoint (a real HTTP server in a
child process, streaming both protocols' events on a known schedule) and the local model.

The loopback's script says when the first token comes and how fast the rest follow; what the
benchmark measures must match it. Tolerances: a figure can never beat the script (TTFT and
latency no lower, speed no higher than promised, beyond a little clock rounding), and may
trail it by the overhead of HTTP, the event parsing and a loaded 2-core machine (TTFT +60 ms,
latency +80 ms, per-request speed -15%, requests/s -35%). A wrong formula misses these: with
this script, tokens / latency reads 61 tok/s instead of 100, and timing from the first event
instead of the request would put TTFT near 0.
"""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from test_local_model import needs_model

from agenteval.benchmarks.base import params_model
from agenteval.benchmarks.gate import GateRefused, gate
from agenteval.benchmarks.throughput.loopback import Script, scripted_tokens
from agenteval.benchmarks.throughput.run import Settings, open_target, sweep
from agenteval.benchmarks.throughput.settings import ThroughputEndpoint, ThroughputParams
from agenteval.benchmarks.throughput.steps import step_run
from agenteval.benchmarks.throughput.workload import load_workload, read_label
from agenteval.layout import Layout
from agenteval.params import load_params

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = Script(ttft_ms=120.0, tokens_per_s=100.0, reply_words=19)  # 20 tokens a reply
TOKENS = 20
TTFT_MS, LATENCY_MS = 120.0, 120.0 + (TOKENS - 1) * 10.0
# Eight the keyword rule gets right and four it gets wrong (e13, e17, e25, e29).
IDS = ["e01", "e02", "e03", "e04", "e05", "e06", "e13", "e17", "e25", "e29", "e30", "e31"]


def params_for(tmp: Path, endpoints: list[dict[str, Any]], **section: Any) -> ThroughputParams:
    """The committed pipeline's section, typed, with these endpoints and a small sweep."""
    params = load_params(ROOT / "pipelines/throughput/params.yaml", model=params_model())
    return ThroughputParams.model_validate(params["throughput"] | {
        "endpoints": endpoints, "ids": IDS, "concurrency": [1, 4], "repeats": 1, "warmup": 1,
    } | section)  # fmt: skip


def loopback(protocol: str, script: Script = SCRIPT) -> dict[str, Any]:
    return {"name": f"loopback-{protocol}", "kind": "loopback", "protocol": protocol,
            "script": script.__dict__}  # fmt: skip


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("throughput")
    layout = Layout(ROOT, tmp / "data", tmp / "reports")
    params = params_for(tmp, [loopback("openai"), loopback("anthropic")])
    return step_run(params, layout) | {"_layout": layout}


@pytest.mark.parametrize("name", ["loopback-openai", "loopback-anthropic"])
def test_measured_figures_match_the_script(measured: dict[str, Any], name: str) -> None:
    run = measured["endpoints"][name]
    assert run["token_counts"] == {"usage": 12 * 2} and run["warmup_excluded"] == 1
    for level in ("1", "4"):
        f = run["levels"][level]
        assert f["errors"] == 0 and f["retries"] == 0 and f["requests"] == 12
        ttft, latency = f["ttft_ms.p50"]["value"], f["latency_ms.p50"]["value"]
        assert TTFT_MS - 2 <= ttft <= TTFT_MS + 60, (level, ttft)
        assert LATENCY_MS - 2 <= latency <= LATENCY_MS + 80, (level, latency)
        speed = f["request_tokens_per_s.median"]["value"]
        assert 85.0 <= speed <= 100.0 * 1.03, (level, speed)
    # Four in flight: four requests per latency, at most, and not much less.
    rate = run["levels"]["4"]["requests_per_s"]["value"]
    assert 0.65 * 4000 / LATENCY_MS <= rate <= 4000 / LATENCY_MS * 1.03, rate
    tokens = run["levels"]["4"]["output_tokens_per_s"]["value"]
    assert tokens == pytest.approx(rate * TOKENS, rel=1e-9)


def test_accuracy_is_measured_beside_speed(measured: dict[str, Any]) -> None:
    workload = load_workload(ROOT, "eval/throughput/emails.yaml", "eval/throughput/prompt.md", IDS)
    rows = [json.loads(line) for line in (measured["_layout"].data / "requests.jsonl").open()]
    assert len(rows) == 2 * 2 * 12
    for row in rows:
        email = next(e for e in workload.emails if e.id == row["email"])
        assert row["label"] == read_label(row["reply"]) and row["expected"] == email.label
        assert row["output_tokens"] == TOKENS and row["token_source"] == "usage"
    run = measured["endpoints"]["loopback-openai"]
    mine = [r for r in rows if r["endpoint"] == "loopback-openai"]
    correct = sum(r["label"] == r["expected"] for r in mine)
    assert run["accuracy"]["correct"] == correct == 16 and run["accuracy"]["answered"] == 24
    summary = (measured["_layout"].reports / "summary.md").read_text()
    assert "Warm-up: 1 request(s) sent first and excluded" in summary and "accuracy" in summary


def test_no_usage_and_no_tokenizer_is_na_never_zero(tmp_path: Path) -> None:
    script = Script(ttft_ms=5.0, tokens_per_s=2000.0, reply_words=4, usage=False)
    params = params_for(tmp_path, [loopback("openai", script), loopback("anthropic", script)],
                        concurrency=[2], ids=IDS[:4])  # fmt: skip
    results = step_run(params, Layout(ROOT, tmp_path / "data", tmp_path / "reports"))
    for run in results["endpoints"].values():
        assert run["token_counts"] == {"none": 4} and run["tokenizer"].startswith("none")
        level = run["levels"]["2"]
        assert level["output_tokens_per_s"]["value"] is None
        assert level["request_tokens_per_s.median"]["value"] is None
        assert level["requests_per_s"]["value"] > 0  # what can be measured still is
    summary = (tmp_path / "reports/summary.md").read_text()
    assert "| n/a |" in summary and "| 0.0 |" not in summary


def test_retries_are_counted_and_do_not_become_errors(tmp_path: Path) -> None:
    script = Script(ttft_ms=5.0, tokens_per_s=2000.0, reply_words=4, fail_every=3)
    params = params_for(tmp_path, [loopback("openai", script)], concurrency=[1], warmup=0)
    results = step_run(params, Layout(ROOT, tmp_path / "data", tmp_path / "reports"))
    level = results["endpoints"]["loopback-openai"]["levels"]["1"]
    # Requests 3, 6, 9, ... of the server's count fail once: 12 emails take 17 attempts.
    assert level["errors"] == 0 and level["answered"] == 12 and level["retries"] == 5


def test_the_gate_holds_its_own_run_and_fails_a_slower_one(measured: dict[str, Any]) -> None:
    base = {k: v for k, v in measured.items() if k != "_layout"}
    assert gate(base, base).passed
    slower = copy.deepcopy(base)
    level = slower["endpoints"]["loopback-openai"]["levels"]["4"]
    level["client_bound"] = False
    base_level = base["endpoints"]["loopback-openai"]["levels"]["4"]
    base_level_copy = copy.deepcopy(base_level)
    base_level_copy["client_bound"] = False
    baseline = copy.deepcopy(base)
    baseline["endpoints"]["loopback-openai"]["levels"]["4"] = base_level_copy
    level["latency_ms.p95"]["value"] = base_level["latency_ms.p95"]["value"] * 1.6
    level["output_tokens_per_s"]["value"] = base_level["output_tokens_per_s"]["value"] * 0.4
    failed = gate(slower, baseline)
    bad = {c["name"] for c in failed.checks if not c["ok"]}
    assert not failed.passed
    assert bad == {"loopback-openai c4 latency p95 ms", "loopback-openai c4 output tokens/s"}
    assert gate(slower, baseline, tolerance=0.7).passed
    worse = copy.deepcopy(base)
    worse["endpoints"]["loopback-anthropic"]["accuracy"]["value"] -= 0.01
    assert not gate(worse, base).passed


def test_the_gate_refuses_another_endpoint_or_workload(measured: dict[str, Any]) -> None:
    base = {k: v for k, v in measured.items() if k != "_layout"}
    other = copy.deepcopy(base)
    other["endpoints"]["loopback-openai"]["identity"]["script"]["tokens_per_s"] = 400.0
    with pytest.raises(GateRefused, match="another endpoint or model"):
        gate(other, base)
    other = copy.deepcopy(base)
    other["endpoints"]["loopback-openai"]["identity"]["model"] = "another-model"
    with pytest.raises(GateRefused, match="another endpoint or model"):
        gate(other, base)
    other = copy.deepcopy(base)
    other["meta"]["workload"]["digest"] = "0" * 64
    with pytest.raises(GateRefused, match="other emails"):
        gate(other, base)


def test_a_client_bound_level_is_shown_but_not_compared(measured: dict[str, Any]) -> None:
    base = {k: v for k, v in measured.items() if k != "_layout"}
    slow = copy.deepcopy(base)
    level = slow["endpoints"]["loopback-openai"]["levels"]["1"]
    level["client_bound"] = True
    level["latency_ms.p95"]["value"] *= 10
    result = gate(slow, base)
    check = next(c for c in result.checks if c["name"] == "loopback-openai c1 speed")
    assert check["ok"] and "client-bound" in check["note"]


def test_labels_are_read_as_a_careful_grader_would() -> None:
    assert read_label("LABEL: Billing\nThanks, we refunded it.") == "billing"
    assert read_label("**Label:** spam\nNo reply.") == "spam"
    assert read_label("LABEL: urgent or billing\n...") == "ambiguous"  # candidates
    assert read_label("LABEL: not spam but support") == "ambiguous"
    assert read_label("I think this is billing.") == "unparsed"  # no committed label line
    assert read_label("LABEL: unclear") == "unparsed"
    assert scripted_tokens("charged twice, refund please", SCRIPT)[0] == "LABEL: billing\n"


def test_cli_refuses_a_bad_level_before_any_request(tmp_path: Path) -> None:
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "bench", "throughput", "--concurrency", "4,0",
         "--out", str(out), "--no-track"],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "throughput.concurrency" in done.stderr
    assert "Traceback" not in done.stderr and not out.exists()


def test_cli_refuses_a_url_without_a_model(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "bench", "throughput", "--endpoint-url",
         "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "--model" in done.stderr


@needs_model
@pytest.mark.local_model
def test_the_local_model_streams_its_usage_and_its_tokenizer_agrees(tmp_path: Path) -> None:
    settings = Settings(concurrency=[1, 2], repeats=1, warmup=1, max_tokens=40,
                        temperature=0.0, timeout_s=300.0, max_attempts=2)  # fmt: skip
    workload = load_workload(ROOT, "eval/throughput/emails.yaml", "eval/throughput/prompt.md",
                             IDS[:4])  # fmt: skip
    from agenteval.benchmarks.throughput.tokens import resolve_tokenizer

    tokenizer, how = resolve_tokenizer("auto", "local", ROOT)
    assert tokenizer is not None and "SmolLM2" in how
    assert tokenizer.count("The capital of France is Paris.") == 7  # as the server counts it
    with open_target(ThroughputEndpoint(name="local", kind="local"), settings) as target:
        run = asyncio.run(sweep(target, workload, settings, tokenizer))
    assert len(run.records) == 8 and all(r.answered for r in run.records)
    for r in run.records:
        # The local server sends usage in a stream when asked (stream_options.include_usage),
        # as OpenAI does: its exact count wins over the tokenizer's recount.
        assert r.token_source in ("usage", "tokenizer") and r.output_tokens
        assert r.ttft_ms is not None and 0 < r.ttft_ms < r.latency_ms
        assert r.label is not None  # a label or unparsed/ambiguous: graded either way
    assert {r.token_source for r in run.records} == {"usage"}
    assert target.identity["weights"].startswith("SmolLM2-135M")


def test_the_committed_baseline_gates_a_run_of_the_same_endpoints() -> None:
    from agenteval.benchmarks.gate import load_run

    base = load_run(ROOT / "eval/baselines/throughput/pr.json")
    assert base["kind"] == "throughput" and gate(base, base).passed
    assert set(base["endpoints"]) == {"loopback-openai", "loopback-anthropic"}
    other = copy.deepcopy(base)
    other["meta"]["settings"]["max_tokens"] = 8
    with pytest.raises(GateRefused, match="max_tokens"):
        gate(other, base)


async def _serve_once(body: bytes, content_type: str, client_call: Any) -> Any:
    """A real HTTP server in this event loop answering every request with `body`."""
    from aiohttp import web

    async def answer(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=body, headers={"content-type": content_type})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", answer)
    app.router.add_post("/v1/messages", answer)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        return await client_call(f"http://127.0.0.1:{port}")
    finally:
        await runner.cleanup()


def _stream(protocol: str, body: bytes, content_type: str = "text/event-stream") -> Any:
    from agenteval.llm import Endpoint, EndpointLimits, RetryPolicy, make_client

    async def call(url: str) -> Any:
        base = f"{url}/v1" if protocol == "openai" else url
        retry = RetryPolicy(max_attempts=2, backoff_base=0.001)
        endpoint = Endpoint(model="m", base_url=base, protocol=protocol)
        client = make_client(endpoint, limits=EndpointLimits(), retry_policy=retry)
        try:
            return await client.stream([{"role": "user", "content": "hi"}])
        finally:
            await client.aclose()

    return asyncio.run(_serve_once(body, content_type, call))


def test_a_cut_stream_is_a_failed_attempt_not_an_empty_reply() -> None:
    from agenteval.llm import TransientError

    cut = (b'data: {"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant"}}]}\n\n'
           b"data: [DONE]\n\n")  # fmt: skip
    with pytest.raises(TransientError, match="without a finish reason") as caught:
        _stream("openai", cut)
    assert caught.value.attempts == 2


def test_an_error_event_inside_an_anthropic_stream_is_retried() -> None:
    from agenteval.llm import TransientError

    start = {"type": "message_start", "message": {
        "id": "m1", "type": "message", "role": "assistant", "content": [], "model": "m",
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 0}}}  # fmt: skip
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    body = (f"event: message_start\ndata: {json.dumps(start)}\n\n"
            f"event: error\ndata: {json.dumps(error)}\n\n").encode()  # fmt: skip
    with pytest.raises(TransientError, match="error event in the stream"):
        _stream("anthropic", body)


def test_a_server_that_ignores_streaming_has_no_ttft() -> None:
    whole = {"model": "m", "choices": [{"index": 0, "message": {"content": "LABEL: info"},
                                        "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 5, "completion_tokens": 4}}  # fmt: skip
    reply = _stream("openai", json.dumps(whole).encode(), "application/json")
    assert reply.text == "LABEL: info" and reply.first_token_at is None
    assert reply.usage is not None and reply.usage.output_tokens == 4
