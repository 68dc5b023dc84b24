"""`agenteval sessions` as one call: check everything, then dataset -> replay -> judge ->
score -> track, into one private folder.

Every value and participant is checked before any work: the options, the transcripts
folder and project, the output folder's privacy, the agent under test (Claude Code that is
not installed is refused here) and the judge (its model must be named).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.benchmarks.sessions import steps
from agenteval.benchmarks.sessions.extract import transcript_files
from agenteval.benchmarks.sessions.privacy import check_private_folder
from agenteval.measured import Coverage
from agenteval.schema.sessions import SessionDataset, SessionScorecard


@dataclass
class Outcome:
    dataset: SessionDataset
    scorecard: SessionScorecard | None = None
    stop_reason: str | None = None
    tracked: Any = None
    coverage: Coverage | None = None


def preflight(params: dict[str, Any], root: Path, out: Path, dataset_only: bool) -> None:
    """Raise ValueError (naming the key or option) before anything is read or written."""
    from agenteval.benchmarks.sessions.judge import SessionJudge
    from agenteval.targets.base import make_target

    steps.options_of(params)  # sessions.since must be a date
    if not (params.get("sessions") or {}).get("dataset"):
        transcript_files(steps.transcripts_root(params), steps.options_of(params).project)
    check_private_folder(out, root)
    if dataset_only:
        return
    make_target(params, root)
    SessionJudge(params, root)
    controls = (params.get("sessions") or {}).get("controls") or {}
    from agenteval.benchmarks.sessions.controls import load_controls

    load_controls(root / str(controls.get("file", "eval/sessions/controls.yaml")), "all")


def dataset_for(params: dict[str, Any], root: Path, out: Path) -> SessionDataset:
    """The pinned dataset (sessions.dataset) copied into the folder, or a fresh one."""
    section = params.get("sessions") or {}
    pinned = section.get("dataset")
    if not pinned:
        return steps.step_dataset(params, root, out)
    dataset = steps.load_dataset(root / str(pinned), section.get("dataset_sha256"))
    paths = steps.prepare(out, root)
    written = steps.write_model(paths.dataset, dataset, steps.scrubber_for(params))
    assert isinstance(written, SessionDataset)
    return written


def run_sessions(
    params: dict[str, Any], root: Path, out: Path, *, dataset_only: bool, track: bool
) -> Outcome:
    preflight(params, root, out, dataset_only)
    outcome = Outcome(dataset_for(params, root, out))
    if dataset_only:
        return outcome
    replayed = steps.step_replay(params, root, out, outcome.dataset)
    outcome.stop_reason = replayed.stop_reason
    steps.step_judge(params, root, out, outcome.dataset)
    outcome.scorecard = steps.step_score(params, root, out)
    outcome.coverage = steps.step_coverage(out)
    if track:
        from agenteval.benchmarks.sessions.tracking import log_sessions

        outcome.tracked = log_sessions(params, root, steps.Paths(out))
    return outcome
