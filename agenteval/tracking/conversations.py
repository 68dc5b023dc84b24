"""The conversations as MLflow traces: one session per scenario iteration, one trace per turn.

Each turn's trace holds the user message as input, the agent's reply as output and every tool
call as a TOOL child span. The judge's dimension scores are attached to it as feedback, the
scenario's ground truth as expectations, and the first turn's trace carries the scenario's
status, score and the judge's root cause as session-level feedback, so MLflow's session
view, trace search and assessment filters work on agenteval runs as on any traced chat
application. Session ids are unique per run (`records.session_id`): a scenario evaluated
by three runs is three sessions of its own turns, never one session of all of them.

Conversations are read one at a time (`iter_conversations`) and turned into `TurnTrace`
records (`turn_traces`), which `tracking.traces` logs through MLflow's tracing API.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.layout import load_transcript, load_verdict
from agenteval.llm.scrub import Scrubber
from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Transcript, TranscriptTurn
from agenteval.schema.verdict import Verdict
from agenteval.tracking import assessments
from agenteval.tracking.records import (
    METADATA_CHARS,
    SESSION_KEY,
    SIMULATION_GOAL_KEY,
    SIMULATION_PERSONA_KEY,
    SOURCE_RUN_KEY,
    TOKEN_USAGE_KEY,
    USER_KEY,
    SpanSpec,
    TurnTrace,
    comparison_key,
    cut,
    scenario_label,
    session_id,
)

MS = 1_000_000  # nanoseconds


@dataclass(frozen=True)
class Conversation:
    result: ScenarioResult
    transcript: Transcript
    item: SuiteItem | None
    verdict_turns: dict[int, Any]  # turn -> TurnVerdict
    judge: Any  # the verdict's judge Participant, None when not judged
    session: str  # unique per run: see records.session_id
    verdict: Verdict | None = None


def iter_conversations(
    items: Sequence[SuiteItem],
    transcripts: Path,
    verdicts: Path,
    card: Scorecard,
    run_id: str,
) -> Iterator[Conversation]:
    """Every scenario iteration of the scorecard that has at least one recorded turn, read
    from disk one at a time so a 10,000-conversation run never sits in memory at once;
    `items` are the suite's (for the ground truth)."""
    by_id = {i.scenario.id: i for i in items}
    for result in card.scenarios:
        key = result.id, result.iteration
        transcript = load_transcript(transcripts, *key)
        if transcript is None or not transcript.turns:
            continue
        verdict = load_verdict(verdicts, *key)
        turns = {t.turn: t for t in verdict.turns} if verdict else {}
        judge = verdict.judge if verdict else None
        session = session_id(run_id, *key)
        yield Conversation(result, transcript, by_id.get(result.id), turns, judge, session, verdict)


def turn_traces(conversation: Conversation, run_id: str, scrub: Scrubber) -> list[TurnTrace]:
    """One trace per turn, with its tool spans, feedback and expectations, in turn order;
    the first turn's trace also carries the scenario's outcome as session-level feedback."""
    transcript, result = conversation.transcript, conversation.result
    traces = []
    for index, (turn, duration_ns) in enumerate(_durations(transcript)):
        root, tools = _spans(transcript, turn, duration_ns, scrub)
        found = []
        verdict_turn = conversation.verdict_turns.get(turn.turn)
        if conversation.judge is not None and verdict_turn is not None:
            found += assessments.feedback(conversation.judge, verdict_turn, scrub)
        found += assessments.expectations(conversation.item, turn.turn, scrub)
        if index == 0:
            found += assessments.session_feedback(
                result, conversation.verdict, conversation.session, scrub
            )
        metadata = {SESSION_KEY: conversation.session, USER_KEY: transcript.simulator.kind,
                    SOURCE_RUN_KEY: run_id, **comparison_metadata(conversation, scrub)}  # fmt: skip
        traces.append(
            TurnTrace(
                root=root,
                tools=tools,
                tags=_tags(conversation, turn),
                metadata=metadata,
                request_preview=comparison_key(
                    transcript.scenario_id, transcript.iteration, turn.turn
                ),
                response_preview=cut(scrub.scrub_text(turn.response)),
                assessments=found,
            )
        )
    return traces


def comparison_metadata(c: Conversation, scrub: Scrubber) -> dict[str, str]:
    """What pairs this conversation with the same scenario iteration of another run in
    MLflow's comparison of evaluation runs (see `records.SIMULATION_GOAL_KEY`): the goal
    names the scenario and iteration (unique in a run, equal across runs), the persona is
    the scenario's simulated user."""
    transcript = c.transcript
    goal = scenario_label(transcript.scenario_id, transcript.iteration)
    persona = c.item.scenario.persona if c.item else transcript.simulator.kind
    persona = cut(scrub.scrub_text(persona), METADATA_CHARS) or transcript.simulator.kind
    return {SIMULATION_GOAL_KEY: goal, SIMULATION_PERSONA_KEY: persona}


def _tags(c: Conversation, turn: TranscriptTurn) -> dict[str, str]:
    transcript = c.transcript
    return {
        "agenteval.scenario_id": transcript.scenario_id,
        "agenteval.iteration": str(transcript.iteration),
        "agenteval.turn": str(turn.turn),
        "agenteval.category": c.item.scenario.category if c.item else c.result.category,
        "agenteval.status": str(c.result.status),
    }


def _durations(transcript: Transcript) -> Iterator[tuple[TranscriptTurn, int]]:
    """(turn, duration_ns) from the recorded latencies, never shorter than the turn's tool
    calls together. An in-process agent records none (a function call's time says nothing of
    an agent's latency): its turns last 0, not an invented 1 ms that MLflow's overview then
    charted as the agent's latency."""
    for turn in transcript.turns:
        tools_ms = sum(c.latency_ms or 0.0 for c in turn.tool_calls)
        yield turn, int(max(turn.latency_ms or 0.0, tools_ms) * MS)


def _spans(
    transcript: Transcript, turn: TranscriptTurn, duration_ns: int, scrub: Scrubber
) -> tuple[SpanSpec, list[SpanSpec]]:
    attributes = _turn_attributes(turn)
    if turn is transcript.turns[0] and transcript.setup_calls:
        # Setup (indexing documents) is not a tool call the agent chose: an attribute, not a
        # TOOL span, so MLflow's tool-call extraction and judges ignore it.
        fields = {"name", "arguments", "ok", "error"}
        setup = [call.model_dump(include=fields) for call in transcript.setup_calls]
        attributes["agenteval.setup"] = scrub.scrub(setup)
    if transcript.started_at and turn is transcript.turns[0]:
        attributes["agenteval.started_at"] = transcript.started_at  # when it really ran
    failed = turn is transcript.turns[-1] and transcript.status != "COMPLETED"
    if failed:
        attributes["agenteval.error"] = scrub.scrub_text(transcript.error or "")
    root = SpanSpec(
        name=f"{transcript.scenario_id} turn {turn.turn}",
        span_type="AGENT",
        start_ns=0,
        end_ns=duration_ns,
        inputs={"messages": [{"role": "user", "content": scrub.scrub(turn.user_message)}]},
        outputs={"messages": [{"role": "assistant", "content": scrub.scrub(turn.response)}]},
        ok=not failed,
        attributes=attributes,
    )
    tools, cursor = [], 0
    for call in turn.tool_calls:
        begin, cursor = cursor, cursor + int((call.latency_ms or 0.0) * MS)
        outputs = call.result if call.ok else {"error": call.error, "result": call.result}
        tools.append(
            SpanSpec(
                name=call.name,
                span_type="TOOL",
                start_ns=begin,
                end_ns=cursor,
                inputs=scrub.scrub(call.arguments),
                outputs=scrub.scrub(outputs),
                ok=call.ok,
                attributes={"agenteval.ok": call.ok},
            )
        )
    return root, tools


def _turn_attributes(turn: TranscriptTurn) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "agenteval.turn": turn.turn,
        "agenteval.latency_ms": turn.latency_ms,
        "agenteval.simulator_fault": turn.simulator_fault,
    }
    usage = turn.usage
    if usage and usage.input_tokens is not None and usage.output_tokens is not None:
        # The key MLflow reads token counts from, so its UI totals them per trace.
        attributes[TOKEN_USAGE_KEY] = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }
    if usage and usage.cost_usd is not None:
        attributes["agenteval.cost_usd"] = usage.cost_usd
    return {k: v for k, v in attributes.items() if v is not None}
