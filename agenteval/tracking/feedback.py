"""Reviewers' feedback read back from MLflow: HUMAN assessments on traced turns become
people controls (`controls.people`), through the public search API only.

    found = read_reviews(uri, experiment, run_id, suite_items)

Every trace of the experiment (or of one run) is searched; on each, the valid feedback whose
source is HUMAN is what people said. A reviewed turn becomes a control only when its scenario
is in the suite (the judge grades it against the same ground truth) and its session's earlier
turns read back: the reviewer judged the turn in its conversation, so the judge does too.
Everything left out is listed with its reason.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agenteval.controls.people import control_id, label_of
from agenteval.llm.scrub import Scrubber
from agenteval.schema.people import PeopleControl, Review, TracedCall, TracedTurn
from agenteval.schema.suite import SuiteItem
from agenteval.tracking.records import SESSION_KEY, SOURCE_RUN_KEY
from agenteval.tracking.sessions import _in_turn_order, _reply, _session_traces, _text
from agenteval.tracking.store import TrackingError, mlflow_client

HUMAN = "HUMAN"
SEARCH_PAGE = 200


@dataclass
class Imported:
    controls: list[PeopleControl] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "<trace id>: why"
    reviews: int = 0


def human_reviews(trace: Any) -> list[Review]:
    """The valid HUMAN feedback on a trace, oldest first."""
    found = []
    for a in trace.info.assessments or []:
        source = getattr(a, "source", None)
        if source is None or str(source.source_type) != HUMAN or a.feedback is None:
            continue
        if getattr(a, "valid", True) is False:  # overridden by a later assessment
            continue
        when = dt.datetime.fromtimestamp((a.create_time_ms or 0) / 1000, dt.UTC)
        found.append(
            Review(
                reviewer=str(source.source_id or "anonymous"),
                time=when.isoformat(timespec="seconds"),
                name=str(a.name),
                value=a.feedback.value,
                rationale=a.rationale,
            )
        )
    return sorted(found, key=lambda r: r.time)


def _turn_of(trace: Any, scrub: Scrubber) -> TracedTurn:
    spans = list(trace.data.spans)
    root = next(s for s in spans if s.parent_id is None)
    inputs = root.inputs if isinstance(root.inputs, dict) else {}
    said = [m for m in inputs.get("messages") or [] if isinstance(m, dict)]
    users = [m for m in said if m.get("role") == "user"]
    user = _text(users[-1].get("content")) if users else _text(root.inputs)
    tools = sorted((s for s in spans if str(s.span_type) == "TOOL"), key=lambda s: s.start_time_ns)
    calls = []
    for s in tools:
        ok = bool((s.attributes or {}).get("agenteval.ok", str(s.status.status_code) == "OK"))
        out = s.outputs
        error = out.get("error") if not ok and isinstance(out, dict) else None
        result = out.get("result") if not ok and isinstance(out, dict) else out
        args = s.inputs if isinstance(s.inputs, dict) else {}
        calls.append(TracedCall(name=s.name, arguments=scrub.scrub(args), ok=ok,
                                result=scrub.scrub(result), error=error))  # fmt: skip
    reply = scrub.scrub_text(_reply(root.outputs))
    return TracedTurn(user=scrub.scrub_text(user), reply=reply, tool_calls=calls)


def _conversation(client: Any, trace: Any) -> list[Any]:
    """The session's traces up to and including `trace`, in turn order."""
    session = (trace.info.trace_metadata or {}).get(SESSION_KEY)
    if not session:
        return [trace]
    ordered = _in_turn_order(_session_traces(client, trace, session))
    ids = [t.info.trace_id for t in ordered]
    if trace.info.trace_id not in ids:
        return [trace]
    upto = ids[: ids.index(trace.info.trace_id) + 1]
    return [client.get_trace(i) for i in upto]


def _control(
    client: Any, trace: Any, reviews: list[Review], items: Mapping[str, SuiteItem], scrub: Scrubber
) -> PeopleControl | str:
    tags = trace.info.tags or {}
    scenario = tags.get("agenteval.scenario_id")
    if scenario is None:
        return "not an agenteval turn (no agenteval.scenario_id tag)"
    if scenario not in items:
        return f"scenario {scenario!r} is not in the suite"
    label, why = label_of(reviews)
    if label is None:
        return why or "no label"
    turns = [_turn_of(t, scrub) for t in _conversation(client, trace)]
    return PeopleControl(
        id=control_id(trace.info.trace_id),
        trace_id=trace.info.trace_id,
        run_id=(trace.info.trace_metadata or {}).get(SOURCE_RUN_KEY),
        experiment_id=str(trace.info.experiment_id),
        scenario_id=scenario,
        iteration=int(tags.get("agenteval.iteration", "0") or 0),
        turn=len(turns),
        item=items[scenario],
        turns=turns,
        label=label,
        reviews=reviews,
    )


def read_reviews(
    uri: str, experiment: str, run_id: str | None, items: Sequence[SuiteItem], scrub: Scrubber
) -> Imported:
    """Every reviewed turn of the experiment (or of one run) as a people control."""
    from mlflow.exceptions import MlflowException

    by_id = {i.scenario.id: i for i in items}
    found = Imported()
    with mlflow_client(uri) as client:
        exp = client.get_experiment_by_name(experiment)
        if exp is None:
            raise TrackingError(f"no MLflow experiment {experiment!r} in the store")
        token = None
        try:
            while True:
                page = client.search_traces(
                    locations=[exp.experiment_id], run_id=run_id, include_spans=True,
                    max_results=SEARCH_PAGE, page_token=token,
                )  # fmt: skip
                for trace in page:
                    reviews = human_reviews(trace)
                    if not reviews:
                        continue
                    found.reviews += len(reviews)
                    made = _control(client, trace, reviews, by_id, scrub)
                    if isinstance(made, str):
                        found.skipped.append(f"{trace.info.trace_id}: {made}")
                    else:
                        found.controls.append(made)
                token = page.token
                if not token:
                    return found
        except MlflowException as exc:
            raise TrackingError(f"MLflow search failed: {exc.message}") from None
