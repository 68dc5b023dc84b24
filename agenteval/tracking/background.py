"""MLflow made ready while the evaluation runs, for `agenteval run`.

Importing MLflow and opening its store take about 2.5 s of CPU before the first byte is
logged, as long as the inference of a few hundred conversations. `BackgroundTracker.start`
launches `python -m agenteval.tracking.background`, which pays that cost on the other core
while the pipeline runs; `finish(layout, params)` hands it the finished run, and it calls
the same `log_evaluation` (and the same verification) the `track` stage calls. If the child
is gone by then, the run is logged in-process instead, so nothing depends on it.

The hand-over happens in two steps, so that the traces, the bulk of the logging, are
written while the parent still computes the intervals and the reports: `scored` right
after the score step (the run is created and its traces logged), `finish` once the reports
are written (the rest: params, metrics and the reports as artifacts). Before both,
`judged` says the transcripts and verdicts are final: the child digests them (part of the
run's key) while the parent computes the scorecard, instead of after.

Earlier still, while the agent runs, the parent names each conversation whose verdict it
writes, and the child, idle once the store is open, writes that conversation's traces into
the run it starts for them (`tracking.stream`); at the hand-over only what the scorecard
adds is left to write, and a conversation changed since is logged again, whole.

Protocol (JSON lines): parent -> child `{"uri", "experiment"}`, optionally `{"follow":
{"root", "data", "reports"}, "params"}` and then any number of `{"graded": [scenario_id,
iteration]}`, optionally `{"judged": {"root", "data", "reports"}}`, then `{"root", "data",
"reports", "params", "reports_pending"}`, then (if pending) `{"reports": "ready"}` or
`{"abort": "..."}`; child -> parent `{"result": ..., "streamed": n}` or `{"error": "..."}`.
A closed stdin before the request means: nothing to log (a run streamed into ends FAILED,
without traces), exit; before the last line: abandon the run (likewise).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agenteval import heap
from agenteval.tracking.store import (
    DEFAULT_EXPERIMENT,
    TrackingError,
    repository_root,
    resolve_tracking_uri,
)

if TYPE_CHECKING:
    from agenteval.layout import Layout
    from agenteval.schema.verdict import Verdict
    from agenteval.tracking.run import TrackResult
    from agenteval.tracking.stream import TraceStream

# Only the standard library and tracking.store load with this module: `agenteval run`
# starts the child before it imports the pipeline (~0.25 s of pydantic models), so the
# child's MLflow import begins on the idle core that much earlier. The rest is imported
# where it is used, in the child inside `warm` (with the collector paused).

# How long an abandoned child may take to mark its run FAILED before it is killed.
ABORT_WAIT_S = 30.0


# The child `prestart` launched for this process's `agenteval run`, until start claims it.
_early: subprocess.Popen[str] | None = None


def prestart() -> None:
    """Launch the child now, before the command line and the params are loaded: it imports
    MLflow (most of its 2.5 s of CPU) while they load and waits for its store. The console
    script calls this for `agenteval run` only; `start` claims it, or kills it when tracking
    is off, and so does the interpreter's exit if the command never got that far."""
    global _early
    if _early is None:
        _early = _spawn()
        atexit.register(drop_early)


def _claim_early() -> subprocess.Popen[str] | None:
    global _early
    process, _early = _early, None
    if process is not None and process.poll() is not None:
        return None  # it died (killed from outside): start a new one
    return process


def drop_early() -> None:
    """Kill a prestarted child nobody claimed (tracking is off, or the command failed)."""
    process = _claim_early()
    if process is not None:
        process.kill()
        process.wait()


def _spawn() -> subprocess.Popen[str]:
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true")
    return subprocess.Popen(
        [sys.executable, "-m", "agenteval.tracking.background"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


class BackgroundTracker:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.handed_over = False  # `scored` reached the child: it is logging the run
        self.streamed = 0  # conversations whose traces the child wrote while the run ran
        self.graded_any = False  # the child may have started a run to write traces into

    @classmethod
    def start(cls, params: dict[str, Any], root: Path) -> BackgroundTracker | None:
        """A warming child for this run's store; None when tracking is off."""
        section = params.get("tracking") or {}
        if not section.get("enabled", True):
            drop_early()
            return None
        uri = resolve_tracking_uri(section.get("uri"), repository_root(root))
        experiment = section.get("experiment") or DEFAULT_EXPERIMENT
        tracker = cls(_claim_early() or _spawn())
        if not tracker._send({"uri": uri, "experiment": experiment}):
            tracker.cancel()
            return None
        return tracker

    def _send(self, message: dict[str, Any]) -> bool:
        stdin = self.process.stdin
        try:
            assert stdin is not None
            stdin.write(json.dumps(message) + "\n")
            stdin.flush()
            return True
        except (OSError, ValueError):  # the child is gone
            return False

    def hooks(self, layout: Layout, params: dict[str, Any]) -> dict[str, Callable[..., None]]:
        """`run_evaluation`'s graded / judged / scored callbacks for this run, the child told
        of its directory first (so it writes traces as verdicts are stored)."""
        self.follow(layout, params)
        return {"graded": self.graded, "judged": lambda: self.judged(layout),
                "scored": lambda: self.scored(layout, params)}  # fmt: skip

    def follow(self, layout: Layout, params: dict[str, Any]) -> None:
        """The run directory is known: the child may write graded conversations' traces."""
        self._send({"follow": _paths(layout), "params": params})

    def graded(self, verdict: Verdict) -> None:
        """A new verdict is stored: the child writes its conversation's traces meanwhile."""
        self.graded_any = True
        self._send({"graded": [verdict.scenario_id, verdict.iteration]})

    def judged(self, layout: Layout) -> None:
        """Transcripts and verdicts are final: the child digests them while the parent scores."""
        self._send({"judged": _paths(layout)})

    def scored(self, layout: Layout, params: dict[str, Any]) -> None:
        """The scorecard is written: the child starts the run and logs its traces."""
        self.handed_over = self._send(_request(layout, params, reports_pending=True))

    def finish(self, layout: Layout, params: dict[str, Any]) -> TrackResult | None:
        """Log the finished run through the warmed child (in-process if it is gone)."""
        sent = (
            self._send({"reports": "ready"})
            if self.handed_over
            else self._send(_request(layout, params, reports_pending=False))
        )
        from agenteval.tracking.run import TrackResult, log_evaluation

        if not sent:
            self.cancel()
            return log_evaluation(layout, params)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        answer = _last_json_line(self.process.stdout)
        self.process.wait()
        if answer is None:  # the child died without answering: log here instead
            return log_evaluation(layout, params)
        self.streamed = int(answer.get("streamed") or 0)
        if "error" in answer:
            raise TrackingError(str(answer["error"]))
        found = answer.get("result")
        return TrackResult(**found) if found else None

    def cancel(self) -> None:
        """Nothing to log (the run failed): a run the child started ends FAILED, without
        traces (it is given the time to say so; a child with nothing started is killed)."""
        if (self.handed_over or self.graded_any) and self.process.poll() is None:
            if self.handed_over:
                self._send({"abort": "the evaluation failed before its reports were written"})
            with contextlib.suppress(OSError, ValueError):
                assert self.process.stdin is not None
                self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=ABORT_WAIT_S)
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def _paths(layout: Layout) -> dict[str, str]:
    return {"root": str(layout.root), "data": str(layout.data), "reports": str(layout.reports)}


def _layout(message: dict[str, Any]) -> Layout:
    from agenteval.layout import Layout

    return Layout(Path(message["root"]), Path(message["data"]), Path(message["reports"]))


def _request(layout: Layout, params: dict[str, Any], reports_pending: bool) -> dict[str, Any]:
    return {**_paths(layout), "params": params, "reports_pending": reports_pending}


def _last_json_line(stream: IO[str]) -> dict[str, Any] | None:
    found = None
    for line in stream:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found = value
    return found


def preload() -> None:
    """Import what log_evaluation needs, before the store is known (MLflow pulls in
    pandas and pyarrow, which the scenario table needs, itself)."""
    import mlflow.store.tracking.sqlalchemy_store  # a third of the import
    import mlflow.tracing.client  # noqa: F401

    from agenteval import layout  # noqa: F401
    from agenteval.tracking import records, results, run, sql_traces, stream  # noqa: F401


def warm(uri: str, experiment: str) -> str:
    """Open the store (MLflow caches it per URI); returns the experiment's id."""
    from mlflow.tracing.client import TracingClient

    from agenteval.tracking import records
    from agenteval.tracking.store import ensure_experiment, mlflow_client

    with mlflow_client(uri) as client:
        experiment_id = ensure_experiment(client, experiment, uri)
    TracingClient(uri)
    records._mlflow()
    return experiment_id


class Abandoned(Exception):
    """The parent's evaluation failed after the hand-over: the run is not to be kept."""


class Inbox:
    """The parent's messages, read off stdin by a thread of their own. The parent names
    every conversation it grades, some while this child still imports MLflow: its writes
    never wait on a full pipe."""

    def __init__(self, stream: IO[str]) -> None:
        self.messages: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        with contextlib.suppress(OSError, ValueError):  # broken or garbled: as if closed
            for line in stream:
                if line.strip():
                    self.messages.put(json.loads(line))
        self.messages.put(None)

    def get(self) -> dict[str, Any] | None:
        """The next message; None once the parent closed its end."""
        return self.messages.get()


def _await_reports(inbox: Inbox) -> None:
    """Block until the parent has written the reports (or given the run up)."""
    message = inbox.get()
    while message is not None and "graded" in message:
        message = inbox.get()
    message = message or {"abort": "the parent went away"}
    if message.get("reports") != "ready":
        raise Abandoned(str(message.get("abort") or message))


def _next_request(
    inbox: Inbox, uri: str, experiment_id: str | None
) -> tuple[dict[str, Any] | None, dict[str, str | None] | None, TraceStream | None]:
    """The logging request (None: cancelled), the tree digests of a `judged` before it,
    and the traces written meanwhile (None unless `follow` named this run's params)."""
    from agenteval.tracking.provenance import tree_digests

    trees, stream, followed = None, None, None
    while (message := inbox.get()) is not None:
        if "graded" in message:
            if stream is not None:
                stream.add(*message["graded"])
        elif "follow" in message:
            followed = message["params"]
            stream = _trace_stream(_layout(message["follow"]), uri, experiment_id, followed)
        elif "judged" in message:
            with contextlib.suppress(OSError):  # unreadable now: run_key tries again
                trees = tree_digests(_layout(message["judged"]))
        elif stream is not None and message.get("params") != followed:
            stream.discard()  # streamed for other params: not this evaluation's traces
            return message, trees, None
        else:
            return message, trees, stream
    if stream is not None:
        stream.discard()  # the evaluation was given up before its hand-over
    return None, trees, None


def _trace_stream(
    layout: Layout, uri: str, experiment_id: str | None, params: dict[str, Any]
) -> TraceStream | None:
    """A stream for this run's traces; None when the store did not open or is not a SQL
    store (log_evaluation then logs every trace, or fails with the store's own message)."""
    if experiment_id is None:
        return None
    from agenteval.tracking.stream import trace_stream

    try:
        return trace_stream(layout, uri, experiment_id, params)
    except Exception:  # the store refused: logging without the stream reports why
        return None


def main() -> int:
    # Not niced: on a machine whose cores are busy with other work, a niced child starves
    # and the run waits for it at the end (measured with bench/peer_inspect.py).
    heap.claim()  # this child is a process of its own (see agenteval.heap)
    # Imported before the first line, which a prestarted child gets only once the parent
    # has loaded its params; failing imports fail again, with their message, in logging.
    with contextlib.suppress(Exception), heap.importing():
        preload()
    first = sys.stdin.readline()
    if not first:
        return 0
    setup = json.loads(first)
    inbox = Inbox(sys.stdin)
    experiment_id = None
    # A store that cannot be opened now fails again in log_evaluation, with its message.
    with contextlib.suppress(Exception), heap.importing():
        experiment_id = warm(setup["uri"], setup["experiment"])
    request, trees, stream = _next_request(inbox, setup["uri"], experiment_id)
    if request is None:
        return 0  # cancelled: nothing to log
    layout = _layout(request)
    ready = (lambda: _await_reports(inbox)) if request.get("reports_pending") else None
    from agenteval.tracking.run import log_evaluation

    try:
        result = log_evaluation(
            layout, request["params"], reports_ready=ready, trees=trees, stream=stream
        )
    except Exception as exc:  # a store that refuses us: the parent reports it, exit 1
        if stream is not None and not stream.adopted:
            stream.discard()  # failed before the run was made this one: not kept either
        error = str(exc) if isinstance(exc, TrackingError) else f"{type(exc).__name__}: {exc}"
        print(json.dumps({"error": error}), flush=True)
        return 1
    streamed = len(stream.entries) if stream is not None else 0
    answer = {"result": asdict(result) if result else None, "streamed": streamed}
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is committed and the answer is sent: skip the interpreter's teardown of
    # MLflow, SQLAlchemy and pandas (~0.8 s), which the parent would otherwise wait for.
    os._exit(code)
