"""What a run cost, and what kind of dollar: every figure carries its source, in the scorecard,
summary.md, metrics.json and MLflow; a run that reached the model and counted no tokens reads
n/a, never $0.00; `metered` comes from a billing API (a local server speaking OpenAI's
organization costs shape) read before and after the run."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from servers.billing import BillingServer
from servers.common import Reply
from servers.openai_server import OpenAIServer

from agenteval.layout import Layout
from agenteval.llm.billing import MeterError, OpenAICostsMeter, window_start
from agenteval.params import load_params
from agenteval.pipeline import run_evaluation

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-Co5tS0urce9Xq2Wm4Rb3Nv6Hy1Jc5Pd0E"
ADMIN = "sk-admin-Me7eR3dK8Lp1Qz6Ws4Xv2Bn9Mc5Ty0A"
PRICE = {"input_per_mtok": 1000.0, "output_per_mtok": 1000.0, "as_of": "2026-01-15"}
PER_REQUEST = 0.002  # what the fake provider charges per chat request


def params(server: OpenAIServer, tmp: Path, **run: Any) -> dict[str, Any]:
    found = load_params(ROOT / "params.yaml", [
        "tracking.enabled=false", "run.cache_dir=null", "run.max_attempts=1",
        "run.concurrency=1", "target.kind=chat", "target.protocol=openai",
        f"target.base_url={server.base_url}", "target.model=priced-model",
        "target.api_key_env=COST_KEY"])  # fmt: skip
    found["suite"]["ids"] = ["concise_answer", "admit_missing_benefit", "honest_about_limits"]
    found["run"]["prices"] = {"priced-model": PRICE}
    found["run"].update(run)
    return found


def outputs(out: Path) -> tuple[dict[str, Any], str, dict[str, Any]]:
    card = json.loads((out / "scorecard.json").read_text())
    summary = (out / "summary.md").read_text()
    metrics = json.loads((out / "metrics.json").read_text())
    return card, summary, metrics


def test_counted_tokens_are_priced_with_the_dated_rate_card(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COST_KEY", KEY)
    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents."), api_key=KEY) as server:
        run_evaluation(params(server, tmp_path), Layout.run_dir(ROOT, tmp_path))
        calls = server.request_count
    card, summary, metrics = outputs(tmp_path)
    # each reply counts 12 + 7 tokens at $1000 per million: $0.019 a call
    expected = round(calls * 19 * 1000 / 1e6, 6)
    total = card["cost"]["total"]
    assert total == {"usd": pytest.approx(expected), "source": "harness_counts",
                     "rate_card": "2026-01-15", "note": None}  # fmt: skip
    assert card["cost"]["units_priced"] == 3 and card["cost"]["units_unpriced"] == 0
    for result in card["scenarios"]:
        assert result["cost"]["source"] == "harness_counts" and result["cost"]["usd"] > 0
    assert f"- Run: ${expected:.4f} (harness_counts, rate card 2026-01-15)" in summary
    assert "· cost $0.0" in summary  # each scenario's line
    assert metrics["cost.harness_counts.usd"] == pytest.approx(expected)
    assert metrics["cost.units_priced"] == 3


@pytest.mark.parametrize("usage", [None, {"input": 0, "output": 0}], ids=["absent", "zero"])
def test_a_run_that_counted_no_tokens_reads_n_a_never_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usage: dict[str, int] | None
) -> None:
    monkeypatch.setenv("COST_KEY", KEY)
    reply = Reply("Not in the documents.", usage=usage)
    with OpenAIServer(reply_fn=lambda _r: reply, api_key=KEY) as server:
        run_evaluation(params(server, tmp_path), Layout.run_dir(ROOT, tmp_path))
    card, summary, metrics = outputs(tmp_path)
    assert card["cost"]["total"]["usd"] is None
    assert card["cost"]["units_unpriced"] == 3 and card["cost"]["units_priced"] == 0
    for result in card["scenarios"]:
        assert result["cost"]["usd"] is None
        assert "reached the model but counted no tokens" in result["cost"]["note"]
    assert "- Run: n/a (3 unit(s) reached the model without a figure)" in summary
    assert "$0.00" not in summary
    assert not any(k.endswith(".usd") for k in metrics) and metrics["cost.units_unpriced"] == 3
    assert card["usage"]["cost_usd"] is None


def test_the_builtin_agent_calls_no_model_and_has_no_figure(tmp_path: Path) -> None:
    found = load_params(ROOT / "params.yaml", ["tracking.enabled=false"])
    found["suite"]["ids"] = ["concise_answer"]
    run_evaluation(found, Layout.run_dir(ROOT, tmp_path))
    card, summary, _ = outputs(tmp_path)
    assert card["cost"]["units_without_model"] == 1 and card["scenarios"][0]["cost"] is None
    assert "- Run: n/a (no model was called)" in summary


def test_metered_cost_is_the_billing_meters_delta(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COST_KEY", KEY)
    monkeypatch.setenv("ADMIN_KEY", ADMIN)
    lock = threading.Lock()
    counted = {"n": 0}

    def answer(_request: Any) -> Reply:
        with lock:
            counted["n"] += 1
        return Reply("Not in the documents.")

    with (
        OpenAIServer(reply_fn=answer, api_key=KEY) as server,
        BillingServer(lambda: 7.5 + PER_REQUEST * counted["n"], api_key=ADMIN) as billing,
    ):
        meter = {"base_url": billing.base_url, "api_key_env": "ADMIN_KEY", "lag_s": 0}
        run_evaluation(params(server, tmp_path, meter=meter), Layout.run_dir(ROOT, tmp_path))
        calls = server.request_count
        starts = {q.path.split("start_time=")[1].split("&")[0] for q in billing.requests}
    card, summary, metrics = outputs(tmp_path)
    metered = card["cost"]["metered"]
    assert metered["source"] == "metered"
    assert metered["usd"] == pytest.approx(PER_REQUEST * calls)
    assert len(starts) == 1  # both snapshots counted from one fixed window start
    assert len(billing.requests) == 4  # two snapshots, two pages each
    assert "account-wide" in metered["note"]
    assert f"- Billing meter (metered): ${PER_REQUEST * calls:.4f} (metered)" in summary
    assert metrics["cost.metered.usd"] == pytest.approx(PER_REQUEST * calls)
    assert ADMIN not in (tmp_path / "data/meter.json").read_text()


def test_a_refused_admin_key_is_an_error_without_the_key() -> None:
    with BillingServer(lambda: 0.0, api_key=ADMIN) as billing:
        meter = OpenAICostsMeter(billing.base_url, "sk-admin-wrongWrongWrong12345678901")
        with pytest.raises(MeterError, match="HTTP 401") as caught:
            meter.spent_since(window_start(1.8e9))
    assert "wrongWrong" not in str(caught.value)


def test_costs_reach_mlflow_as_metrics_with_their_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COST_KEY", KEY)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    from agenteval.tracking.run import log_evaluation

    with OpenAIServer(reply_fn=lambda _r: Reply("Not in the documents."), api_key=KEY) as server:
        found = params(server, tmp_path)
        layout = Layout.run_dir(ROOT, tmp_path / "run")
        run_evaluation(found, layout)
    found["tracking"].update(enabled=True, traces=False)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    result = log_evaluation(layout, found, uri=uri, experiment="costs")
    assert result is not None
    from mlflow.tracking import MlflowClient

    run = MlflowClient(tracking_uri=uri).get_run(result.run_id)
    card = json.loads((tmp_path / "run/scorecard.json").read_text())
    logged = run.data.metrics
    assert logged["cost.harness_counts.usd"] == pytest.approx(card["cost"]["total"]["usd"])
    assert logged["cost.units_priced"] == 3
