"""The model pin (`--agent-model`, run.agent_model): what each unit reports having run is read
back, and exactly the units that ran something else are discarded as INFRA_ERROR.

The agent is the chat harness on a local OpenAI-compatible server that answers some scenarios'
requests under another model name (and one with no model at all); an MCP agent (serve-mcp
over stdio) reports its model through the server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from servers.common import Raw, Reply
from servers.openai_server import OpenAIServer

from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all

ROOT = Path(__file__).resolve().parents[1]
PIN = "pin-model"
CATEGORY = "personality"
SWAPPED = {"concise_answer", "honest_about_limits"}  # answered by "other-model"
UNNAMED = "admit_missing_benefit"  # answered with no model in the reply


def messages_of(scenario_id: str) -> set[str]:
    path = next((ROOT / "eval/scenarios").rglob(f"{scenario_id}.yaml"))
    turns = yaml.safe_load(path.read_text())["turns"]
    return {t.get("user_message") or t["objective"] for t in turns}


def reply_for(request: dict[str, Any]) -> Any:
    users = [m["content"] for m in request["messages"] if m["role"] == "user"]
    last = users[-1] if users else ""
    if any(last in messages_of(s) for s in SWAPPED):
        return Reply("That is not in the documents.", model="other-model")
    if last in messages_of(UNNAMED):
        body = {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": {
            "role": "assistant", "content": "It is not in the documents."},
            "finish_reason": "stop"}]}  # fmt: skip
        return Raw(200, body)
    return Reply("That is not in the documents.")  # rendered under the requested model


def params(server: OpenAIServer, *sets: str) -> dict[str, Any]:
    found = load_params(ROOT / "params.yaml", [
        "tracking.enabled=false", "run.cache_dir=null", "run.max_attempts=1",
        "target.kind=chat", "target.protocol=openai", f"target.base_url={server.base_url}",
        f"target.model={PIN}", *sets])  # fmt: skip
    found["suite"]["categories"] = [CATEGORY]
    return found


def test_exactly_the_units_served_by_another_model_are_discarded(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=reply_for) as server:
        card = run_all(params(server, f"run.agent_model={PIN}"), Layout.run_dir(ROOT, tmp_path))
    by_id = {r.id: r for r in card.scenarios}
    assert SWAPPED | {UNNAMED} < set(by_id)
    discarded = {sid for sid, r in by_id.items() if r.status == "INFRA_ERROR"}
    assert discarded == SWAPPED | {UNNAMED}
    for sid in SWAPPED:
        assert "ran other-model, not the pinned pin-model" in by_id[sid].warnings[0]
    assert "named no model" in by_id[UNNAMED].warnings[0]
    assert all(r.status in ("PASS", "FAIL") for s, r in by_id.items() if s not in discarded)
    assert card.config["agent_models"] == [PIN] and card.config["agent_model_pin"] == PIN
    stored = json.loads((tmp_path / "data/transcripts/concise_answer/0.json").read_text())
    assert stored["turns"][-1]["models"] == ["other-model"]
    # the conversation stopped at the first reply from the other model: no turn after it
    assert len(stored["turns"]) == 1


def test_without_the_pin_nothing_is_discarded_and_the_models_are_recorded(tmp_path: Path) -> None:
    with OpenAIServer(reply_fn=reply_for) as server:
        card = run_all(params(server), Layout.run_dir(ROOT, tmp_path))
    assert not [r for r in card.scenarios if r.status == "INFRA_ERROR"]
    assert card.config["agent_models"] == ["other-model", PIN]


def test_an_mcp_agent_reports_its_model_through_the_server(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "agenteval.serve.mcp", "--root", str(ROOT),
               "--set", "target.model=builtin-bm25"]  # fmt: skip
    found = load_params(ROOT / "params.yaml", ["tracking.enabled=false"])
    found["suite"]["ids"] = ["empty_file"]
    found["target"] = {"kind": "mcp", "command": command, "model": "builtin-bm25"}
    found["run"]["agent_model"] = "builtin-bm25"
    kept = run_all(found, Layout.run_dir(ROOT, tmp_path / "kept"))
    assert [r.status for r in kept.scenarios] == ["PASS"]
    assert kept.config["agent_models"] == ["builtin-bm25"]
    found["run"]["agent_model"] = "some-other-model"
    gone = run_all(found, Layout.run_dir(ROOT, tmp_path / "gone"))
    assert [r.status for r in gone.scenarios] == ["INFRA_ERROR"]
    assert "ran builtin-bm25, not the pinned some-other-model" in gone.scenarios[0].warnings[0]
