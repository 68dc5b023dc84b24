"""A tasks run in MLflow, through MLflow's public APIs only: one run per tasks run.

The run holds the params, the headline metrics, the scorecard and summary as artifacts, and
the agent as a LoggedModel ("Agent versions", as the scenario runs log it). Each attempt is a
trace: the task as its root span, every tool call a TOOL span, the four judge dimensions as
feedback on the trace (an unusable grade as feedback carrying its error, never a score), and
its `workspace.diff` and `setup.diff` as artifacts under `tasks/<task>/r<k>/`. Everything sent
passes the secret guard: scrubbed, then checked, and the run fails (FAILED, nothing more
sent) rather than send a secret that survived. Logging the same results twice finds the
existing run by its key. mlflow is imported only inside the call.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks.runner import attempt_dir
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.benchmarks.tasks.steps import (
    KIND,
    attempt_digest,
    guard_for,
    load_grades,
    load_run,
)
from agenteval.benchmarks.tracking import benchmark_run, tracking_enabled
from agenteval.fileio import digest_of, read_json, sha256_file
from agenteval.layout import Layout
from agenteval.params import flatten, section_digest
from agenteval.schema.task_records import DIMENSIONS, TaskAttempt, TaskGrade
from agenteval.schema.task_results import TaskResult, TaskScorecard
from agenteval.tracking.run import TrackResult, write_run_record

SECTIONS = ("suite", "tasks", "target", "run")


def _numeric(metrics: Mapping[str, Any]) -> dict[str, float]:
    return {
        key: float(value)
        for key, value in flatten(dict(metrics)).items()
        if isinstance(value, int | float) and not isinstance(value, bool)
    }


def log_tasks_run(
    params: Mapping[str, Any], layout: Layout, lock: Path | None = None
) -> TrackResult | None:
    """Log the scored run in `layout` as one MLflow run; None when tracking is off."""
    if not tracking_enabled(params):
        write_run_record(layout, None)
        return None
    from agenteval.benchmarks.tasks.judge import TaskJudge
    from agenteval.tracking.store import COMPLETE_TAG

    card = TaskScorecard.model_validate(read_json(layout.reports / "scorecard.json"))
    attempts = load_run(layout)[2]
    grades = load_grades(layout, attempts, TaskJudge(params, layout.root))
    key = digest_of(
        {
            "kind": KIND,
            "scorecard": sha256_file(layout.reports / "scorecard.json"),
            "attempts": [attempt_digest(layout, a) for a in attempts],
            "params": section_digest(dict(params), *SECTIONS),
        }
    )
    guard = guard_for(params)
    traces = 0
    name = os.environ.get("DVC_EXP_NAME") or f"tasks-{card.suite}-{card.model}-{key[:8]}"
    with benchmark_run(params, layout.root, key, name=name) as run:
        if run.created:
            import mlflow

            _log_run(run.client, run.run_id, run.experiment_id, layout, params, card, lock, guard)
            rows = {(r.task_id, r.repeat): r for r in card.tasks}
            for attempt in attempts:
                _log_attempt(layout, attempt, rows.get((attempt.task_id, attempt.repeat)),
                             grades.get((attempt.task_id, attempt.repeat)), guard)  # fmt: skip
                traces += 1
            mlflow.set_tag(COMPLETE_TAG, "true")
    result = run.result(traces)
    write_run_record(layout, result)
    return result


def _log_run(
    client: Any,
    run_id: str,
    experiment_id: str,
    layout: Layout,
    params: Mapping[str, Any],
    card: TaskScorecard,
    lock: Path | None,
    guard: SecretGuard,
) -> None:
    import mlflow

    from agenteval.tracking.models import agent_version
    from agenteval.tracking.provenance import mlflow_key, unit_commit_tags
    from agenteval.tracking.store import MAX_PARAM_CHARS

    flat = {}
    for name in SECTIONS:
        for key, value in flatten(dict(params.get(name) or {}), name).items():
            text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            flat[mlflow_key(key)] = guard.text(text, f"param {key}")[:MAX_PARAM_CHARS]
    mlflow.log_params(flat)
    mlflow.log_metrics(_numeric(read_json(layout.metrics)))
    tags = {
        "suite.kind": KIND,
        "tasks.suite": card.suite,
        "agent.kind": card.harness.kind,
        "agent.model": card.model,
        "judge.kind": card.judge.kind,
        "judge.model": card.judge.model or "none",
        "git.commit": card.measured_on.get("commit", "unknown"),
        "machine": card.measured_on.get("machine", "unknown"),
        "tasks.sandbox": card.sandbox,  # "none: ..." marks a run the agent was not sealed in
    }
    # The same tags as the main run: whether the attempts span commits, and which.
    tags |= unit_commit_tags(card.commits, card.code_stamps)
    if card.unstamped:
        tags["units.unstamped"] = str(card.unstamped)
    if lock is not None and lock.is_file():
        tags["dvc.lock.digest"] = sha256_file(lock)[:12]
    mlflow.set_tags({k: guard.text(v, f"tag {k}") for k, v in tags.items()})
    for name in ("scorecard.json", "summary.md", "metrics.json"):
        path = layout.reports / name
        if path.is_file():
            mlflow.log_text(guard.text(path.read_text(encoding="utf-8"), name), name)
    agent = card.harness.model_dump(mode="json")
    agent_version(client, experiment_id, run_id, agent, params.get("target") or {}, guard.scrubber)


def _log_attempt(
    layout: Layout,
    attempt: TaskAttempt,
    row: TaskResult | None,
    grade: TaskGrade | None,
    guard: SecretGuard,
) -> None:
    import mlflow
    from mlflow.entities import AssessmentError, AssessmentSource, SpanType

    label = f"{attempt.task_id}/r{attempt.repeat}"
    with mlflow.start_span(name=f"task {label}", span_type=SpanType.AGENT) as root:
        root.set_inputs(guard.value({"task": attempt.task_id, "prompt": attempt.prompt}, label))
        root.set_attributes({"status": attempt.status, "repeat": attempt.repeat})
        for call in attempt.calls:
            with mlflow.start_span(name=call.name, span_type=SpanType.TOOL) as span:
                span.set_inputs(guard.value(dict(call.arguments), f"{label} call {call.index}"))
                span.set_outputs(
                    guard.value(
                        {
                            "output": call.output,
                            "exit_code": call.exit_code,
                            "ok": call.ok,
                            "timed_out": call.timed_out,
                        },
                        f"{label} call {call.index}",
                    )
                )
                span.set_attributes({"index": call.index, "latency_ms": call.latency_ms or 0.0})
        outputs: dict[str, Any] = {
            "answer": attempt.final_answer,
            "changed_files": attempt.changed_files,
        }
        if row is not None:
            outputs["result"], outputs["verified"] = row.result, row.verified
            outputs["misreported"], outputs["after_answer"] = row.misreported, row.after_answer
        root.set_outputs(guard.value(outputs, label))
        trace_id = root.trace_id
    folder = attempt_dir(layout.data, attempt.task_id, attempt.repeat)
    for name in ("workspace.diff", "setup.diff", "attempt.json"):
        path = folder / name
        if path.is_file():
            text = guard.text(path.read_text(encoding="utf-8"), f"{label}/{name}")
            mlflow.log_text(text, f"tasks/{attempt.task_id}/r{attempt.repeat}/{name}")
    if grade is None or grade.status == "not_asked":
        return
    source = AssessmentSource(
        source_type="LLM_JUDGE", source_id=grade.judge.model or grade.judge.kind
    )
    if grade.status == "judged" and grade.scores is not None:
        scores = grade.scores.model_dump()
        rationale = guard.text(grade.rationale or "", f"{label} rationale") or None
        for dimension in DIMENSIONS:
            mlflow.log_feedback(trace_id=trace_id, name=dimension, value=scores[dimension],
                                source=source, rationale=rationale)  # fmt: skip
        return
    reason = guard.text(grade.reason or grade.status, f"{label} grade")
    error = AssessmentError(error_code=grade.status.upper(), error_message=reason)
    for dimension in DIMENSIONS:
        mlflow.log_feedback(trace_id=trace_id, name=dimension, source=source,
                            error=error)  # fmt: skip
