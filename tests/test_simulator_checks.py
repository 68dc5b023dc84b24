"""A simulator that is checked: the checks on labelled messages, and a planted leaky LLM
simulator (a loopback endpoint) caught in a real run, its scenario SIMULATOR_ERROR."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from servers import OpenAIServer, Reply

from agenteval.controls.simulator import check_controls, load_simulator_controls, simulator_report
from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all
from agenteval.schema.status import UNMEASURED_STATUSES, Status
from agenteval.simulators.checks import check_message

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "duplicate_section_trap"  # two turns: $65, then 24 hours


def test_each_check_fires_on_its_fault_and_not_on_honest_messages() -> None:
    objective = "Ask the current late cancellation fee"
    assert check_message("What's the late cancellation fee now?", objective, ["$65"], False) == []
    leaked = check_message("The fee is $65 now, right?", objective, ["$65"], False)
    assert [f.check for f in leaked] == ["no_answer_leak"]
    early = check_message("I have no more questions about the fee.", objective, [], False)
    assert [f.check for f in early] == ["no_early_stop"]
    assert check_message("I have no more questions about the fee.", objective, [], True) == []
    swapped = check_message("How can I help you with the cancellation fee?", objective)
    assert [f.check for f in swapped] == ["in_persona"]
    # a number the objective itself states is the user's, not a leak
    assert check_message("Is the 2019 policy still on?", "Ask if the 2019 policy holds",
                         ["2019"], True)[0].check == "no_answer_leak"  # fmt: skip
    assert check_message("Is the 2019 policy still on?", "Ask if the 2019 policy holds",
                         ["yes"], True) == []  # fmt: skip


def test_simulator_controls_report_agreement_and_refuse_missed_faults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked = check_controls(load_simulator_controls(ROOT / "eval/simulator_controls", ROOT))
    report = simulator_report(checked)
    assert report["passed"] and report["splits"]["held"]["controls"] >= 10
    assert report["overall"]["agreement"]["low"] is not None
    # a lazy check that calls everything fine misses every fault: the gate refuses it
    lazy = [c.__class__(c.control, c.split, []) for c in checked]
    assert not simulator_report(lazy)["passed"]
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.yaml").write_text(yaml.safe_dump({"controls": [{"id": "a", "objective": "o",
        "message": "m", "label": {"ok": False}}]}))  # fmt: skip
    from typer.testing import CliRunner

    from agenteval.cli import app

    monkeypatch.chdir(ROOT)
    done = CliRunner().invoke(app, ["simulator", "controls", "--folder", str(bad), "--out",
                                    str(tmp_path)])  # fmt: skip
    assert done.exit_code == 2 and "x.yaml:" in done.output
    assert isinstance(done.exception, SystemExit)  # a message, no traceback


def leaky(body: Any) -> Reply:
    """A planted simulator that hands the agent the answer on the first turn."""
    system = body["messages"][0]["content"]
    if "cancellation fee" in system:
        return Reply(text="The late cancellation fee is $65 now, isn't it?")
    return Reply(text="How much notice do patients need to give?")


@pytest.mark.parametrize("reply_fn", [leaky])
def test_a_planted_leaky_simulator_is_caught_and_nothing_is_scored(
    tmp_path: Path, reply_fn: Any
) -> None:
    with OpenAIServer(reply_fn=reply_fn) as server:
        params = load_params(ROOT / "params.yaml", [
            f"suite.ids={json.dumps([SCENARIO])}", "simulator.kind=llm",
            "simulator.model=sim-model", f"simulator.base_url={server.base_url}",
            "simulator.protocol=openai", "simulator.rephrase_scripted=true",
            "run.cache_dir=null", "judge.kind=code"])  # fmt: skip
        layout = Layout.run_dir(ROOT, tmp_path)
        run_all(params, layout)
    card = read_json(layout.scorecard)
    (result,) = card["scenarios"]
    assert result["status"] == Status.SIMULATOR_ERROR and result["score"] is None
    assert "no_answer_leak" in result["root_cause"]
    assert card["summary"]["simulator_error"] == 1 and card["summary"]["failed"] == 0
    assert Status.SIMULATOR_ERROR in UNMEASURED_STATUSES
    assert "simulator error 1" in (layout.reports / "summary.md").read_text()
