"""Traces written while the evaluation runs, into a provisional MLflow run (`agenteval run`).

    live = LiveTraces.start(params, layout)        # None when tracking is off
    run_evaluation(params, layout, graded=live.graded)
    outcome = live.close()                          # what was written, drained
    log_evaluation(layout, params, live=outcome)    # the run keyed, the rest reconciled

A run's key (`tracking.provenance.run_key`) is known only once its scorecard exists, and a
trace belongs to a run (its session id and `mlflow.sourceRun` name it), so traces used to
be written after the evaluation, adding MLflow's ~25-45 ms of CPU per trace to the wall
time. Here a background thread imports MLflow, creates a provisional run (tag
`agenteval.provisional`, named and described as an evaluation in progress, RUNNING) and
writes each conversation's traces as soon as its verdict is on disk, while inference waits
on the endpoint. `log_evaluation` then keys that run, or deletes it with its traces when the
same evaluation was logged already, and writes at the end whatever was not written here or
was written from a result the scorecard does not confirm (`reconcile`), deleting those
traces; the store is then counted back as before, so no trace is silently lost.

A failed evaluation deletes its provisional run (`abandon`); one left by a killed process
is RUNNING, named "in progress" and says so in its description (never a finished
measurement), and the next `--resume` of the same run directory deletes it (`RECORD`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agenteval.fileio import read_json, write_json
from agenteval.tracking.policy import Key, TracePolicy, sample_rank
from agenteval.tracking.records import TurnTrace
from agenteval.tracking.traces import TraceCounts
from agenteval.tracking.verdicts import TurnKey, turn_key

if TYPE_CHECKING:
    from mlflow import MlflowClient

    from agenteval.layout import Layout
    from agenteval.schema.suite import Suite
    from agenteval.schema.transcript import Transcript
    from agenteval.schema.verdict import Verdict
    from agenteval.tracking.traces import TraceWriter

PROVISIONAL_TAG = "agenteval.provisional"
RECORD = "mlflow_provisional.json"  # in the run's reports folder: the provisional run's id
PROVISIONAL_NAME = "in progress: agenteval evaluation"
PROVISIONAL_NOTE = (
    "An evaluation IN PROGRESS, not a measurement: its traces are written as its "
    "conversations are judged. When it ends this run is keyed and described with its "
    "results; if it stays RUNNING, the process was stopped before (`agenteval run --resume` "
    "deletes it)."
)


@dataclass
class LiveOutcome:
    """What the live writer left: the provisional run and each conversation's traces."""

    uri: str
    experiment: str
    experiment_id: str
    run_id: str
    # (scenario id, iteration) -> per turn (record digest, trace id, counts)
    written: dict[Key, list[tuple[str, str, TraceCounts]]] = field(default_factory=dict)
    error: str = ""  # why writing stopped early (the rest is written at the end)
    model_id: str | None = None  # the agent's LoggedModel the traces are linked to


def record_digest(turn: TurnTrace) -> str:
    """What a trace says, as a digest: a trace written live is kept only if the one the
    scorecard would write now has the same (assessment timestamps aside)."""
    text = json.dumps(record_body(turn), sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def record_body(turn: TurnTrace) -> dict[str, Any]:
    """What `record_digest` digests."""

    def plain(value: Any) -> Any:
        if hasattr(value, "to_dictionary"):  # an MLflow Assessment
            found = value.to_dictionary()
            return {k: v for k, v in found.items() if not k.endswith("time")}
        return repr(value)

    return {
        "root": repr(turn.root),
        "tools": [repr(tool) for tool in turn.tools],
        "tags": dict(turn.tags),
        "metadata": dict(turn.metadata),
        "previews": [turn.request_preview, turn.response_preview],
        "assessments": [plain(a) for a in turn.assessments],
    }


def live_choice(policy: TracePolicy, planned: list[Key]) -> Callable[[Key, str], bool]:
    """Whether a conversation is traced while the run goes on, from its own status: under
    `sample` a passing one only if it is among the sample's first `trace_sample` of every
    planned conversation (then it is in the final sample whatever the others score); the
    rest of the sample is written at the end."""
    surely = set(sorted(planned, key=sample_rank)[: policy.sample])

    def chosen(key: Key, status: str) -> bool:
        if policy.mode == "all":
            return True
        if policy.mode == "none":
            return False
        if status != "PASS":
            return True
        return policy.mode == "sample" and key in surely

    return chosen


class LiveTraces:
    """The background writer: one thread, fed the keys of freshly judged conversations."""

    def __init__(self, params: dict[str, Any], layout: Layout, uri: str, experiment: str):
        self.params, self.layout = params, layout
        self.outcome = LiveOutcome(uri, experiment, "", "")
        self.keys: queue.SimpleQueue[Key | None] = queue.SimpleQueue()
        self.suite: Suite | None = None  # read once the first verdict comes
        self.scrubber: Any = None
        self.client: Any = None
        self.thread = threading.Thread(target=self._work, name="agenteval-live-traces")
        self.thread.daemon = True  # a killed run leaves its provisional run, said above

    @classmethod
    def start(cls, params: dict[str, Any], layout: Layout) -> LiveTraces | None:
        """The writer started (MLflow imported in its thread), or None when tracking is off."""
        from agenteval.tracking.store import (
            DEFAULT_EXPERIMENT,
            repository_root,
            resolve_tracking_uri,
        )

        section = params.get("tracking") or {}
        if not section.get("enabled", True):
            return None
        uri = resolve_tracking_uri(section.get("uri"), repository_root(layout.root))
        live = cls(params, layout, uri, section.get("experiment") or DEFAULT_EXPERIMENT)
        live.thread.start()
        return live

    def graded(self, verdict: Verdict) -> None:
        """Told of each new verdict (from the evaluation's event loop): queued, never waited."""
        self.keys.put((verdict.scenario_id, verdict.iteration))

    def close(self) -> LiveOutcome | None:
        """Every queued conversation written and MLflow's export drained; None when no
        provisional run could be made (the run is then logged as before, at the end)."""
        self.keys.put(None)
        self.thread.join()
        return self.outcome if self.outcome.run_id else None

    def abandon(self) -> None:
        """The evaluation failed: its provisional run and traces deleted (best effort)."""
        self.outcome.error = "the evaluation failed"  # what is still queued is not written
        outcome = self.close()
        if outcome is not None:
            with contextlib.suppress(Exception):
                abandoned(outcome)
            clear_record(self.layout, outcome.run_id)

    def _work(self) -> None:
        from agenteval.tracking.store import mlflow_client

        try:
            with mlflow_client(self.outcome.uri) as client:
                self.client = client
                self._begin(client)
                self._write_all(client)
        except Exception as exc:  # the end writes what is missing, or reports the store
            self.outcome.error = f"{type(exc).__name__}: {exc}"
            while self.keys.get() is not None:  # keep draining until closed
                pass

    def _begin(self, client: MlflowClient) -> None:
        """The stale provisional run of an earlier attempt at this run dir deleted; a new one."""
        import mlflow

        from agenteval.tracking.store import ensure_experiment

        outcome = self.outcome
        outcome.experiment_id = ensure_experiment(client, outcome.experiment, outcome.uri)
        stale = read_record(self.layout)
        if stale:  # an earlier attempt at this run dir, stopped before it was logged
            with contextlib.suppress(Exception):
                discard(client, outcome.experiment_id, stale)
        tags = {PROVISIONAL_TAG: "true", "mlflow.note.content": PROVISIONAL_NOTE}
        run = client.create_run(outcome.experiment_id, run_name=PROVISIONAL_NAME, tags=tags)
        outcome.run_id = str(run.info.run_id)
        write_json(self.layout.reports / RECORD, {"run_id": outcome.run_id})
        mlflow.set_experiment(experiment_id=outcome.experiment_id)

    def _write_all(self, client: MlflowClient) -> None:
        from agenteval.tracking.traces import TraceWriter, ended_twice_unsaid

        writer = TraceWriter()
        chosen: Callable[[Key, str], bool] | None = None
        try:
            with ended_twice_unsaid():
                while (key := self.keys.get()) is not None:
                    if self.outcome.error:
                        continue
                    chosen = chosen or self._choice()
                    try:
                        self._write(writer, key, chosen)
                    except Exception as exc:  # written at the end instead
                        self.outcome.error = f"{type(exc).__name__}: {exc}"
        finally:
            writer.drain()

    def _choice(self) -> Callable[[Key, str], bool]:
        from agenteval.layout import load_suite
        from agenteval.tracking.policy import trace_policy
        from agenteval.tracking.provenance import secret_scrubber

        suite = self.suite = load_suite(self.layout)
        self.scrubber = secret_scrubber(self.params)
        planned = [(i.scenario.id, n) for i in suite.items for n in range(suite.iterations)]
        return live_choice(trace_policy(self.params.get("tracking") or {}), planned)

    def _write(self, writer: TraceWriter, key: Key, chosen: Callable[[Key, str], bool]) -> None:
        for turn in self._turns(writer, key, chosen):
            digest = record_digest(turn)  # before MLflow stamps the trace id on its assessments
            entry = (digest, writer.write(turn), TraceCounts.of(turn))
            self.outcome.written.setdefault(key, []).append(entry)

    def _agent_model(self, transcript: Transcript) -> str | None:
        from agenteval.scorecard import target_config
        from agenteval.tracking.models import agent_model
        from agenteval.tracking.provenance import participant

        agent = self.scrubber.scrub(participant(target_config(self.params, transcript)))
        outcome, target = self.outcome, self.params.get("target") or {}
        model_id = agent_model(self.client, outcome.experiment_id, outcome.run_id, agent,
                               target, self.scrubber)  # fmt: skip
        outcome.model_id = model_id
        return model_id

    def _turns(
        self, writer: TraceWriter, key: Key, chosen: Callable[[Key, str], bool]
    ) -> Iterator[TurnTrace]:
        """The conversation's traces as the end would build them, if it is traced now."""
        from agenteval.layout import load_transcript, load_verdict
        from agenteval.scorecard import conversation_result
        from agenteval.tracking.conversations import Conversation, turn_traces
        from agenteval.tracking.records import session_id

        suite = self.suite
        assert suite is not None  # read by _choice
        item = next((i for i in suite.items if i.scenario.id == key[0]), None)
        transcript = load_transcript(self.layout.transcripts, *key)
        if item is None or transcript is None or not transcript.turns:
            return  # a control's verdict, or nothing recorded
        verdict = load_verdict(self.layout.verdicts, *key)
        result = conversation_result(item, key[1], transcript, verdict, self.params)
        if not chosen(key, str(result.status)):
            return
        if writer.model_id is None:  # the agent's LoggedModel, as the end finds it
            writer.model_id = self._agent_model(transcript)
        turns = {t.turn: t for t in verdict.turns} if verdict else {}
        judge = verdict.judge if verdict else None
        run_id = self.outcome.run_id
        found = Conversation(result, transcript, item, turns, judge, session_id(run_id, *key),
                             verdict)  # fmt: skip
        yield from turn_traces(found, run_id, self.scrubber)


class Reconciled:
    """At the end: which traces written live stand for the scorecard's conversations, which
    are written again, and which are deleted (a conversation the final policy does not
    trace, or whose result the scorecard changed)."""

    def __init__(
        self, live: LiveOutcome | None, trace_ids: dict[TurnKey, str], model_id: str | None
    ) -> None:
        self.left = dict(live.written) if live is not None else {}
        self.trace_ids, self.stale, self.counts = trace_ids, list[str](), TraceCounts()
        # Traces linked to another LoggedModel than the run's say another agent: none kept.
        self.linked = live is not None and live.model_id == model_id

    def missing(self, turns: list[TurnTrace]) -> list[TurnTrace]:
        """Of one conversation's turns, those to write: all of them unless every one was
        written live as it is now (then their trace ids are kept)."""
        if not turns:
            return turns
        key = turn_key(turns[0])[:2]
        written = self.left.pop((str(key[0]), int(key[1])), [])
        same = [digest for digest, _, _ in written] == [record_digest(t) for t in turns]
        if self.linked and same:
            for turn, (_, trace_id, counts) in zip(turns, written, strict=True):
                self.trace_ids[turn_key(turn)] = trace_id
                self.counts += counts
            return []
        self.stale += [trace_id for _, trace_id, _ in written]
        return turns

    def settle(self, client: MlflowClient, experiment_id: str) -> Callable[[], TraceCounts]:
        """Called once the end's traces are written: the stale and unchosen live traces
        deleted; returns what the kept ones hold (the store must hold that as well)."""

        def done() -> TraceCounts:
            from agenteval.tracking.traces import delete_traces

            unchosen = [trace_id for entries in self.left.values() for _, trace_id, _ in entries]
            delete_traces(client, experiment_id, self.stale + unchosen)
            self.left, self.stale = {}, []
            return self.counts

        return done


def discard(client: MlflowClient, experiment_id: str, run_id: str) -> None:
    """A provisional run deleted with its traces (another attempt's, or a failed one's)."""
    from agenteval.tracking.traces import delete_run_traces

    delete_run_traces(client, experiment_id, run_id)
    client.set_terminated(run_id, status="KILLED")
    client.delete_run(run_id)


def abandoned(outcome: LiveOutcome) -> None:
    """`discard` in the provisional run's own store."""
    from agenteval.tracking.store import mlflow_client

    with mlflow_client(outcome.uri) as client:
        discard(client, outcome.experiment_id, outcome.run_id)


def read_record(layout: Layout) -> str:
    try:
        found = read_json(layout.reports / RECORD)
    except (OSError, ValueError):
        return ""
    return str(found.get("run_id") or "") if isinstance(found, Mapping) else ""


def clear_record(layout: Layout, run_id: str) -> None:
    if read_record(layout) == run_id:
        (layout.reports / RECORD).unlink(missing_ok=True)
