"""Log an evaluation to MLflow: one run with params, provenance, metrics, reports and traces.

    result = log_evaluation(Layout.repository(root), load_params(root / "params.yaml"))

The run carries the run key of the evaluation (tag `agenteval.run_key`); logging the same
evaluation again returns the existing run instead of a duplicate. mlflow is imported only
inside the call, so importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.fileio import read_json, write_json
from agenteval.tracking.traces_store import TraceCounts

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mlflow import MlflowClient

    from agenteval.layout import Layout
    from agenteval.llm.scrub import Scrubber
    from agenteval.schema.scorecard import ScenarioResult, Scorecard
    from agenteval.schema.suite import SuiteItem
    from agenteval.tracking.models import EvaluationLinks
    from agenteval.tracking.stream import TraceStream

RUN_RECORD = "mlflow_run.json"


@dataclass(frozen=True)
class TrackResult:
    run_id: str
    created: bool
    traces_logged: int
    experiment_id: str = ""
    run_key: str = ""
    tracking_uri: str = ""  # without credentials
    # Counted in the store after logging and equal to what was sent (0 when not created).
    spans_logged: int = 0
    assessments_logged: int = 0


@dataclass(frozen=True)
class _Destination:
    uri: str
    experiment: str
    run_name: str | None


@dataclass(frozen=True)
class _Target:
    """The run being filled."""

    client: MlflowClient
    uri: str
    experiment_id: str
    run_id: str
    run_key: str


def log_evaluation(
    layout: Layout,
    params: dict[str, Any],
    *,
    uri: str | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
    traces: bool | None = None,
    reports_ready: Callable[[], None] | None = None,
    trees: Mapping[str, str | None] | None = None,
    stream: TraceStream | None = None,
) -> TrackResult | None:
    """Log the run in `layout` (scorecard, metrics, reports, transcripts, verdicts).

    Returns None without touching MLflow when `tracking.enabled` is false. `traces`
    (default `tracking.traces`, else true) logs the conversations as traces. Writes
    reports/mlflow_run.json. Raises TrackingError when the store lost traces.
    `reports_ready`, when given, is called after the traces and before anything under
    reports/ is read: logging can start once the scorecard exists (it returns when the
    reports are written, or raises to abandon the run, which then ends FAILED). `trees`:
    the run's `provenance.tree_digests`, when they were taken before. `stream`: the traces
    the MLflow child of `agenteval run` wrote while the run ran (`tracking.stream`), whose
    run this one becomes.
    """
    section = params.get("tracking") or {}
    if not section.get("enabled", True):
        return None
    if traces is None:
        traces = bool(section.get("traces", True))
    from agenteval.schema.scorecard import Scorecard
    from agenteval.tracking.provenance import run_key
    from agenteval.tracking.store import (
        DEFAULT_EXPERIMENT,
        ensure_experiment,
        find_run,
        mlflow_client,
        public_uri,
        repository_root,
        resolve_tracking_uri,
        store_failures,
    )

    root = repository_root(layout.root)
    dest = _Destination(
        resolve_tracking_uri(uri or section.get("uri"), root),
        experiment or section.get("experiment") or DEFAULT_EXPERIMENT,
        run_name,
    )
    card = Scorecard.model_validate(read_json(layout.scorecard))
    key, basis = run_key(layout, params, trees)
    with store_failures(dest.uri), mlflow_client(dest.uri) as client:
        experiment_id = ensure_experiment(client, dest.experiment, dest.uri)
        stream = _usable(stream, dest.uri, experiment_id, traces)
        existing = find_run(client, experiment_id, key)
        sent = TraceCounts()
        if existing is not None:
            if stream is not None:
                stream.discard(delete_run=True)  # this evaluation is logged: keep that run
            run_id, created = existing, False
        else:
            run_id = _run_for(client, experiment_id, card, params, (key, basis), dest, stream)
            target = _Target(client, dest.uri, experiment_id, run_id, key)
            sent = _fill_run(target, layout, params, card, (traces, stream), reports_ready)
            created = True
    result = TrackResult(
        run_id,
        created,
        sent.traces,
        experiment_id,
        key,
        public_uri(dest.uri),
        spans_logged=sent.spans,
        assessments_logged=sent.assessments,
    )
    write_run_record(layout, result)
    return result


def write_run_record(layout: Layout, result: TrackResult | None) -> Path:
    """reports/mlflow_run.json, the DVC-tracked pointer to the run ({"enabled": false} if off)."""
    path = layout.reports / RUN_RECORD
    record: dict[str, Any] = {"enabled": False}
    if result is not None:
        record = {"enabled": True} | asdict(result)
    write_json(path, record)
    return path


def _usable(
    stream: TraceStream | None, uri: str, experiment_id: str, traces: bool
) -> TraceStream | None:
    """`stream` if its traces belong in this run, else None (and its run discarded)."""
    if stream is None:
        return None
    if stream.broken or not traces or (stream.uri, stream.experiment_id) != (uri, experiment_id):
        stream.discard()
        return None
    return stream


def _run_for(
    client: MlflowClient,
    experiment_id: str,
    card: Scorecard,
    params: dict[str, Any],
    keyed: tuple[str, str],
    dest: _Destination,
    stream: TraceStream | None,
) -> str:
    """The run to fill, named and tagged with its key: the one the stream wrote traces
    into, else a new one."""
    from agenteval.tracking.provenance import run_name
    from agenteval.tracking.store import RUN_KEY_TAG

    name = dest.run_name or run_name(card.config, params)
    adopted = stream.adopt(*keyed, name) if stream is not None else None
    if adopted is not None:
        return adopted
    key, basis = keyed
    tags = {RUN_KEY_TAG: key, f"{RUN_KEY_TAG}.basis": basis}
    run = client.create_run(experiment_id, run_name=name, tags=tags)
    return str(run.info.run_id)


def _fill_run(
    target: _Target,
    layout: Layout,
    params: dict[str, Any],
    card: Scorecard,
    traces: tuple[bool, TraceStream | None],
    reports_ready: Callable[[], None] | None = None,
) -> TraceCounts:
    """The agent model and scenario dataset, traces, then (the reports written) params,
    tags, metrics and artifacts; the run ends FAILED if any step fails (its traces
    removed), so a later attempt logs a fresh run instead of finding this incomplete one."""
    from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

    from agenteval.tracking import provenance, results
    from agenteval.tracking.traces_store import sql_store

    client, run_id = target.client, target.run_id

    try:
        from agenteval.report import load_noise

        scrubber = provenance.secret_scrubber(params)
        record = scrubber.scrub(provenance.provenance_record(layout, params, card.config))
        from agenteval.layout import load_suite

        items = load_suite(layout).items if layout.suite.is_file() else []
        links = _evaluation_links(target, items, params, record, scrubber)
        logged, stream = traces
        found = (items, card, stream)
        sent = _log_traces(target, layout, found, scrubber, links) if logged else TraceCounts()
        if reports_ready is not None:
            reports_ready()
        noise = load_noise(card, layout.reports)
        tags = provenance.headline_tags(record)
        summary_line = results.headline(noise)
        if summary_line:  # shown as the run's description in the MLflow UI
            tags["mlflow.note.content"] = summary_line
        tags |= results.interval_notes(noise)
        tags = {key: scrubber.scrub_text(value) for key, value in tags.items()}
        results.log_batched(
            client,
            run_id,
            params=provenance.run_params(params, scrubber, MAX_PARAM_VAL_LENGTH),
            tags=tags,
            metrics=results.run_metrics(_flat_metrics(layout, card))
            | results.interval_metrics(noise),
            sql_store=sql_store(target.uri),
            links=links,
        )
        secrets = provenance.known_secret_values(params)
        results.log_artifacts(client, run_id, layout, card, secrets, provenance=record)
    except BaseException:
        _discard_traces(target)
        client.set_terminated(run_id, status="FAILED")
        raise
    from agenteval.tracking.store import COMPLETE_TAG, FAILURE_TAG

    client.set_tag(run_id, COMPLETE_TAG, "true")
    # An evaluation that judged no scenario (every unit crashed, timed out, ...) is logged in
    # full but is not a finished run.
    failure = nothing_measured(card.scenarios)
    if failure:
        client.set_tag(run_id, FAILURE_TAG, failure)
    client.set_terminated(run_id, status="FAILED" if failure else "FINISHED")
    return sent


def nothing_measured(results: Sequence[ScenarioResult]) -> str | None:
    """Why an evaluation measured nothing — no scenario was judged (PASS, FAIL or BLOCKED) —
    or None when something was: a run like that is FAILED, never a green "Finished"."""
    from agenteval.schema.status import JUDGED_STATUSES
    from agenteval.scoring import every_unit_errored

    if any(r.status in JUDGED_STATUSES for r in results):
        return None
    if every_unit_errored(results):
        return "every unit ERRORED"
    counts: dict[str, int] = {}
    for result in results:
        counts[str(result.status)] = counts.get(str(result.status), 0) + 1
    found = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    return f"nothing judged: {found}" if found else "no scenario was evaluated"


def _evaluation_links(
    target: _Target,
    items: Sequence[SuiteItem],
    params: dict[str, Any],
    record: dict[str, Any],
    scrubber: Scrubber,
) -> EvaluationLinks:
    """The agent's LoggedModel and the scenario set's dataset, both named as run inputs."""
    from agenteval.tracking.models import EvaluationLinks, agent_version, scenario_dataset
    from agenteval.tracking.traces_store import sql_store

    client, experiment_id, run_id = target.client, target.experiment_id, target.run_id
    agent = record.get("agent") or {}
    model_id = agent_version(
        client, experiment_id, run_id, agent, params.get("target") or {}, scrubber
    )
    digest = (record.get("digests") or {}).get("scenario_set")
    sql = sql_store(target.uri)
    found = scenario_dataset(client, experiment_id, run_id, items, digest, scrubber, sql)
    name, short = found or (None, None)
    return EvaluationLinks(model_id, name, short)


def _log_traces(
    target: _Target,
    layout: Layout,
    found: tuple[Sequence[SuiteItem], Scorecard, TraceStream | None],
    scrubber: Scrubber,
    links: EvaluationLinks,
) -> TraceCounts:
    """Every turn as a trace, streamed from disk in batches and verified in the store; the
    conversations the stream stored get only their late part."""
    from agenteval.tracking.conversations import iter_conversations, turn_records
    from agenteval.tracking.traces_store import log_traces

    items, card, stream = found
    done = stream.finish(card, links.model_id) if stream is not None else None
    skip = done.keys if done is not None else frozenset()
    conversations = iter_conversations(
        items, layout.transcripts, layout.verdicts, card, target.run_id, skip
    )
    records = (
        record
        for conversation in conversations
        for record in turn_records(
            conversation, target.experiment_id, target.run_id, scrubber, links.model_id
        )
    )
    already = (done.counts, done.probe) if done is not None else (TraceCounts(), None)
    return log_traces(target.uri, target.experiment_id, target.run_id, records, already=already)


def _discard_traces(target: _Target) -> None:
    """Delete what a failed attempt wrote of its traces: the retry has the same run key, so
    its sessions would otherwise show this attempt's turns as well. Best effort: the error
    that failed the attempt is the one reported."""
    from agenteval.tracking.traces_store import run_trace_ids

    with contextlib.suppress(Exception):  # the caller re-raises the original failure
        ids = run_trace_ids(target.uri, target.experiment_id, target.run_id)
        for start in range(0, len(ids), 100):
            target.client.delete_traces(target.experiment_id, trace_ids=ids[start : start + 100])


def _flat_metrics(layout: Layout, card: Scorecard) -> dict[str, Any]:
    """metrics.json as the score stage wrote it; recomputed when a run dir lacks it."""
    if layout.metrics.is_file():
        flat: dict[str, Any] = read_json(layout.metrics)
        return flat
    from agenteval.scorecard import metrics_of

    return dict(metrics_of(card))
