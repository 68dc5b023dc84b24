"""pipelines/sessions/dvc.yaml: session replay as DVC stages over a pinned dataset (shipped
as pipelines/sessions/dvc.template.yaml, copied to dvc.yaml once the user pins a dataset).

The pipeline never reads the live ~/.claude folder: its input is `sessions.dataset`, pinned
by `sessions.dataset_sha256` (a params value, so a new pin reruns the pipeline). Text lives
only in the private folder `sessions.out`, which DVC ignores; what DVC sees and hashes are
the stages' no-text records in pipelines/sessions/reports/ (case ids, statuses, digests,
grades) and the scorecard, its metrics.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.benchmarks.sessions import steps
from agenteval.benchmarks.sessions.run import dataset_for, preflight
from agenteval.fileio import digest_of, read_json, write_json
from agenteval.layout import load_transcript
from agenteval.schema.sessions import SessionResults

NAME = "sessions"


def private_out(params: dict[str, Any], root: Path) -> Path:
    return root / str((params.get("sessions") or {}).get("out") or "runs/sessions-pipeline")


def require_pin(params: dict[str, Any]) -> None:
    section = params.get("sessions") or {}
    if not section.get("dataset") or not section.get("dataset_sha256"):
        raise ValueError(
            "pipelines/sessions/params.yaml: set sessions.dataset and sessions.dataset_sha256; "
            "the pipeline replays a pinned dataset (agenteval sessions --dataset-only builds "
            "one), never the live transcripts folder"
        )


def stage_replay(params: dict[str, Any], root: Path, record: Path) -> dict[str, Any]:
    require_pin(params)
    out = private_out(params, root)
    preflight(params, root, out, dataset_only=False)
    dataset = dataset_for(params, root, out)
    replayed = steps.step_replay(params, root, out, dataset)
    cases = {}
    for case in dataset.cases:
        transcript = load_transcript(steps.Paths(out).transcripts, case.id, 0)
        cases[case.id] = {
            "status": transcript.status if transcript else "NOT_RUN",
            "transcript_digest": digest_of(transcript) if transcript else None,
        }
    found = {"dataset_digest": digest_of(dataset), "stop_reason": replayed.stop_reason,
             "cases": cases}  # fmt: skip
    write_json(record, found)
    return found


def stage_judge(params: dict[str, Any], root: Path, record: Path) -> SessionResults:
    out = private_out(params, root)
    dataset = steps.load_dataset(steps.Paths(out).dataset)
    results = steps.step_judge(params, root, out, dataset)
    graded = {r.case_id: {"outcome": r.outcome, "grade": r.grade} for r in results.results}
    controls = {r.case_id: {"outcome": r.outcome, "grade": r.grade} for r in results.controls}
    write_json(record, {"judge": results.judge.config_digest, "cases": graded,
                        "controls": controls})  # fmt: skip
    return results


def stage_score(params: dict[str, Any], root: Path, metrics: Path) -> Any:
    card = steps.step_score(params, root, private_out(params, root))
    write_json(metrics, card)  # numbers, case ids and digests only
    return card


def stage_track(params: dict[str, Any], root: Path, record: Path) -> Any:
    from agenteval.benchmarks.sessions.tracking import log_sessions

    out = private_out(params, root)
    result = log_sessions(params, root, steps.Paths(out))
    write_json(record, read_json(out / "mlflow_run.json") if result else {"enabled": False})
    return result
