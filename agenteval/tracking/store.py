"""Where runs go: the tracking URI, an offline MLflow client, the experiment, and run lookup."""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

# The tracking URI's pure reading lives with the stores it names (layout, which the fence
# and the sandbox read too); re-exported here, where tracking callers look for it.
from agenteval.layout import SQLITE_PREFIX as SQLITE_PREFIX
from agenteval.layout import resolve_tracking_uri as resolve_tracking_uri
from agenteval.layout import sqlite_path as sqlite_path

if TYPE_CHECKING:
    from mlflow import MlflowClient

DEFAULT_EXPERIMENT = "agenteval"
RUN_KEY_TAG = "agenteval.run_key"
# Set once every part of a run is logged; a run FAILED by its own results (every unit
# ERRORED) carries it, an attempt that broke off while logging does not.
COMPLETE_TAG = "agenteval.logged"
FAILURE_TAG = "agenteval.failure"  # why a run that was logged in full is FAILED
# The MLflow UI shows an experiment of this kind with its GenAI tabs (traces, sessions,
# agent versions, datasets, evaluation runs) without asking the user what it is.
EXPERIMENT_KIND = ("mlflow.experimentKind", "genai_development")
# MLflow's documented limits: entities per log_batch call, and a value's length.
MAX_PARAMS_TAGS_PER_BATCH = 100
MAX_METRICS_PER_BATCH = 1000
MAX_PARAM_CHARS = 6000
MAX_TAG_CHARS = 8000

# Environment MLflow reads while we log. Telemetry is decided when mlflow is first imported,
# so it is set before that import and left set; the others are restored afterwards.
_TELEMETRY_OFF = ("MLFLOW_DISABLE_TELEMETRY", "true")
# MLflow's INFO lines ("Creating initial MLflow database tables...") were the first thing a
# user read; read once, when MLflow is imported. A level the user set wins; `agenteval
# --verbose` sets INFO.
QUIET_LOGGING = ("MLFLOW_LOGGING_LEVEL", "WARNING")
_SESSION_ENV = {
    # Params, tags and metrics land (synchronously) before the run is marked FINISHED.
    "MLFLOW_ENABLE_ASYNC_LOGGING": "false",
    # Every trace is sampled: the run's sessions are whole (tracking.traces counts them).
    "MLFLOW_TRACE_SAMPLING_RATIO": "1.0",
    # Traces are exported by MLflow's background workers while the next ones are built
    # (bench/mlflow_logging.py: ~3x faster than exporting each as it ends), their spans in
    # batches of up to 500 per log_spans call (MLflow's default is 5; ~20 % faster). The
    # queues are drained and the store counted before the run is finished (tracking.traces).
    "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "true",
    "MLFLOW_ASYNC_TRACE_LOGGING_MAX_SPAN_BATCH_SIZE": "500",
}
# Defaults a user's own setting wins over. The export queue holds 2,000 tasks (MLflow's
# default is 1,000; a task is one trace or, on MLflow 3.9, one span): `tracking.traces`
# drains it before it fills, and every drain waits ~1 s for MLflow's queue consumer to
# notice, so a 500-turn run drains only once, at its end.
_SESSION_DEFAULTS = {"MLFLOW_ASYNC_TRACE_LOGGING_MAX_QUEUE_SIZE": "2000"}
# On sqlite, one export worker instead of MLflow's 10: sqlite takes one writer at a time, so
# more workers only race each other (docs/performance.md): a trace's spans and its info are
# written by two tasks, and whichever lands second takes a slower path or, for the spans,
# gives up after 10 retries and leaves them in an artifact file with a warning; each extra
# worker also holds a second pooled connection and a sqlite lock others wait on.
_SQLITE_DEFAULTS = {"MLFLOW_ASYNC_TRACE_LOGGING_MAX_WORKERS": "1"}


class TrackingError(RuntimeError):
    """The MLflow store refused or lost something we sent."""


@contextmanager
def store_lock(uri: str, name: str) -> Iterator[None]:
    """Hold, waiting for it, this machine's lock of `name` in the store at `uri` (an flock the
    kernel drops if the holder dies): processes started together create a new store once
    (MLflow's schema migration is not safe to run twice at once) and log a run key once."""
    import fcntl
    import hashlib

    from agenteval.runlock import lock_dir

    digest = hashlib.sha256(f"{public_uri(uri)}\n{name}".encode()).hexdigest()[:24]
    path = lock_dir() / f"mlflow-{digest}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


@contextmanager
def store_failures(uri: str) -> Iterator[None]:
    """Errors of the store itself (MLflow's, SQLAlchemy's, the database driver's) as one
    TrackingError line naming the store: a corrupt or unreachable store is a fault of the
    store, reported as such, not a traceback (the run's results on disk are untouched)."""
    from mlflow.exceptions import MlflowException
    from sqlalchemy.exc import SQLAlchemyError

    try:
        yield
    except (MlflowException, SQLAlchemyError, sqlite3.Error) as exc:
        # MLflow wraps SQLAlchemy, which appends the SQL statement on later lines.
        lines = str(exc).strip().splitlines()
        reason = lines[0] if lines else type(exc).__name__
        raise TrackingError(f"the store {public_uri(uri)} failed: {reason}") from exc


def repository_root(layout_root: Path) -> Path:
    """The repository the store belongs to.

    Queued `dvc exp run` executes stages in temporary copies of the repository and points
    DVC_ROOT at the original; keying the store on it keeps every experiment in one store.
    """
    env = os.environ.get("DVC_ROOT")
    return Path(env).resolve() if env else layout_root.resolve()


def tracking_target(params: Mapping[str, Any], root: Path, suffix: str = "") -> tuple[str, str]:
    """(store URI, experiment name + suffix) of params' `tracking` section for this root."""
    section = params.get("tracking") or {}
    uri = resolve_tracking_uri(section.get("uri"), repository_root(root))
    return uri, (section.get("experiment") or DEFAULT_EXPERIMENT) + suffix


def public_uri(uri: str) -> str:
    """The URI without user:password@ and without a query string (tokens travel there)."""
    parts = urlsplit(uri)
    if "@" not in parts.netloc and not parts.query:
        return uri
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, "", parts.fragment))


def artifact_location(uri: str) -> str | None:
    """Artifacts of a sqlite store live beside it (gitignored), not under the current folder."""
    path = sqlite_path(uri)
    return (path.parent / "mlartifacts").as_uri() if path is not None else None


@contextmanager
def mlflow_client(uri: str, synchronous_traces: bool = False) -> Iterator[MlflowClient]:
    """An MlflowClient on `uri`, with MLflow's fluent APIs pointed there too.

    The process-wide tracking URI and the environment are restored on exit, so a later call
    for another repository does not inherit this store. `synchronous_traces`: each trace is
    in the store when its span ends (a benchmark that logs feedback on it right after, a few
    dozen traces), instead of MLflow's background export the evaluations use.
    """
    os.environ[_TELEMETRY_OFF[0]] = _TELEMETRY_OFF[1]
    os.environ.setdefault(*QUIET_LOGGING)
    defaults = _SESSION_DEFAULTS | (_SQLITE_DEFAULTS if uri.startswith(SQLITE_PREFIX) else {})
    names = (*_SESSION_ENV, *defaults, "MLFLOW_TRACKING_URI")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(_SESSION_ENV)
    for name, default in defaults.items():
        os.environ.setdefault(name, default)
    if synchronous_traces:
        os.environ["MLFLOW_ENABLE_ASYNC_TRACE_LOGGING"] = "false"
    import mlflow

    # (MLflow may have been imported before, by tracking.live: its logger is set here too.)
    logging.getLogger("mlflow").setLevel(os.environ[QUIET_LOGGING[0]].upper())
    was_set = mlflow.is_tracking_uri_set()  # type: ignore[no-untyped-call]
    previous = mlflow.get_tracking_uri() if was_set else None
    mlflow.set_tracking_uri(uri)
    try:
        try:
            # A sqlite store is made (and migrated) by one process at a time: the client
            # opens it, and MLflow's schema migration is not safe to run twice at once.
            if sqlite_path(uri) is None:
                client = mlflow.MlflowClient(tracking_uri=uri)
            else:
                with store_lock(uri, "open"):
                    client = mlflow.MlflowClient(tracking_uri=uri)
                    client.search_experiments(max_results=1)
        except OSError as exc:  # a sqlite store where no file can be made
            raise TrackingError(f"the store {public_uri(uri)} failed: {exc}") from exc
        yield client
    finally:
        mlflow.set_tracking_uri(previous)  # type: ignore[arg-type]  # None unsets it
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def ensure_experiment(client: MlflowClient, name: str, uri: str) -> str:
    from mlflow.exceptions import MlflowException

    found = client.get_experiment_by_name(name)
    if found is None:
        try:
            return client.create_experiment(
                name, artifact_location=artifact_location(uri), tags=dict([EXPERIMENT_KIND])
            )
        except MlflowException:
            # A parallel experiment run may have created it between the lookup and here.
            found = client.get_experiment_by_name(name)
            if found is None:
                raise
    if found.lifecycle_stage != "active":
        raise TrackingError(
            f"MLflow experiment {name!r} is deleted: restore it "
            f"(`mlflow experiments restore --experiment-id {found.experiment_id}`) "
            "or choose another tracking.experiment"
        )
    if EXPERIMENT_KIND[0] not in found.tags:  # made before agenteval tagged its experiments
        client.set_experiment_tag(found.experiment_id, *EXPERIMENT_KIND)
    return str(found.experiment_id)


def find_run(client: MlflowClient, experiment_id: str, run_key: str) -> str | None:
    """The run already logged in full for this run key, if any: FINISHED, or FAILED because
    the evaluation itself failed (every unit ERRORED). An attempt that broke off while
    logging counts for neither, so a later attempt logs afresh."""
    for complete in ("attributes.status = 'FINISHED'", f"tags.`{COMPLETE_TAG}` = 'true'"):
        runs = client.search_runs(
            [experiment_id],
            filter_string=f"tags.`{RUN_KEY_TAG}` = '{run_key}' and {complete}",
            max_results=1,
            order_by=["attributes.start_time DESC"],
        )
        if runs:
            return str(runs[0].info.run_id)
    return None
