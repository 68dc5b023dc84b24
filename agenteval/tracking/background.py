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

Earlier still, while the agent runs, the parent names each transcript it stores, and the
child, idle once the store is open, builds that conversation's spans ahead
(`tracking.prebuild`); a transcript changed since is built again at logging time.

Protocol (JSON lines): parent -> child `{"uri", "experiment"}`, optionally `{"follow":
{"root", "data", "reports"}, "params"}` and then any number of `{"stored": [scenario_id,
iteration]}`, optionally `{"judged": {"root", "data", "reports"}}`, then `{"root", "data",
"reports", "params", "reports_pending"}`, then (if pending) `{"reports": "ready"}` or
`{"abort": "..."}`; child -> parent `{"result": ..., "prebuilt": n}` or `{"error": "..."}`.
A closed stdin before the request means: nothing to log, exit; before the last line:
abandon the run (it ends FAILED, its traces removed).
"""

from __future__ import annotations

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
    from agenteval.schema.transcript import Transcript
    from agenteval.tracking.prebuild import SpanCache
    from agenteval.tracking.run import TrackResult

# Only the standard library and tracking.store load with this module: `agenteval run`
# starts the child before it imports the pipeline (~0.25 s of pydantic models), so the
# child's MLflow import begins on the idle core that much earlier. The rest is imported
# where it is used, in the child inside `warm` (with the collector paused).

# How long an abandoned child may take to mark its run FAILED before it is killed.
ABORT_WAIT_S = 30.0


class BackgroundTracker:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.handed_over = False  # `scored` reached the child: it is logging the run
        self.prebuilt = 0  # conversations the child logged with spans it built ahead

    @classmethod
    def start(cls, params: dict[str, Any], root: Path) -> BackgroundTracker | None:
        """A warming child for this run's store; None when tracking is off."""
        section = params.get("tracking") or {}
        if not section.get("enabled", True):
            return None
        uri = resolve_tracking_uri(section.get("uri"), repository_root(root))
        experiment = section.get("experiment") or DEFAULT_EXPERIMENT
        env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true")
        process = subprocess.Popen(
            [sys.executable, "-m", "agenteval.tracking.background"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        tracker = cls(process)
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
        """`run_evaluation`'s stored / judged / scored callbacks for this run, the child told
        of its directory first (so it builds spans ahead as transcripts are stored)."""
        self.follow(layout, params)
        return {"stored": self.stored, "judged": lambda: self.judged(layout),
                "scored": lambda: self.scored(layout, params)}  # fmt: skip

    def follow(self, layout: Layout, params: dict[str, Any]) -> None:
        """The run directory is known: the child may build stored conversations' spans."""
        self._send({"follow": _paths(layout), "params": params})

    def stored(self, transcript: Transcript) -> None:
        """This transcript is stored: the child builds its spans while the agent runs on."""
        self._send({"stored": [transcript.scenario_id, transcript.iteration]})

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
        self.prebuilt = int(answer.get("prebuilt") or 0)
        if "error" in answer:
            raise TrackingError(str(answer["error"]))
        found = answer.get("result")
        return TrackResult(**found) if found else None

    def cancel(self) -> None:
        """Nothing to log (the run failed): a run the child started ends FAILED."""
        if self.handed_over and self.process.poll() is None:
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


def warm(uri: str, experiment: str) -> str:
    """Import what log_evaluation needs and open the store (MLflow caches it per URI);
    returns the experiment's id."""
    import pandas  # noqa: F401  (the scenario table is written as parquet)
    import pyarrow  # noqa: F401
    from mlflow.tracing.client import TracingClient

    from agenteval import layout  # noqa: F401
    from agenteval.tracking import conversations, records, results, run, sql_traces  # noqa: F401
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
    every transcript it stores, some while this child still imports MLflow: its writes
    never wait on a full pipe, and the child sees when a hand-over is queued behind
    transcripts it could still build ahead (it then builds none: they would delay it)."""

    def __init__(self, stream: IO[str]) -> None:
        self.messages: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.waiting = 0  # read, not yet taken, and not a `stored` (the end counts too)
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        with contextlib.suppress(OSError, ValueError):  # broken or garbled: as if closed
            for line in stream:
                if line.strip():
                    self._put(json.loads(line))
        self._put(None)

    def _put(self, message: dict[str, Any] | None) -> None:
        if message is None or "stored" not in message:
            with self.lock:
                self.waiting += 1
        self.messages.put(message)

    def get(self) -> dict[str, Any] | None:
        """The next message; None once the parent closed its end."""
        message = self.messages.get()
        if message is None or "stored" not in message:
            with self.lock:
                self.waiting -= 1
        return message

    def handover_waiting(self) -> bool:
        return self.waiting > 0


def _await_reports(inbox: Inbox) -> None:
    """Block until the parent has written the reports (or given the run up)."""
    message = inbox.get()
    while message is not None and "stored" in message:
        message = inbox.get()
    message = message or {"abort": "the parent went away"}
    if message.get("reports") != "ready":
        raise Abandoned(str(message.get("abort") or message))


def _next_request(
    inbox: Inbox, uri: str, experiment_id: str | None
) -> tuple[dict[str, Any] | None, dict[str, str | None] | None, SpanCache | None]:
    """The logging request (None: cancelled), the tree digests of a `judged` before it,
    and the spans built ahead meanwhile (None unless `follow` named this run's params)."""
    from agenteval.tracking.provenance import tree_digests

    trees, cache, followed = None, None, None
    while (message := inbox.get()) is not None:
        if "stored" in message:
            if cache is not None and not inbox.handover_waiting():
                cache.add(*message["stored"])
        elif "follow" in message:
            followed = message["params"]
            cache = _span_cache(_layout(message["follow"]), uri, experiment_id, followed)
        elif "judged" in message:
            with contextlib.suppress(OSError):  # unreadable now: run_key tries again
                trees = tree_digests(_layout(message["judged"]))
        else:
            return message, trees, (cache if message.get("params") == followed else None)
    return None, trees, None


def _span_cache(
    layout: Layout, uri: str, experiment_id: str | None, params: dict[str, Any]
) -> SpanCache | None:
    """A cache for this run's spans; None when the store did not open (log_evaluation
    then fails with the store's own message)."""
    if experiment_id is None:
        return None
    from agenteval.tracking.prebuild import span_cache

    try:
        return span_cache(layout.transcripts, uri, experiment_id, params)
    except Exception:  # the store refused: logging without the cache reports why
        return None


def main() -> int:
    # Not niced: on a machine whose cores are busy with other work, a niced child starves
    # and the run waits for it at the end (measured with bench/peer_inspect.py).
    first = sys.stdin.readline()
    if not first:
        return 0
    setup = json.loads(first)
    heap.claim()  # this child is a process of its own (see agenteval.heap)
    inbox = Inbox(sys.stdin)
    experiment_id = None
    # A store that cannot be opened now fails again in log_evaluation, with its message.
    with contextlib.suppress(Exception), heap.importing():
        experiment_id = warm(setup["uri"], setup["experiment"])
    request, trees, cache = _next_request(inbox, setup["uri"], experiment_id)
    if request is None:
        return 0  # cancelled: nothing to log
    layout = _layout(request)
    ready = (lambda: _await_reports(inbox)) if request.get("reports_pending") else None
    from agenteval.tracking.run import log_evaluation

    try:
        result = log_evaluation(
            layout, request["params"], reports_ready=ready, trees=trees, prebuilt=cache
        )
    except TrackingError as exc:
        print(json.dumps({"error": str(exc)}), flush=True)
        return 1
    except Exception as exc:  # a store that refuses us: the parent reports it, exit 1
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    answer = {"result": asdict(result) if result else None, "prebuilt": cache.used if cache else 0}
    print(json.dumps(answer), flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # Everything is committed and the answer is sent: skip the interpreter's teardown of
    # MLflow, SQLAlchemy and pandas (~0.8 s), which the parent would otherwise wait for.
    os._exit(code)
