"""Trace spans built while the evaluation still runs, in the MLflow child's idle time.

A conversation's spans, and the SQL rows they become, follow from its transcript alone,
and a transcript is final once stored. What else a trace holds (the run, the session id
from the run key, the judge's feedback, the scenario's outcome) is known only after
judging. So `agenteval run` names each transcript it stores (`BackgroundTracker.stored`),
and the child, which has imported MLflow and opened the store by then and would otherwise
wait for the hand-over, builds that conversation's spans (`SpanCache.add`). At logging
time a conversation whose file still holds the same bytes gets those spans
(`SpanCache.take`); any other is built then, as it would be without the cache. On the
500-conversation project of `bench/peer_inspect.py`, building the spans and their rows is
about 40 % of the CPU of the child's trace logging, which comes after the score step.

Held until logging, a conversation costs about 1.7 times its transcript's JSON in memory
(measured: +3 MB for 500 transcripts of 3.6 KB). So the cache stops taking conversations
once it holds `MAX_BYTES` of transcripts, and a very large run keeps the child's memory
bounded: the conversations beyond it are built at logging time.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.layout import transcript_path
from agenteval.schema.transcript import Transcript
from agenteval.tracking.conversations import TurnSpans, turn_spans

if TYPE_CHECKING:
    from agenteval.llm.scrub import Scrubber
    from agenteval.tracking.sql_traces import SqlTraceWriter

MAX_BYTES = 64 * 1024 * 1024  # of transcript JSON held: ~110 MB of objects


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class SpanCache:
    """Spans of stored conversations, built ahead for one experiment of one store.

    `writer`: the SQL writer of that store, which then also makes the spans' rows; None for
    a store reached over HTTP (its writer sends the spans themselves)."""

    def __init__(
        self,
        transcripts: Path,
        experiment_id: str,
        scrub: Scrubber,
        writer: SqlTraceWriter | None,
        limit: int = MAX_BYTES,
    ) -> None:
        self.transcripts, self.experiment_id = transcripts, experiment_id
        self.scrub, self.writer, self.limit = scrub, writer, limit
        self.entries: dict[tuple[str, int], tuple[bytes, Transcript, list[TurnSpans]]] = {}
        self.held = 0  # bytes of the transcripts held
        self.used = 0  # conversations logged with spans from here

    def add(self, scenario_id: str, iteration: int) -> None:
        """Build the spans of this stored transcript (skipped when unreadable or full)."""
        path = transcript_path(self.transcripts, scenario_id, iteration)
        try:
            data = path.read_bytes()
            if self.held + len(data) > self.limit:
                return
            transcript = Transcript.model_validate_json(data)
        except (OSError, ValueError):  # built at logging time instead, with its own error
            return
        self.held += len(data)
        made = turn_spans(transcript, self.scrub, self.experiment_id)
        if self.writer is not None:
            made = [TurnSpans(t.turn, t.root, self.writer.with_rows(t.built)) for t in made]
        self.entries[scenario_id, iteration] = (_digest(data), transcript, made)

    def take(self, scenario_id: str, iteration: int) -> tuple[Transcript, list[TurnSpans]] | None:
        """The transcript and its spans, if its file still holds the bytes they came from."""
        entry = self.entries.pop((scenario_id, iteration), None)
        if entry is None:
            return None
        digest, transcript, made = entry
        try:
            data = transcript_path(self.transcripts, scenario_id, iteration).read_bytes()
        except OSError:
            return None
        if _digest(data) != digest:
            return None
        self.used += 1
        return transcript, made


def span_cache(
    transcripts: Path, uri: str, experiment_id: str, params: dict[str, Any]
) -> SpanCache:
    """The cache for a run writing to `uri`, scrubbed as `log_evaluation` scrubs it."""
    from agenteval.tracking.provenance import secret_scrubber
    from agenteval.tracking.sql_traces import SqlTraceWriter
    from agenteval.tracking.traces_store import make_writer

    writer = make_writer(uri, experiment_id)
    sql = writer if isinstance(writer, SqlTraceWriter) else None
    return SpanCache(transcripts, experiment_id, secret_scrubber(params), sql)
