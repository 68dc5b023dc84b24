"""Simulator `llm` against a fake OpenAI-compatible server: verbatim turns, personas, faults."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from servers import OpenAIServer, Reply

from agenteval.params import DEFAULTS, deep_merge
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.transcript import TranscriptTurn
from agenteval.simulators.base import UserMessage, make_simulator
from agenteval.simulators.llm import LLMSimulator, clean_message, detect_fault

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = "context_retention/budget_row_followups.yaml"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as fake:
        yield fake


def sim_params(server: OpenAIServer, **simulator: Any) -> dict[str, Any]:
    section = {"kind": "llm", "model": "sim-model", "base_url": server.base_url, **simulator}
    return deep_merge(DEFAULTS, {"simulator": section, "run": {"cache_dir": None}})


def load(name: str = SCENARIO, persona: str | None = None) -> Scenario:
    raw = yaml.safe_load((ROOT / "eval/scenarios" / name).read_text(encoding="utf-8"))
    if persona is not None:
        raw["persona"] = persona
    return Scenario.model_validate(raw)


def unscripted(turn: Turn) -> Turn:
    return turn.model_copy(update={"user_message": None})


def ask(
    params: dict[str, Any],
    case: Scenario,
    turn: Turn,
    history: list[TranscriptTurn] | None = None,
) -> UserMessage:
    simulator = make_simulator(params, ROOT)
    return asyncio.run(simulator.message(case, turn, history or [], 0))


def system_prompt(server: OpenAIServer, index: int = -1) -> str:
    return str(server.requests[index].json["messages"][0]["content"])


def test_scripted_user_message_is_sent_verbatim_without_a_call(server: OpenAIServer) -> None:
    case = load()
    message = ask(sim_params(server), case, case.turns[0])
    assert message == UserMessage(case.turns[0].user_message or "")
    assert server.request_count == 0


def test_persona_and_objective_reach_the_prompt(server: OpenAIServer) -> None:
    server.push(Reply(text="how much did they ask for on that line in fy2027?"))
    case = load()
    history = [
        TranscriptTurn(
            turn=1,
            user_message="Who owns the training line?",
            response="Tomasz Reyes-Lindqvist owns it.",
        )
    ]
    message = ask(sim_params(server), case, unscripted(case.turns[1]), history)
    assert message == UserMessage("how much did they ask for on that line in fy2027?")
    system = system_prompt(server)
    assert "data_analyst" in system and "Thinks in numbers" in system
    assert case.turns[1].objective in system and "message 2 of 2" in system
    assert "$9,800" not in json.dumps(server.requests[0].json)  # never the expected answer
    assert "Tomasz Reyes-Lindqvist owns it." in server.requests[0].json["messages"][1]["content"]


def test_custom_persona_is_used_and_not_part_of_identity(
    server: OpenAIServer, tmp_path: Path
) -> None:
    """A custom persona shapes the prompt of its own scenario (whose digest holds it), but
    adding a scenario with a new persona must not change the simulator's identity: that
    invalidated every stored transcript and made compare refuse."""
    persona = "a retired sea captain who distrusts computers"
    folder = tmp_path / "scenarios"
    folder.mkdir()
    params = sim_params(server)
    params["suite"]["scenarios"] = str(folder)
    before = make_simulator(params, ROOT).participant
    raw = yaml.safe_load((ROOT / "eval/scenarios" / SCENARIO).read_text(encoding="utf-8"))
    raw["persona"] = persona
    (folder / "custom.yaml").write_text(yaml.safe_dump(raw), encoding="utf-8")
    simulator = make_simulator(params, ROOT)
    assert simulator.participant == before
    assert simulator.participant.kind == "llm" and simulator.participant.model == "sim-model"
    server.push(Reply(text="Who's in charge of the training budget line, then?"))
    case = load(persona=persona)
    message = asyncio.run(simulator.message(case, unscripted(case.turns[0]), [], 0))
    assert message.fault is None
    assert persona in system_prompt(server)


def test_rephrase_scripted_calls_the_model_with_the_script(server: OpenAIServer) -> None:
    server.push(Reply(text="who owns the security training row?"))
    case = load()
    message = ask(sim_params(server, rephrase_scripted=True), case, case.turns[0])
    assert message.text == "who owns the security training row?"
    assert case.turns[0].user_message in system_prompt(server)


@pytest.mark.parametrize(
    ("reply", "fault"),
    [
        ("", "empty message"),
        ("   ", "empty message"),
        ("[END]", "premature stop"),
        ("Thanks, the conversation is over now.", "premature stop"),
        ("Goodbye!", "premature stop"),
        ("Ask the FY2027 request for that same line", "objective leaked"),
    ],
)
def test_faults_are_flagged(server: OpenAIServer, reply: str, fault: str) -> None:
    server.push(Reply(text=reply))
    case = load()
    turn = unscripted(case.turns[1])
    message = ask(sim_params(server), case, turn)
    assert message.fault is not None and message.fault.startswith(fault)
    assert message.text  # the agent always gets something to answer
    if not reply.strip():
        assert message.text == turn.objective


def test_natural_messages_are_not_faults() -> None:
    objective = "Get the gross margin for the same quarter"
    assert detect_fault("What was the gross margin for the same quarter?", objective) is None
    quoted = "Ask 'How many employees does Acme Corp have?'"
    assert detect_fault("How many employees does Acme Corp have?", quoted) is None
    assert clean_message('User: "how much is it?"\nAssistant: $9,800') == "how much is it?"


def test_unknown_prompt_placeholder_is_an_error(server: OpenAIServer, tmp_path: Path) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    text = (ROOT / "eval/prompts/simulator.md").read_text(encoding="utf-8")
    (prompts / "simulator.md").write_text(text.replace("{{objective}}", "{{goal}}"), "utf-8")
    simulator = LLMSimulator(sim_params(server, prompts=str(prompts)), ROOT)
    case = load()
    with pytest.raises(ValueError, match="goal"):
        simulator.messages(case, case.turns[0], [])
