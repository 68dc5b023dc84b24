"""Log an evaluation to MLflow: one run with params, provenance, metrics, reports and traces.

    result = log_evaluation(Layout.repository(root), load_params(root / "params.yaml"))

The run carries the run key of the evaluation (tag `agenteval.run_key`); logging the same
evaluation again returns the existing run instead of a duplicate. mlflow is imported only
inside the call, so importing this module stays cheap.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.fileio import read_json, write_json
from agenteval.scoring import nothing_measured
from agenteval.tracking.live import PROVISIONAL_TAG, LiveOutcome, clear_record, discard
from agenteval.tracking.policy import TracePolicy, policy_tags
from agenteval.tracking.records import TurnTrace
from agenteval.tracking.traces import TraceCounts
from agenteval.tracking.verdicts import TurnKey, log_verdict_table, turn_key, verdict_table

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mlflow import MlflowClient

    from agenteval.layout import Layout
    from agenteval.llm.scrub import Scrubber
    from agenteval.schema.scorecard import ScenarioResult, Scorecard
    from agenteval.schema.suite import SuiteItem
    from agenteval.tracking.models import EvaluationLinks

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
    run_name: str = ""


@dataclass(frozen=True)
class _Destination:
    uri: str
    experiment: str
    run_name: str | None


@dataclass(frozen=True)
class _Target:
    """The run being filled."""

    client: MlflowClient
    experiment_id: str
    run_id: str


def log_evaluation(
    layout: Layout,
    params: dict[str, Any],
    *,
    uri: str | None = None,
    experiment: str | None = None,
    run_name: str | None = None,
    traces: str | bool | None = None,
    trees: Mapping[str, str | None] | None = None,
    live: LiveOutcome | None = None,
) -> TrackResult | None:
    """Log the run in `layout` (scorecard, metrics, reports, transcripts, verdicts).

    Returns None without touching MLflow when `tracking.enabled` is false. `traces`: which
    conversations become traces (a `tracking.traces` mode, true for all, false for none;
    default `tracking.traces`, see `tracking.policy`). Writes
    reports/mlflow_run.json. Raises TrackingError when the store refused or lost
    something. `trees`: the run's `provenance.tree_digests`, when they were taken before.
    `live`: the provisional run whose traces were written while the run went on
    (`tracking.live`): it becomes this run, or is deleted if the evaluation was logged.
    """
    section = params.get("tracking") or {}
    if not section.get("enabled", True):
        return None
    from agenteval.schema.scorecard import Scorecard
    from agenteval.tracking.policy import trace_policy
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
        store_lock,
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
        sent = TraceCounts()
        live = _usable(client, live, dest, experiment_id)
        with store_lock(dest.uri, key):  # the same evaluation logged together: one run
            existing = find_run(client, experiment_id, key)
            if existing is not None:
                run_id, created = existing, False
                name = str(client.get_run(run_id).info.run_name or "")
                if live is not None:  # its traces are another run's copies
                    discard(client, live.experiment_id, live.run_id)
            else:
                name = dest.run_name or _name(layout, params, card, key)
                run_id = _new_run(client, experiment_id, (key, basis), name, live)
                target = _Target(client, experiment_id, run_id)
                policy = trace_policy(section, traces)
                sent = _fill_run(target, layout, params, card, policy, live)
                created = True
    if live is not None:
        clear_record(layout, live.run_id)
    result = TrackResult(
        run_id,
        created,
        sent.traces,
        experiment_id,
        key,
        public_uri(dest.uri),
        spans_logged=sent.spans,
        assessments_logged=sent.assessments,
        run_name=name,
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


def _new_run(
    client: MlflowClient,
    experiment_id: str,
    keyed: tuple[str, str],
    name: str,
    live: LiveOutcome | None = None,
) -> str:
    """A new run, named and tagged with its key: the provisional one of `live` if given."""
    from agenteval.tracking.store import RUN_KEY_TAG

    key, basis = keyed
    tags = {RUN_KEY_TAG: key, f"{RUN_KEY_TAG}.basis": basis}
    if live is None:
        return str(client.create_run(experiment_id, run_name=name, tags=tags).info.run_id)
    for tag, value in tags.items():
        client.set_tag(live.run_id, tag, value)
    client.update_run(live.run_id, name=name)
    client.delete_tag(live.run_id, PROVISIONAL_TAG)
    return live.run_id


def _usable(
    client: MlflowClient, live: LiveOutcome | None, dest: _Destination, experiment_id: str
) -> LiveOutcome | None:
    """`live` if its provisional run is in this run's store and experiment and still there;
    one elsewhere is deleted (its traces would name another run)."""
    if live is None:
        return None
    if (live.uri, live.experiment_id) == (dest.uri, experiment_id):
        with contextlib.suppress(Exception):  # gone: the traces are written afresh
            if client.get_run(live.run_id).info.lifecycle_stage == "active":
                return live
        return None
    with contextlib.suppress(Exception):  # best effort: another store's run
        from agenteval.tracking.live import abandoned

        abandoned(live)
    return None


def _name(layout: Layout, params: Mapping[str, Any], card: Scorecard, key: str) -> str:
    """The run's name (`tracking.names`). The same evaluation logged again, into another
    store (`agenteval track --tracking-uri`, where no DVC_EXP_NAME is set), keeps the name
    it was first logged with, its experiment included."""
    from agenteval.tracking import names
    from agenteval.tracking.provenance import run_name
    from agenteval.tracking.store import repository_root

    previous = _read_record(layout)
    if previous.get("run_key") == key and previous.get("run_name"):
        return str(previous["run_name"])
    baseline = names.committed_params(repository_root(layout.root))
    changes = names.changed_params(params, baseline) if baseline is not None else []
    failure = nothing_measured(card.scenarios)
    return names.run_name(run_name(card.config, params), changes, failure=failure)


def _read_record(layout: Layout) -> dict[str, Any]:
    try:
        found = read_json(layout.reports / RUN_RECORD)
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def _fill_run(
    target: _Target,
    layout: Layout,
    params: dict[str, Any],
    card: Scorecard,
    policy: TracePolicy,
    live: LiveOutcome | None = None,
) -> TraceCounts:
    """The agent model and scenario dataset, traces, then params, tags, metrics and
    artifacts; the run ends FAILED if any step fails (its traces removed), so a later
    attempt logs a fresh run instead of finding this incomplete one."""
    from agenteval.tracking import provenance, results
    from agenteval.tracking.store import MAX_PARAM_CHARS

    client, run_id = target.client, target.run_id

    try:
        from agenteval.report import load_noise

        scrubber = provenance.secret_scrubber(params)
        record = scrubber.scrub(provenance.provenance_record(layout, params, card.config))
        record["units"] = {"commits": card.commits, "code_stamps": card.code_stamps}
        from agenteval.layout import load_suite

        items = load_suite(layout).items if layout.suite.is_file() else []
        links = _evaluation_links(target, items, params, record, scrubber)
        chosen = policy.choose(card.scenarios)
        traced = card.model_copy(update={"scenarios": _chosen(card, chosen)})
        trace_ids: dict[TurnKey, str] = {}
        found = (items, traced)
        sent = _log_traces(target, layout, found, scrubber, links, trace_ids, live)
        noise = load_noise(card, layout.reports)
        tags = provenance.headline_tags(record) | provenance.unit_commit_tags(
            card.commits, card.code_stamps
        )
        tags |= policy_tags(policy, card, chosen)
        # The run's description in the MLflow UI: the headline, then what is traced.
        note = [results.headline(noise), policy.describe(card.scenarios, chosen)]
        tags["mlflow.note.content"] = "\n\n".join(line for line in note if line)
        tags |= results.interval_notes(noise)
        tags = {key: scrubber.scrub_text(value) for key, value in tags.items()}
        results.log_batched(
            client,
            run_id,
            params=provenance.run_params(params, scrubber, MAX_PARAM_CHARS),
            tags=tags,
            metrics=results.run_metrics(_flat_metrics(layout, card))
            | results.interval_metrics(noise),
            links=links,
        )
        secrets = provenance.known_secret_values(params)
        results.log_artifacts(client, run_id, layout, card, secrets, provenance=record)
        table = verdict_table(card, trace_ids, target.experiment_id)
        log_verdict_table(client, run_id, scrubber.scrub(table))
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


def _evaluation_links(
    target: _Target,
    items: Sequence[SuiteItem],
    params: dict[str, Any],
    record: dict[str, Any],
    scrubber: Scrubber,
) -> EvaluationLinks:
    """The agent's LoggedModel and the scenario set's dataset, both named as run inputs."""
    from agenteval.tracking.models import EvaluationLinks, agent_version, scenario_dataset

    client, experiment_id, run_id = target.client, target.experiment_id, target.run_id
    agent = record.get("agent") or {}
    model_id = agent_version(
        client, experiment_id, run_id, agent, params.get("target") or {}, scrubber
    )
    digest = (record.get("digests") or {}).get("scenario_set")
    found = scenario_dataset(client, experiment_id, run_id, items, digest, scrubber)
    name, short = found or (None, None)
    return EvaluationLinks(model_id, name, short)


def _log_traces(
    target: _Target,
    layout: Layout,
    found: tuple[Sequence[SuiteItem], Scorecard],
    scrubber: Scrubber,
    links: EvaluationLinks,
    trace_ids: dict[TurnKey, str],
    live: LiveOutcome | None = None,
) -> TraceCounts:
    """Every turn of the scorecard's conversations as a trace, read from disk one
    conversation at a time, verified in the store; `trace_ids` gets each turn's trace id.
    Traces `live` wrote are kept where they say what these would (`tracking.live`)."""
    from agenteval.tracking.conversations import iter_conversations, turn_traces
    from agenteval.tracking.live import Reconciled
    from agenteval.tracking.traces import log_traces

    items, card = found
    if not card.scenarios and live is None:
        return TraceCounts()
    client, experiment_id = target.client, target.experiment_id
    conversations = iter_conversations(
        items, layout.transcripts, layout.verdicts, card, target.run_id
    )
    kept = Reconciled(live, trace_ids, links.model_id)
    turns = (
        turn
        for conversation in conversations
        for turn in kept.missing(turn_traces(conversation, target.run_id, scrubber))
    )

    def logged(turn: TurnTrace, trace_id: str) -> None:
        trace_ids[turn_key(turn)] = trace_id

    settle = kept.settle(client, experiment_id)
    sent = log_traces(client, experiment_id, target.run_id, turns, links.model_id, logged,
                      settle)  # fmt: skip
    return sent + kept.counts


def _chosen(card: Scorecard, chosen: set[tuple[str, int]]) -> list[ScenarioResult]:
    return [r for r in card.scenarios if (r.id, r.iteration) in chosen]


def _discard_traces(target: _Target) -> None:
    """Delete what a failed attempt wrote of its traces. Best effort: the error that failed
    the attempt is the one reported."""
    from agenteval.tracking.traces import delete_run_traces

    with contextlib.suppress(Exception):  # the caller re-raises the original failure
        delete_run_traces(target.client, target.experiment_id, target.run_id)


def _flat_metrics(layout: Layout, card: Scorecard) -> dict[str, Any]:
    """metrics.json as the score stage wrote it; recomputed when a run dir lacks it."""
    if layout.metrics.is_file():
        flat: dict[str, Any] = read_json(layout.metrics)
        return flat
    from agenteval.scorecard import metrics_of

    return dict(metrics_of(card))
