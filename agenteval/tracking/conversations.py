"""The conversations as MLflow traces: one session per scenario iteration, one trace per turn.

Each turn's trace holds the user message as input, the agent's reply as output and every tool
call as a TOOL child span. The judge's dimension scores are attached to it as feedback, the
scenario's ground truth as expectations, so MLflow's session view, trace search and
assessment filters work on agenteval runs as on any traced chat application.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.fileio import read_json
from agenteval.layout import load_transcript, load_verdict
from agenteval.llm.scrub import Scrubber
from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Participant, Transcript, TranscriptTurn
from agenteval.schema.verdict import TurnVerdict, Verdict
from agenteval.tracking.store import TrackingError

if TYPE_CHECKING:
    from mlflow import MlflowClient
    from mlflow.entities import AssessmentSource, LiveSpan

SESSION_KEY = "mlflow.trace.session"
USER_KEY = "mlflow.trace.user"
SOURCE_RUN_KEY = "mlflow.sourceRun"
MS = 1_000_000  # nanoseconds
SEARCH_PAGE = 500


@dataclass(frozen=True)
class Conversation:
    result: ScenarioResult
    transcript: Transcript
    verdict: Verdict | None
    item: SuiteItem | None

    @property
    def session(self) -> str:
        return f"{self.result.id}/{self.result.iteration}"


def load_conversations(
    suite_path: Path, transcripts: Path, verdicts: Path, card: Scorecard
) -> list[Conversation]:
    """Every scenario iteration of the scorecard that has at least one recorded turn."""
    items: dict[str, SuiteItem] = {}
    if suite_path.is_file():
        items = {i.scenario.id: i for i in Suite.model_validate(read_json(suite_path)).items}
    found: list[Conversation] = []
    for result in card.scenarios:
        transcript = load_transcript(transcripts, result.id, result.iteration)
        if transcript is None or not transcript.turns:
            continue
        verdict = load_verdict(verdicts, result.id, result.iteration)
        found.append(Conversation(result, transcript, verdict, items.get(result.id)))
    return found


def log_conversations(
    client: MlflowClient,
    experiment_id: str,
    run_id: str,
    conversations: list[Conversation],
    scrubber: Scrubber,
) -> int:
    """Log every turn as a trace of the run, then check the store holds exactly that many."""
    import mlflow

    sent = 0
    for conversation in conversations:
        writer = _TurnWriter(experiment_id, run_id, conversation, scrubber)
        for turn, start_ns, end_ns in _timeline(conversation.transcript):
            trace_id = writer.trace(turn, start_ns, end_ns)
            writer.assess(trace_id, turn.turn)
            sent += 1
    # Export is synchronous (see store.mlflow_client); flushing covers an exporter that was
    # configured before we switched async export off.
    mlflow.flush_trace_async_logging()
    stored = count_traces(client, experiment_id, run_id)
    if stored != sent:
        raise TrackingError(
            f"MLflow stored {stored} trace(s) for run {run_id} but {sent} were sent; "
            "the exporter dropped some (see the MLflow warnings above)"
        )
    return sent


def count_traces(client: MlflowClient, experiment_id: str, run_id: str) -> int:
    total, token = 0, None
    while True:
        page = client.search_traces(
            locations=[experiment_id],
            run_id=run_id,
            include_spans=False,
            max_results=SEARCH_PAGE,
            page_token=token,
        )
        total += len(page)
        token = page.token
        if not token:
            return total


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


class _TurnWriter:
    """Writes one conversation's turns: traces first, then their assessments."""

    def __init__(
        self,
        experiment_id: str,
        run_id: str,
        conversation: Conversation,
        scrubber: Scrubber,
    ) -> None:
        self.experiment_id = experiment_id
        self.run_id = run_id
        self.c = conversation
        self.scrub = scrubber
        verdict = conversation.verdict
        self.verdict_turns = {t.turn: t for t in verdict.turns} if verdict else {}

    def trace(self, turn: TranscriptTurn, start_ns: int, end_ns: int) -> str:
        import mlflow
        from mlflow.entities import NoOpSpan, SpanType

        result, transcript = self.c.result, self.c.transcript
        root = mlflow.start_span_no_context(
            name=f"{result.id} turn {turn.turn}",
            span_type=SpanType.AGENT,
            inputs={"messages": [{"role": "user", "content": self.scrub.scrub(turn.user_message)}]},
            attributes=self._turn_attributes(turn),
            tags={
                "agenteval.scenario_id": result.id,
                "agenteval.iteration": str(result.iteration),
                "agenteval.turn": str(turn.turn),
                "agenteval.category": result.category,
                "agenteval.status": result.status,
            },
            metadata={
                SESSION_KEY: self.c.session,
                USER_KEY: transcript.simulator.kind,
                SOURCE_RUN_KEY: self.run_id,
            },
            experiment_id=self.experiment_id,
            start_time_ns=start_ns,
        )
        if isinstance(root, NoOpSpan):
            raise TrackingError(
                "MLflow returned a no-op span (tracing is disabled in this process); "
                "the conversations cannot be logged"
            )
        if turn is transcript.turns[0] and transcript.setup_calls:
            # Setup (indexing documents) is not a tool call the agent chose: an attribute,
            # not a TOOL span, so MLflow's tool-call extraction and judges ignore it.
            fields = {"name", "arguments", "ok", "error"}
            setup = [c.model_dump(include=fields) for c in transcript.setup_calls]
            root.set_attribute("agenteval.setup", self.scrub.scrub(setup))
        self._tool_spans(root, turn, start_ns)
        failed = turn is transcript.turns[-1] and transcript.status != "COMPLETED"
        if failed:
            root.set_attribute("agenteval.error", self.scrub.scrub(transcript.error or ""))
        reply = self.scrub.scrub(turn.response)
        root.end(
            outputs={"messages": [{"role": "assistant", "content": reply}]},
            status="ERROR" if failed else "OK",
            end_time_ns=end_ns,
        )
        return str(root.trace_id)

    def _turn_attributes(self, turn: TranscriptTurn) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "agenteval.turn": turn.turn,
            "agenteval.latency_ms": turn.latency_ms,
            "agenteval.simulator_fault": turn.simulator_fault,
        }
        usage = turn.usage
        if usage and usage.input_tokens is not None and usage.output_tokens is not None:
            # The key MLflow reads token counts from, so its UI totals them per trace.
            attributes["mlflow.chat.tokenUsage"] = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
            }
        if usage and usage.cost_usd is not None:
            attributes["agenteval.cost_usd"] = usage.cost_usd
        return {k: v for k, v in attributes.items() if v is not None}

    def _tool_spans(self, root: LiveSpan, turn: TranscriptTurn, start_ns: int) -> None:
        import mlflow
        from mlflow.entities import SpanType

        cursor = start_ns
        for call in turn.tool_calls:
            span = mlflow.start_span_no_context(
                name=call.name,
                span_type=SpanType.TOOL,
                parent_span=root,
                inputs=self.scrub.scrub(call.arguments),
                start_time_ns=cursor,
            )
            span.set_attribute("agenteval.ok", call.ok)
            cursor += int((call.latency_ms or 0.0) * MS)
            outputs = call.result if call.ok else {"error": call.error, "result": call.result}
            span.end(
                outputs=self.scrub.scrub(outputs),
                status="OK" if call.ok else "ERROR",
                end_time_ns=cursor,
            )

    def assess(self, trace_id: str, turn: int) -> None:
        """The judge's dimension scores as feedback, the scenario's ground truth as expectations."""
        import mlflow

        verdict, verdict_turn = self.c.verdict, self.verdict_turns.get(turn)
        if verdict is not None and verdict_turn is not None:
            self._judge_feedback(trace_id, verdict.judge, verdict_turn)
        source = self._ground_truth_source()
        for name, value in self._expectations(turn).items():
            mlflow.log_expectation(trace_id=trace_id, name=name, value=value, source=source)

    def _judge_feedback(self, trace_id: str, judge: Participant, verdict: TurnVerdict) -> None:
        import mlflow

        named = judge.model_dump(include={"kind", "model", "protocol", "config_digest"})
        metadata = {f"judge.{k}": str(v) for k, v in named.items() if v is not None}
        for dimension, score in verdict.scores.items():
            if score is None:  # the judge could not judge it: no feedback, not a zero
                continue
            kind = verdict.judged_by.get(dimension) or judge.kind
            reason = verdict.reasons.get(dimension)
            mlflow.log_feedback(
                trace_id=trace_id,
                name=dimension,
                value=float(score),
                rationale=self.scrub.scrub_text(reason) if reason else None,
                source=judge_source(judge, kind),
                metadata=metadata,
            )

    def _ground_truth_source(self) -> AssessmentSource:
        from mlflow.entities import AssessmentSource

        item = self.c.item
        origin = f"{item.path}@{item.digest[:12]}" if item else self.c.result.id
        return AssessmentSource(source_type="HUMAN", source_id=f"scenario:{origin}")

    def _expectations(self, turn_number: int) -> dict[str, Any]:
        item = self.c.item
        if item is None:
            return {}
        turn = next((t for t in item.scenario.turns if t.turn == turn_number), None)
        if turn is None:
            return {}
        truth = turn.ground_truth
        found: dict[str, Any] = {
            "success_criteria": turn.success_criteria,
            "expected_tools": turn.expected_tools or None,
            "forbidden_tools": item.scenario.forbidden_for(turn) or None,
        }
        if truth is not None:
            found["expected_answer"] = truth.expected_answer
            found["answer_unknown"] = True if truth.answer_unknown else None
            found["expected_phrases"] = truth.expected_phrases or None
            found["expected_behavior"] = truth.expected_behavior
        return {k: self.scrub.scrub(v) for k, v in found.items() if v is not None}


def judge_source(judge: Participant, kind: str) -> AssessmentSource:
    """Names the judge: kind, model (when it is this dimension's judge) and config digest."""
    from mlflow.entities import AssessmentSource

    source_type = {"code": "CODE", "human": "HUMAN"}.get(kind, "LLM_JUDGE")
    model = judge.model if kind == judge.kind and judge.model else "-"
    digest = (judge.config_digest or "-")[:12]
    return AssessmentSource(source_type=source_type, source_id=f"{kind}:{model}:{digest}")
