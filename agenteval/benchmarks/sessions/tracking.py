"""One MLflow run per session replay, whose sessions are the replayed cases.

Each replayed case is an MLflow session (trace metadata `mlflow.trace.session` = the case
id), each of its turns a trace, and the judge's grade feedback on the last turn's trace
(`mlflow.log_feedback`). By default MLflow gets numbers, case ids and sha256 digests of the
texts, never the texts: prompts and answers are the user's own code. `sessions.log_text:
true` adds them (scrubbed, as written to the private folder). Only MLflow's public APIs are
used. Logging the same results again finds the run already logged (tag agenteval.run_key).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from agenteval.benchmarks.sessions.privacy import FILE_MODE, private_files
from agenteval.benchmarks.sessions.steps import Paths, load_dataset
from agenteval.benchmarks.tracking import benchmark_run, tracking_enabled
from agenteval.fileio import digest_of, sha256_file, sha256_text, write_json
from agenteval.layout import load_transcript
from agenteval.schema.sessions import CaseResult, SessionResults, SessionScorecard
from agenteval.schema.transcript import Transcript
from agenteval.tracking.run import TrackResult

DEFAULT_EXPERIMENT = "agenteval-sessions"
SESSION_KEY = "mlflow.trace.session"
GRADE = "session_grade"
DISHONEST = "claimed_unmade_work"


def _metrics(card: SessionScorecard) -> dict[str, float]:
    values: dict[str, float | None] = {
        "mean_grade": card.mean_grade.value,
        "mean_grade.low": card.mean_grade.low,
        "mean_grade.high": card.mean_grade.high,
        "median_grade": card.median_grade,
        "pass_rate": card.pass_rate.value,
        "pass_rate.low": card.pass_rate.low,
        "pass_rate.high": card.pass_rate.high,
        "dishonest": card.dishonest,
        "refusals": card.refusals,
        "controls.band_agreement": card.controls.band_agreement,
        "controls.order_agreement": card.controls.order_agreement,
        "controls.passed": float(card.controls.passed),
        "trusted": float(card.trusted),
    }
    values |= {f"cases.{k}": v for k, v in card.counts.items()}
    return {k: float(v) for k, v in values.items() if v is not None}


def _params(params: dict[str, Any], card: SessionScorecard) -> dict[str, str]:
    section = params.get("sessions") or {}
    target = card.target.model_dump() if card.target else {}
    return {
        "target.kind": str(target.get("kind")),
        "target.model": str(target.get("model")),
        "target.config_digest": str(target.get("config_digest")),
        "judge.model": str(card.judge.model),
        "judge.config_digest": str(card.judge.config_digest),
        "sessions.limit": str(section.get("limit")),
        "sessions.since": str(section.get("since")),
        "sessions.pass_grade": str(card.pass_grade),
        "sessions.log_text": str(bool(section.get("log_text"))),
        "sessions.controls.split": str((section.get("controls") or {}).get("split")),
        "dataset_digest": card.dataset_digest,
    }


def _said(text: str | None, log_text: bool, name: str) -> dict[str, Any]:
    if log_text:
        return {name: text or ""}
    return {f"{name}_sha256": sha256_text(text or ""), f"{name}_chars": len(text or "")}


def _trace_turns(transcript: Transcript, result: CaseResult, log_text: bool) -> str | None:
    """Each turn of one replayed case as a trace of its session; the last trace's id."""
    import mlflow
    from mlflow.entities import SpanType

    last = None
    for turn in transcript.turns:
        with mlflow.start_span(name=f"turn {turn.turn}", span_type=SpanType.AGENT) as span:
            span.set_inputs({"case_id": result.case_id, "turn": turn.turn,
                             **_said(turn.user_message, log_text, "message")})  # fmt: skip
            for call in turn.tool_calls:
                with mlflow.start_span(name=call.name, span_type=SpanType.TOOL) as tool:
                    tool.set_attribute("ok", call.ok)
                    if log_text:
                        tool.set_inputs(call.arguments)
            span.set_outputs(_said(turn.response, log_text, "answer"))
            mlflow.update_current_trace(
                metadata={SESSION_KEY: result.case_id},
                tags={"agenteval.case_id": result.case_id, "agenteval.turn": str(turn.turn)},
            )
            last = span.trace_id
    return last


def _feedback(trace_id: str, result: CaseResult, judge: Any, log_text: bool) -> None:
    import mlflow
    from mlflow.entities import AssessmentSource

    source = AssessmentSource(source_type="LLM_JUDGE", source_id=str(judge.model))
    if result.grade is None:
        mlflow.log_feedback(trace_id=trace_id, name=GRADE, source=source,
                            error=Exception(result.reason or "unjudged"))  # fmt: skip
        return
    rationale = result.rationale if log_text else None
    mlflow.log_feedback(trace_id=trace_id, name=GRADE, value=result.grade, source=source,
                        rationale=rationale)  # fmt: skip
    mlflow.log_feedback(trace_id=trace_id, name=DISHONEST, source=source,
                        value=bool(result.claimed_unmade_work))  # fmt: skip


def _log_run(params: dict[str, Any], paths: Paths, card: SessionScorecard, log_text: bool) -> int:
    import mlflow

    results = SessionResults.model_validate_json(paths.results.read_bytes())
    mlflow.log_params(_params(params, card))
    mlflow.log_metrics(_metrics(card))
    mlflow.log_dict(card.model_dump(mode="json"), "scorecard.json")  # numbers and ids only
    if log_text:
        mlflow.log_artifact(str(paths.report))
    traced = 0
    for result in results.results:
        transcript = load_transcript(paths.transcripts, result.case_id, 0)
        if transcript is None or not transcript.turns:
            continue
        trace_id = _trace_turns(transcript, result, log_text)
        if trace_id is not None:
            _feedback(trace_id, result, results.judge, log_text)
            traced += 1
    return traced


def _restrict_local_store(params: dict[str, Any], root: Path) -> None:
    """A local SQLite store and its journal files, readable by this user only (an existing
    store made 0644 before now holds the texts too)."""
    from agenteval.tracking.store import SQLITE_PREFIX, repository_root, resolve_tracking_uri

    uri = resolve_tracking_uri((params.get("tracking") or {}).get("uri"), repository_root(root))
    if not uri.startswith(SQLITE_PREFIX) or uri.endswith(":memory:"):
        return
    database = Path(uri[len(SQLITE_PREFIX) :])
    for suffix in ("", "-journal", "-wal", "-shm"):
        path = database.with_name(database.name + suffix)
        if path.is_file():
            path.chmod(FILE_MODE)


def log_sessions(params: dict[str, Any], root: Path, paths: Paths) -> TrackResult | None:
    """Log the scored replay in `paths` as one MLflow run; None when tracking is off."""
    if not tracking_enabled(params):
        return None
    log_text = bool((params.get("sessions") or {}).get("log_text"))
    card = SessionScorecard.model_validate_json(paths.scorecard.read_bytes())
    load_dataset(paths.dataset)  # the folder is a whole replay, not a stray scorecard
    key = digest_of({"kind": "sessions", "results": sha256_file(paths.results),
                     "scorecard": sha256_file(paths.scorecard), "log_text": log_text})  # fmt: skip
    name = f"sessions-{(card.target.model if card.target else None) or 'agent'}-{key[:8]}"
    traced = 0
    # With the texts, the store holds the user's own code as the private folder does: what
    # it creates meanwhile is this user's only, and a local store file is made so after.
    with (
        private_files() if log_text else contextlib.nullcontext(),
        benchmark_run(params, root, key, name=name, experiment=DEFAULT_EXPERIMENT) as run,
    ):
        if run.created:
            traced = _log_run(params, paths, card, log_text)
    if log_text:
        _restrict_local_store(params, root)
    result = run.result(traced)
    record = {"run_id": result.run_id, "created": result.created, "traces": traced,
              "uri": result.tracking_uri}  # fmt: skip
    with private_files():
        write_json(paths.out / "mlflow_run.json", record)
    return result
