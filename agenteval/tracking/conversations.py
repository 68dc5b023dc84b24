"""The conversations as MLflow traces: one session per scenario iteration, one trace per turn.

Each turn's trace holds the user message as input, the agent's reply as output and every tool
call as a TOOL child span. The judge's dimension scores are attached to it as feedback, the
scenario's ground truth as expectations, and the first turn's trace carries the scenario's
status, score and the judge's root cause as session-level feedback, so MLflow's session
view, trace search and assessment filters work on agenteval runs as on any traced chat
application. Session ids are unique per run (`records.session_id`): a scenario evaluated
by three runs is three sessions of its own turns, never one session of all of them.

Conversations are read one at a time (`iter_conversations`) and turned into finished trace
records (`turn_records`); `tracking.traces_store` writes them in batches. A trace is made
of two parts: what the transcript, its verdict and the scenario say (`early_records`), and
what only the scorecard and the run's links add (`late_parts`: the scenario's status tag,
the agent's LoggedModel, the session-level feedback). `turn_records` joins them; the
traces `agenteval run` writes while it runs (`tracking.stream`) get the late part once
the scorecard exists.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence, Set
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.layout import load_transcript, load_verdict
from agenteval.llm.scrub import Scrubber
from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Transcript, TranscriptTurn
from agenteval.schema.verdict import Verdict
from agenteval.tracking import assessments
from agenteval.tracking.records import (
    MODEL_ID_KEY,
    SESSION_KEY,
    SOURCE_RUN_KEY,
    TOKEN_USAGE_KEY,
    USER_KEY,
    BuiltSpans,
    SpanSpec,
    TraceRecord,
    TraceSpec,
    build_spans,
    build_trace,
    session_id,
)

if TYPE_CHECKING:
    from mlflow.entities import Assessment

MS = 1_000_000  # nanoseconds


@dataclass(frozen=True)
class Conversation:
    result: ScenarioResult | None  # None while it is streamed: there is no scorecard yet
    transcript: Transcript
    item: SuiteItem | None
    verdict_turns: dict[int, Any]  # turn -> TurnVerdict
    judge: Any  # the verdict's judge Participant, None when not judged
    session: str  # unique per run: see records.session_id
    verdict: Verdict | None = None


@dataclass(frozen=True)
class TurnSpans:
    """One turn's root span spec and its trace's built spans."""

    turn: TranscriptTurn
    root: SpanSpec
    built: BuiltSpans


@dataclass(frozen=True)
class Late:
    """What one turn's trace takes from the scorecard and the run's links, for a trace whose
    other rows are already stored (`SqlTraceWriter.write_late`)."""

    trace_id: str
    request_time_ms: int
    tags: dict[str, str]
    metadata: dict[str, str]
    assessments: list[Assessment]


def iter_conversations(
    items: Sequence[SuiteItem],
    transcripts: Path,
    verdicts: Path,
    card: Scorecard,
    run_id: str,
    skip: Set[tuple[str, int]] = frozenset(),
) -> Iterator[Conversation]:
    """Every scenario iteration of the scorecard that has at least one recorded turn, read
    from disk one at a time so a 10,000-conversation run never sits in memory at once;
    `items` are the suite's (for the ground truth); `skip`: those already stored whole."""
    by_id = {i.scenario.id: i for i in items}
    for result in card.scenarios:
        key = result.id, result.iteration
        if key in skip:
            continue
        transcript = load_transcript(transcripts, *key)
        if transcript is None or not transcript.turns:
            continue
        verdict = load_verdict(verdicts, *key)
        turns = {t.turn: t for t in verdict.turns} if verdict else {}
        judge = verdict.judge if verdict else None
        session = session_id(run_id, *key)
        yield Conversation(result, transcript, by_id.get(result.id), turns, judge, session, verdict)


def turn_records(
    conversation: Conversation,
    experiment_id: str,
    run_id: str,
    scrub: Scrubber,
    model_id: str | None = None,
) -> list[TraceRecord]:
    """One finished trace per turn, with its tool spans, feedback and expectations; the first
    turn's trace also carries the scenario's outcome as session-level feedback. `model_id`
    links every trace to the agent's LoggedModel."""
    early = early_records(conversation, experiment_id, run_id, scrub)
    traces = [(r.info.trace_id, r.info.request_time) for r in early]
    late = late_parts(conversation, traces, scrub, model_id)
    return [with_late(record, part) for record, part in zip(early, late, strict=True)]


def early_records(
    conversation: Conversation, experiment_id: str, run_id: str, scrub: Scrubber
) -> list[TraceRecord]:
    """Each turn's trace without its late part: spans, tags, metadata, the judge's feedback
    and the scenario's expectations, all known once the verdict is stored."""
    records = []
    for made in turn_spans(conversation.transcript, scrub, experiment_id):
        spec = _trace_spec(conversation, made.turn, experiment_id, run_id, scrub)
        records.append(build_trace(spec, made.root, made.built))
    return records


def late_parts(
    conversation: Conversation,
    traces: Sequence[tuple[str, int]],
    scrub: Scrubber,
    model_id: str | None,
) -> list[Late]:
    """The late part of each trace of its `early_records` ((trace id, request time), in turn
    order): the status the scorecard gives, the LoggedModel, and on the first turn's trace
    the session-level feedback."""
    result = conversation.result
    assert result is not None, "the late part comes from the scorecard"
    parts = []
    for index, (trace_id, request_time) in enumerate(traces):
        found = []
        if index == 0:
            found = assessments.session_feedback(
                result, conversation.verdict, conversation.session, scrub
            )
        metadata = {MODEL_ID_KEY: model_id} if model_id else {}
        tags = {"agenteval.status": str(result.status)}
        parts.append(Late(trace_id, request_time, tags, metadata, found))
    return parts


def with_late(record: TraceRecord, late: Late) -> TraceRecord:
    """`record` made whole: its late part added to its info (the one-shot way to write it)."""
    info = record.info
    info.tags.update(late.tags)
    info.trace_metadata.update(late.metadata)
    for assessment in late.assessments:
        assessment.trace_id = info.trace_id
    info.assessments = list(info.assessments) + list(late.assessments)
    return record


def turn_spans(transcript: Transcript, scrub: Scrubber, experiment_id: str) -> list[TurnSpans]:
    """Every turn's spans, built (under new trace ids) from the transcript alone."""
    made = []
    for turn, start_ns, end_ns in _timeline(transcript):
        root, tools = _spans(transcript, turn, start_ns, end_ns, scrub)
        made.append(TurnSpans(turn, root, build_spans(root, tools, experiment_id)))
    return made


def _timeline(transcript: Transcript) -> Iterator[tuple[TranscriptTurn, int, int]]:
    """(turn, start_ns, end_ns) from the recorded start and latencies.

    MLflow orders a session's turns by trace start time, so every turn starts at least 1 ms
    after the previous one even when latencies were not recorded.
    """
    cursor = _start_ns(transcript.started_at)
    cursor += int(sum(c.latency_ms or 0.0 for c in transcript.setup_calls) * MS)
    for turn in transcript.turns:
        tools_ms = sum(c.latency_ms or 0.0 for c in turn.tool_calls)
        duration = int(max(turn.latency_ms or 0.0, tools_ms, 1.0) * MS)
        yield turn, cursor, cursor + duration
        cursor += duration + MS


def _start_ns(started_at: str | None) -> int:
    if started_at:
        try:
            return int(datetime.fromisoformat(started_at).timestamp() * 1e9)
        except ValueError:
            pass
    return int(datetime.now().timestamp() * 1e9)


def _trace_spec(
    c: Conversation,
    turn: TranscriptTurn,
    experiment_id: str,
    run_id: str,
    scrub: Scrubber,
) -> TraceSpec:
    transcript = c.transcript
    found = []
    verdict_turn = c.verdict_turns.get(turn.turn)
    if c.judge is not None and verdict_turn is not None:
        found += assessments.feedback(c.judge, verdict_turn, scrub)
    found += assessments.expectations(c.item, turn.turn, scrub)
    metadata = {SESSION_KEY: c.session, USER_KEY: transcript.simulator.kind,
                SOURCE_RUN_KEY: run_id}  # fmt: skip
    category = c.item.scenario.category if c.item else (c.result.category if c.result else "")
    return TraceSpec(
        name=f"{transcript.scenario_id} turn {turn.turn}",
        experiment_id=experiment_id,
        tags={
            "agenteval.scenario_id": transcript.scenario_id,
            "agenteval.iteration": str(transcript.iteration),
            "agenteval.turn": str(turn.turn),
            "agenteval.category": category,
        },
        metadata=metadata,
        request_preview=scrub.scrub_text(turn.user_message),
        response_preview=scrub.scrub_text(turn.response),
        assessments=found,
    )


def _spans(
    transcript: Transcript, turn: TranscriptTurn, start_ns: int, end_ns: int, scrub: Scrubber
) -> tuple[SpanSpec, list[SpanSpec]]:
    attributes = _turn_attributes(turn)
    if turn is transcript.turns[0] and transcript.setup_calls:
        # Setup (indexing documents) is not a tool call the agent chose: an attribute, not a
        # TOOL span, so MLflow's tool-call extraction and judges ignore it.
        fields = {"name", "arguments", "ok", "error"}
        setup = [call.model_dump(include=fields) for call in transcript.setup_calls]
        attributes["agenteval.setup"] = scrub.scrub(setup)
    failed = turn is transcript.turns[-1] and transcript.status != "COMPLETED"
    if failed:
        attributes["agenteval.error"] = scrub.scrub_text(transcript.error or "")
    root = SpanSpec(
        name=f"{transcript.scenario_id} turn {turn.turn}",
        span_type="AGENT",
        start_ns=start_ns,
        end_ns=end_ns,
        inputs={"messages": [{"role": "user", "content": scrub.scrub(turn.user_message)}]},
        outputs={"messages": [{"role": "assistant", "content": scrub.scrub(turn.response)}]},
        ok=not failed,
        attributes=attributes,
    )
    tools, cursor = [], start_ns
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
