"""Where a run's files live, and reading them back: the one map of data/ and reports/.

Every step writes and reads through these paths, so the engine, the judge, the scorecard and
the tracking edge agree on where a transcript or a verdict is without importing each other.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.schema.suite import Suite
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict

# What holds an answer or a measurement: scenarios and their expected answers, every
# benchmark's questions, tasks, labels and baselines, the judge's controls, the climb's
# ledger, the run's results and reports, version control and DVC state, the tracking store.
# The one list the corpus fence (targets.fence), the climb's guard and the tasks sandbox
# protect; a corpus folder may lie neither in nor around one of them.
ANSWER_BEARING = (
    "eval/scenarios",
    "eval/judge_controls",
    "eval/climb",
    "eval/tasks",
    "eval/memory/scenarios",
    "eval/memory/baselines",
    "eval/sessions",
    "eval/qa",
    "eval/retrieval",
    "eval/code_retrieval",
    "eval/throughput",
    "eval/baselines",
    # Labelled sets: the scrubber's secrets and look-alikes, reviewers' verdicts, simulator
    # controls' labels.
    "eval/scrub",
    "eval/people_controls",
    "eval/simulator_controls",
    # The tests' fixtures: recorded transcripts, reference suites, gh issues and their labels.
    # (The Claude Code stand-ins, which the tasks sandbox must put back as an installation,
    # live in tests/stand_ins: no answers there.)
    "tests/fixtures",
    "pipelines",
    "reports",
    "runs",
    "data",
    ".git",
    ".dvc",
    # The tracking store: runs' params, metrics and reports (expected answers among them),
    # in the SQL store, its artifact folder, or the file store of an older setup.
    "mlflow.db",
    "mlflow.db-journal",
    "mlflow.db-wal",
    "mlflow.db-shm",
    "mlartifacts",
    "mlruns",
    # The response cache (llm.cache_dir): the judge's and the simulated user's replies.
    ".cache",
)
# Documents inside a protected folder that the agent may read: the fetched corpus, and the
# document the retrieval benchmark plants for its agent (its "planted instruction" hard case
# adds that folder, and nothing else of pipelines/, to the agent's library).
READABLE_INSIDE = (
    "data/corpora",
    "pipelines/retrieval/data/hard_cases/planted_library",
    ".cache/agenteval/hard_cases/planted_library",  # the same, for a run outside the repository
)


# A sqlite store's companions: the rollback journal, the write-ahead log and its index.
SQLITE_COMPANIONS = ("-journal", "-wal", "-shm")


SQLITE_PREFIX = "sqlite:///"


def resolve_tracking_uri(configured: str | None, root: Path) -> str:
    """params (or an explicit argument), then MLFLOW_TRACKING_URI, then <root>/mlflow.db."""
    uri = configured or os.environ.get("MLFLOW_TRACKING_URI") or ""
    if not uri.strip():
        return SQLITE_PREFIX + (root / "mlflow.db").as_posix()
    return _absolute_sqlite(uri.strip(), root)


def _absolute_sqlite(uri: str, root: Path) -> str:
    # A relative sqlite path resolves against the working directory, which differs between
    # a plain `dvc repro` and each temporary copy of a queued experiment.
    if not uri.startswith(SQLITE_PREFIX):
        return uri
    path = uri[len(SQLITE_PREFIX) :]
    if not path or path.startswith(":memory:") or Path(path).is_absolute():
        return uri
    return SQLITE_PREFIX + (root / path).as_posix()


def sqlite_path(uri: str) -> Path | None:
    if not uri.startswith(SQLITE_PREFIX):
        return None
    path = uri[len(SQLITE_PREFIX) :].split("?", 1)[0]
    return Path(path) if path and not path.startswith(":memory:") else None


def moved_stores(params: Mapping[str, Any], root: Path) -> list[Path]:
    """The stores a setting moved away from ANSWER_BEARING's defaults, as absolute paths:
    the response cache (`run.cache_dir`), the tracking store (`tracking.uri`, and
    MLFLOW_TRACKING_URI, which other commands read: a sqlite file with its journal, WAL and
    `mlartifacts/` beside it, or a file store's folder) and session replay's private folder
    (`sessions.out`). The fence, the climb's guard and the tasks sandbox protect them as
    they protect ANSWER_BEARING: a store keeps its protection wherever it is put."""
    found: list[Path] = []
    cache = (params.get("run") or {}).get("cache_dir")
    out = (params.get("sessions") or {}).get("out")
    found += [_under(root, str(p)) for p in (cache, out) if p and str(p).strip()]
    configured = (params.get("tracking") or {}).get("uri")
    for uri in {configured, os.environ.get("MLFLOW_TRACKING_URI")} - {None, ""}:
        resolved = resolve_tracking_uri(str(uri), root)
        database = sqlite_path(resolved)
        if database is not None:
            database = _under(root, str(database))
            found += [database, *(Path(f"{database}{c}") for c in SQLITE_COMPANIONS)]
            found.append(database.parent / "mlartifacts")
        elif folder := _file_store(resolved):
            found.append(_under(root, folder))
    return list(dict.fromkeys(found))


def _file_store(uri: str) -> str | None:
    """The folder of a file store (`file:///x/mlruns`, `file:mlruns` or a bare path); None
    for a server or a database elsewhere (nothing on this disk to guard)."""
    if uri.startswith("file:"):
        rest = uri[len("file:") :]
        return rest[2:] if rest.startswith("//") else rest
    scheme = uri.split("/", 1)[0]
    return None if ":" in scheme or scheme == "databricks" else uri


def _under(root: Path, path: str) -> Path:
    return Path(os.path.abspath(root / os.path.expanduser(path)))


@dataclass(frozen=True)
class Layout:
    """Where a run's files live: DVC uses data/ and reports/ at the repository root."""

    root: Path
    data: Path
    reports: Path

    @classmethod
    def repository(cls, root: Path) -> Layout:
        return cls(root, root / "data", root / "reports")

    @classmethod
    def run_dir(cls, root: Path, out: Path) -> Layout:
        return cls(root, out / "data", out)

    @property
    def suite(self) -> Path:
        return self.data / "suite.json"

    @property
    def transcripts(self) -> Path:
        return self.data / "transcripts"

    @property
    def verdicts(self) -> Path:
        return self.data / "verdicts"

    @property
    def controls(self) -> Path:
        """Verdicts on the labelled controls mixed into the judge stage, and their labels."""
        return self.data / "controls"

    @property
    def scorecard(self) -> Path:
        return self.reports / "scorecard.json"

    @property
    def metrics(self) -> Path:
        return self.reports / "metrics.json"


def transcript_path(folder: Path, scenario_id: str, iteration: int) -> Path:
    """The file of one scenario iteration (transcripts and verdicts share the shape)."""
    return folder / scenario_id / f"{iteration}.json"


def load_suite(layout: Layout) -> Suite:
    return Suite.model_validate_json(layout.suite.read_bytes())


def load_transcript(folder: Path, scenario_id: str, iteration: int) -> Transcript | None:
    path = transcript_path(folder, scenario_id, iteration)
    try:
        return Transcript.model_validate_json(path.read_bytes())
    except (OSError, ValueError, ValidationError):
        return None


def load_verdict(folder: Path, scenario_id: str, iteration: int) -> Verdict | None:
    return load_verdict_file(transcript_path(folder, scenario_id, iteration))


def load_verdict_file(path: Path) -> Verdict | None:
    try:
        return Verdict.model_validate_json(path.read_bytes())
    except (OSError, ValueError, ValidationError):
        return None
