"""Traces written while `agenteval run` runs, by its MLflow child, so that what is left to
log after the score step is only what the scorecard adds.

A conversation's traces are final once its verdict is stored, except for their late part
(`conversations.late_parts`: the scenario's status, the link to the agent's LoggedModel,
the session-level feedback), which comes from the scorecard. So `agenteval run` names each
conversation whose verdict it writes (`BackgroundTracker.graded`), and the child, which
has imported MLflow and opened the store by then, writes that conversation's traces
(`TraceStream.add`), `BATCH` conversations per transaction, into a run it creates for them
(RUNNING, without a run key yet). At the hand-over `log_evaluation` adopts that run
(`adopt`) and, for every conversation whose transcript and verdict still hold the bytes its
traces came from, adds only the late rows (`finish`); any other conversation's traces are
deleted and it is logged whole, as it would be without the stream. The count check after
the last write covers both.

If a run with the same key turns out to be logged already, the streamed run is deleted
(`drop`); an evaluation that is abandoned leaves it FAILED without traces (`discard`), as
a run abandoned after the hand-over does. Only a SQL store is streamed to (its rows are
written directly, `sql_traces`); a tracking server over HTTP is logged at the hand-over.
"""

from __future__ import annotations

import contextlib
import hashlib
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agenteval.layout import Layout, transcript_path
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict
from agenteval.tracking.conversations import (
    Conversation,
    Late,
    early_records,
    late_parts,
    with_late,
)
from agenteval.tracking.records import TraceRecord, session_id
from agenteval.tracking.traces_store import TraceCounts

if TYPE_CHECKING:
    from agenteval.llm.scrub import Scrubber
    from agenteval.schema.scorecard import Scorecard
    from agenteval.schema.suite import SuiteItem
    from agenteval.tracking.sql_traces import SqlTraceWriter

# Conversations per transaction while the agent runs: each commit costs about as much as
# writing a few conversations, and the last unwritten batch waits for the hand-over.
BATCH = 32
DELETE_CHUNK = 100  # trace ids per delete request (MLflow's own limit is per call)

Key = tuple[str, int]


@dataclass(frozen=True)
class Streamed:
    """A conversation whose traces are stored: what they were built from, and each turn's
    trace id and start (for its late part)."""

    digest: bytes  # of the transcript's and the verdict's bytes
    conversation: Conversation
    traces: list[tuple[str, int]]
    counts: TraceCounts


def _digest(*parts: bytes) -> bytes:
    found = hashlib.blake2b(digest_size=16)
    for part in parts:
        found.update(len(part).to_bytes(8, "big"))
        found.update(part)
    return found.digest()


def _stored(layout: Layout, key: Key) -> tuple[bytes, bytes] | None:
    """The bytes of the stored transcript and verdict of `key`; None if either is missing."""
    try:
        text = transcript_path(layout.transcripts, *key).read_bytes()
        return text, transcript_path(layout.verdicts, *key).read_bytes()
    except OSError:
        return None


def _digest_of(stored: tuple[bytes, bytes] | None) -> bytes | None:
    return _digest(*stored) if stored is not None else None


@dataclass(frozen=True)
class Finished:
    """What the stream stored of the run, whole: the conversations and their counts."""

    keys: frozenset[Key]
    counts: TraceCounts
    probe: TraceRecord | None


class TraceStream:
    """The traces of one `agenteval run` (its folder `layout`) written as it runs, into one
    experiment of a SQL store."""

    def __init__(
        self, layout: Layout, uri: str, experiment_id: str, scrub: Scrubber, writer: SqlTraceWriter
    ) -> None:
        self.layout, self.uri, self.experiment_id = layout, uri, experiment_id
        self.scrub, self.writer = scrub, writer
        self.run_id: str | None = None
        self.adopted = False  # log_evaluation made it the evaluation's run
        self.items: dict[str, SuiteItem] | None = None
        self.entries: dict[Key, Streamed] = {}
        self.pending: list[tuple[Key, Streamed, list[TraceRecord]]] = []
        self.probe: tuple[Key, TraceRecord] | None = None
        self.broken = False  # a write failed: the hand-over logs the run without the stream

    def add(self, scenario_id: str, iteration: int) -> None:
        """Store this graded conversation's traces (in the next batch)."""
        if self.broken:
            return
        try:
            self._add((scenario_id, iteration))
        except Exception:  # the store refused: log_evaluation reports why, at the hand-over
            self.broken = True

    def _add(self, key: Key) -> None:
        item = self._suite().get(key[0])
        stored = _stored(self.layout, key) if item is not None else None
        if stored is None:
            return  # not in the suite or not stored: logged at the hand-over, if at all
        try:
            transcript = Transcript.model_validate_json(stored[0])
            verdict = Verdict.model_validate_json(stored[1])
        except ValueError:  # logged at the hand-over instead, with its own error
            return
        if not transcript.turns:
            return  # nothing was said: no trace
        digest = _digest(*stored)
        run_id = self.run_id or self._start()
        turns = {t.turn: t for t in verdict.turns}
        session = session_id(run_id, *key)
        conversation = Conversation(None, transcript, item, turns, verdict.judge, session, verdict)
        records = early_records(conversation, self.experiment_id, run_id, self.scrub)
        traces = [(r.info.trace_id, r.info.request_time) for r in records]
        self.pending.append((key, Streamed(digest, conversation, traces, TraceCounts.of(records)),
                             records))  # fmt: skip
        if len(self.pending) >= BATCH:
            self.flush()

    def flush(self) -> None:
        """Write the conversations added since the last batch, in one transaction."""
        if not self.pending or self.broken:
            return
        pending, self.pending = self.pending, []
        try:
            self.writer.write([r for _, _, records in pending for r in records])
        except Exception:
            self.broken = True
            return
        for key, entry, records in pending:
            self.entries[key] = entry
            self.probe = self.probe or (key, records[0])

    def _suite(self) -> dict[str, SuiteItem]:
        if self.items is None:
            from agenteval.layout import load_suite

            self.items = {i.scenario.id: i for i in load_suite(self.layout).items}
        return self.items

    def _start(self) -> str:
        from agenteval.tracking.store import mlflow_client

        with mlflow_client(self.uri) as client:
            self.run_id = str(client.create_run(self.experiment_id).info.run_id)
        return self.run_id

    def adopt(self, key: str, basis: str, name: str) -> str | None:
        """This run's id once its key is known (None when nothing was streamed): named, and
        tagged with the key as `run._run_for` tags a new run."""
        from agenteval.tracking.store import RUN_KEY_TAG, mlflow_client

        if self.run_id is None:
            return None
        self.adopted = True
        with mlflow_client(self.uri) as client:
            client.update_run(self.run_id, name=name)
            client.set_tag(self.run_id, RUN_KEY_TAG, key)
            client.set_tag(self.run_id, f"{RUN_KEY_TAG}.basis", basis)
        return self.run_id

    def finish(self, card: Scorecard, model_id: str | None) -> Finished:
        """The late rows of every streamed conversation still as stored; the traces of any
        other streamed conversation deleted (the caller logs those whole)."""
        self.flush()
        results = {(r.id, r.iteration): r for r in card.scenarios}
        late: list[Late] = []
        kept: dict[Key, list[Late]] = {}
        gone: list[str] = []
        for key, entry in self.entries.items():
            result = results.get(key)
            now = _digest_of(_stored(self.layout, key)) if result is not None else None
            if now != entry.digest:  # changed since, gone, or not in the scorecard
                gone += [trace_id for trace_id, _ in entry.traces]
                continue
            conversation = replace(entry.conversation, result=result)
            kept[key] = late_parts(conversation, entry.traces, self.scrub, model_id)
            late += kept[key]
        self._delete(gone)
        self.writer.write_late(late)
        counts = TraceCounts()
        for key in kept:
            entry = self.entries[key]
            added = sum(len(part.assessments) for part in kept[key])
            counts += entry.counts + TraceCounts(0, 0, added)
        probe = None
        if self.probe is not None and self.probe[0] in kept:
            probe = with_late(self.probe[1], kept[self.probe[0]][0])
        return Finished(frozenset(kept), counts, probe)

    def _delete(self, trace_ids: list[str]) -> None:
        from agenteval.tracking.store import mlflow_client

        if not trace_ids:
            return
        with mlflow_client(self.uri) as client:
            for start in range(0, len(trace_ids), DELETE_CHUNK):
                chunk = trace_ids[start : start + DELETE_CHUNK]
                client.delete_traces(self.experiment_id, trace_ids=chunk)

    def discard(self, *, delete_run: bool = False) -> None:
        """The streamed run given up: its traces removed, the run ended FAILED (or deleted,
        when an equal run is logged already). Best effort: the caller's error is the one
        reported."""
        from agenteval.tracking.store import mlflow_client

        if self.run_id is None:
            return
        with contextlib.suppress(Exception):
            self._delete([t for entry in self.entries.values() for t, _ in entry.traces])
            with mlflow_client(self.uri) as client:
                if delete_run:
                    client.delete_run(self.run_id)
                else:
                    client.set_terminated(self.run_id, status="FAILED")
        self.run_id, self.entries, self.pending = None, {}, []


def trace_stream(
    layout: Layout, uri: str, experiment_id: str, params: dict[str, Any]
) -> TraceStream | None:
    """The stream of a run writing to `uri`, scrubbed as `log_evaluation` scrubs it; None
    when the run logs no traces (`tracking.traces: false`) or the store is not a SQL store
    (its traces are logged at the hand-over)."""
    from agenteval.tracking.provenance import secret_scrubber
    from agenteval.tracking.sql_traces import SqlTraceWriter
    from agenteval.tracking.traces_store import make_writer

    if not (params.get("tracking") or {}).get("traces", True):
        return None
    writer = make_writer(uri, experiment_id)
    if not isinstance(writer, SqlTraceWriter):
        return None
    return TraceStream(layout, uri, experiment_id, secret_scrubber(params), writer)
