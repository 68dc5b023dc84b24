"""Simulator `llm`: a model writes each user message from the turn objective and the persona.

It is a separate model call from the judge and its prompt never shows the ground truth. A
turn with a scripted `user_message` is sent verbatim without a call. The simulator checks its
own output and flags the faults it can recognise (an empty message, the objective copied
verbatim, the conversation ended early, and `simulators.checks`: the expected answer said
anyway, the assistant's voice) so that scoring makes the scenario SIMULATOR_ERROR, never
the agent's failure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of
from agenteval.llm import Message, SystemMessage
from agenteval.llm import UserMessage as ChatUserMessage
from agenteval.llm.config import EndpointConfig
from agenteval.llm.prompts import load_prompt, split_sections
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.transcript import Participant, TranscriptTurn
from agenteval.simulators.base import UserMessage
from agenteval.simulators.checks import STOP_MARKERS, check_message

PERSONA_MARKER = "### "
PERSONAS_HEADING = re.compile(r"^##[ \t]+Personas[ \t]*$", re.MULTILINE)
CUSTOM_PERSONA = "a custom persona, described by the scenario as: {persona}"

# Wording the harness adds around the prompt file's instructions.
DOCUMENTS_NOTE = "Files the person has already shared with the assistant: {names}."
SCRIPTED_HINT = (
    'The scenario scripts this message as: "{text}". Say the same thing in the person\'s own '
    "words, in character."
)
CONVERSATION_REQUEST = "Conversation so far:\n{history}\n\nWrite the person's next message."
NO_HISTORY = "(nothing yet: this is the first message)"
# Agent replies shown to the simulator are trimmed: it needs the gist to react, not every
# passage, and long histories make small simulator models lose the thread.
MAX_REPLY_CHARS = 1200

# A run of this many words shared with the objective is a verbatim copy, not a paraphrase:
# natural rephrasings of objectives share short phrases ("the gross margin") but not whole
# clauses.
LEAK_RUN_WORDS = 12
# Objectives shorter than this are too generic for "contains the whole objective" to mean
# a copy (e.g. "List documents").
LEAK_MIN_OBJECTIVE_WORDS = 4
QUOTED = re.compile(r"[\"“'‘][^\"”'’]{3,}[\"”'’]")
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
ROLE_LABEL = re.compile(r"^\s*(?:user|message|person|customer)\s*:\s*", re.IGNORECASE)
ASSISTANT_LABEL = re.compile(r"\n\s*(?:assistant|agent)\s*:", re.IGNORECASE)


class LLMSimulator:
    writes_messages = True

    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params.get("simulator") or {}
        self.config = EndpointConfig.from_params(params, "simulator", root)
        self.prompt = load_prompt(root / section.get("prompts", "eval/prompts") / "simulator.md")
        parts = PERSONAS_HEADING.split(self.prompt.text, maxsplit=1)
        self.template = parts[0]
        self.personas = split_sections(parts[1], PERSONA_MARKER)[1] if len(parts) > 1 else {}
        self.rephrase_scripted = bool(section.get("rephrase_scripted", False))
        endpoint = self.config.endpoint
        # Only what shapes every message: the personas of scenario files are part of each
        # scenario's own digest, so adding a scenario leaves stored transcripts valid.
        identity = {
            "endpoint": self.config.describe(),
            "prompt_sha256": self.prompt.sha256,
            "rephrase_scripted": self.rephrase_scripted,
            "code": code_of(__name__),
        }
        self.participant = Participant(
            kind="llm",
            model=endpoint.model,
            protocol=endpoint.protocol,
            config_digest=digest_of(identity),
            details=identity | {"personas": sorted(self.personas)},
        )

    async def message(
        self,
        scenario: Scenario,
        turn: Turn,
        history: list[TranscriptTurn],
        iteration: int,
        seed: int = 0,
    ) -> UserMessage:
        if turn.user_message and not self.rephrase_scripted:
            return UserMessage(turn.user_message)
        client = await self.config.client()
        completion = await client.complete(
            self.messages(scenario, turn, history), iteration=iteration, seed=seed
        )
        text = clean_message(completion.text)
        fault = detect_fault(text, turn.objective) or checked_fault(text, scenario, turn)
        if not text:
            # The agent still needs something to answer; the turn is not charged to it.
            text = turn.user_message or turn.objective
        return UserMessage(text, fault)

    def persona_description(self, persona: str) -> str:
        known = self.personas.get(persona)
        return " ".join(known.split()) if known else CUSTOM_PERSONA.format(persona=persona)

    def messages(
        self, scenario: Scenario, turn: Turn, history: Sequence[TranscriptTurn]
    ) -> list[Message]:
        documents = [Path(d.path).name for d in scenario.setup.index_documents]
        values = {
            "persona_name": scenario.persona_of(turn),
            "persona_description": self.persona_description(scenario.persona_of(turn)),
            "objective": turn.objective,
            "turn_number": turn.turn,
            "turn_count": len(scenario.turns),
            "documents": DOCUMENTS_NOTE.format(names=", ".join(documents)) if documents else "",
            "scripted_hint": (
                SCRIPTED_HINT.format(text=turn.user_message)
                if turn.user_message and self.rephrase_scripted
                else ""
            ),
        }
        system = self.prompt.render(values, self.template)
        return [
            SystemMessage(content=re.sub(r"\n{3,}", "\n\n", system)),
            ChatUserMessage(content=CONVERSATION_REQUEST.format(history=format_history(history))),
        ]


def format_history(history: Sequence[TranscriptTurn]) -> str:
    if not history:
        return NO_HISTORY
    lines = []
    for said in history:
        reply = said.response.strip()
        if len(reply) > MAX_REPLY_CHARS:
            reply = reply[:MAX_REPLY_CHARS] + " [...]"
        lines.append(f"Person: {said.user_message.strip()}\nAssistant: {reply}")
    return "\n\n".join(lines)


def clean_message(text: str) -> str:
    """The message alone: no role label, no wrapping quotes, no invented assistant reply."""
    text = ASSISTANT_LABEL.split(text, maxsplit=1)[0]
    text = ROLE_LABEL.sub("", text.strip()).strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        text = text[1:-1].strip()
    return text


def _words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def _longest_common_run(a: Sequence[str], b: Sequence[str]) -> int:
    best = 0
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0] * (len(b) + 1)
        for j, y in enumerate(b, start=1):
            if x == y:
                current[j] = previous[j - 1] + 1
                best = max(best, current[j])
        previous = current
    return best


def leaked_objective(text: str, objective: str) -> bool:
    """True when the message copies the objective instead of phrasing it as the person.

    Quoted parts of the objective are what the person is meant to say, so they may be
    copied; the rest (the instruction around them) may not.
    """
    goal = _words(QUOTED.sub(" ", objective))
    said = _words(text)
    if len(goal) < LEAK_MIN_OBJECTIVE_WORDS or not said:
        return False
    run = _longest_common_run(goal, said)
    return run >= len(goal) or run >= LEAK_RUN_WORDS


def checked_fault(text: str, scenario: Scenario, turn: Turn) -> str | None:
    """What `simulators.checks` holds against the message: the expected answer said, the
    assistant's voice, the conversation ended before the scenario's last turn."""
    truth = turn.ground_truth
    expected = [truth.expected_answer] if truth is not None and truth.expected_answer else []
    last = turn.turn == max(t.turn for t in scenario.turns)
    found = [f for f in check_message(text, turn.objective, expected, last)
             if f.check != "asks_needed"]  # fmt: skip
    return "; ".join(str(f) for f in found) or None


def detect_fault(text: str, objective: str) -> str | None:
    if not text.strip():
        return "empty message"
    marker = STOP_MARKERS.search(text)
    if marker:
        return f"premature stop: {marker.group(0)!r}"
    if leaked_objective(text, objective):
        return "objective leaked verbatim into the message"
    return None
