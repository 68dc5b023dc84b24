"""The pytest recorder: every pytest the agent starts is run, and observed, by the evaluator.

`verified` needs an execution the evaluator saw, for every harness alike: the project's own
shell tool and an external harness such as Claude Code, whose transcript is only its say-so.
Each attempt gets its own recorder (`PytestRecorder`). Inside the sandbox the agent finds
`pytest`, `python` and `python3` first on PATH (read-only wrappers in `bin/`): `pytest ...`
and `python[3] -m pytest ...` send their arguments, folder and environment over a Unix socket
(`sock/`, read-only) and print what comes back; any other `python` command is the real
interpreter, exec'd as it was asked. The evaluator runs that pytest itself, in a sandbox of
the same policy over the same copy, with pytest's JUnit report written to a folder of its
own that no agent command can see or write (the report folder is bound only into that one
pytest's sandbox), and keeps argv, exit status and the report's totals in this process's
memory. So a command that prints "16 passed", a report file written by hand or a message
sent straight to the socket records nothing that pytest did not do: whatever reaches the
socket is a pytest run like any other, run and recorded by the evaluator.

What it cannot rule out: code of the copy that pytest itself loads (a conftest.py, a
plugin, a module the tests import) runs inside that pytest and could rewrite its report.
`rules.verified` therefore also asks that the graded run of the task's own suite agrees.
With `tasks.sandbox: none` nothing is out of the agent's reach, this process included.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from agenteval import scratch
from agenteval.benchmarks.tasks import graded, junit, stream
from agenteval.benchmarks.tasks.commands import DRAIN_S, Capped, cut
from agenteval.benchmarks.tasks.offline_gh import ASK, SOCKET_ROOT_MAX
from agenteval.benchmarks.tasks.sandbox import Sandbox

REQUEST_BYTES = 1_000_000  # one run's arguments and environment; more is refused
REQUEST_TIMEOUT_S = 10.0
MAX_REQUESTS = 32  # requests in hand at once (running or waiting for a slot); more refused
SETTLE_S = 10.0  # how long `since` waits for runs it stopped to be logged
INTERPRETERS = ("python", "python3")
VERSIONED = re.compile(r"python3\.\d+")
PYTESTS = ("pytest", "py.test")  # py.test: pytest's old entry point, still installed
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The wrappers: standard library only, so they run under the sandbox's interpreter as it is.
# The same text is the agent's `sitecustomize` (first on PYTHONPATH), which catches what PATH
# does not: an interpreter named by its path (`/usr/bin/python3 -m pytest`), a versioned name,
# `python path/to/bin/pytest`.
CLIENT = (
    """#!{python} -I
import json, os, re, socket, sys
REAL = {real!r}
"""
    + ASK
    + """
PYTESTS = ("pytest", "py.test")


def pytest_args(argv):
    i = 0
    while i < len(argv) and re.fullmatch(r"-[BbdEIOqsSuvxP]+", argv[i]):
        i += 1
    if argv[i:i + 2] == ["-m", "pytest"]:
        return argv[i + 2:]
    if i < len(argv) and os.path.basename(argv[i]) in PYTESTS:
        return argv[i + 1:]
    return None


def forward(args):
    request = {{"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}}
    reply = ask({socket_path!r}, request, "pytest", "evaluator's pytest recorder", 3)
    sys.stdout.write(reply["out"])
    sys.stderr.write(reply.get("err", ""))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(reply["code"]) if __name__ != "__main__" else sys.exit(reply["code"])


if __name__ == "__main__":
    name, argv = os.path.basename(sys.argv[0]), sys.argv[1:]
    args = argv if name in PYTESTS else pytest_args(argv)
    if args is None:
        os.execv(REAL[name], [REAL[name], *argv])
    forward(args)
else:
    _args = pytest_args(list(getattr(sys, "orig_argv", [])[1:]))
    if _args is not None:
        forward(_args)
"""
)


@dataclass(frozen=True)
class RecordedRun:
    """One pytest run the evaluator made for the agent: its arguments, how it ended, and the
    totals of the report pytest wrote (None: it wrote none it could read)."""

    seq: int
    args: list[str]
    exit_code: int | None
    timed_out: bool
    report: dict[str, int] | None
    partial: bool = False  # its arguments ran less than the task's suite
    tree: int = -1  # graded.tree_mark of the copy when it ended (-1: it could not be read)
    tampered: bool = False  # its streamed outcomes, report and exit status disagree (stream)


def combined(runs: list[RecordedRun]) -> dict[str, int] | None:
    """The totals of the runs that wrote a report, with `exit_status` (0 only when every one
    exited 0 in time) and `unreported` (runs that wrote none); None when none wrote one."""
    reported = [r for r in runs if r.report is not None]
    if not reported:
        return None
    total = dict.fromkeys(junit.COUNTS, 0)
    for run in reported:
        for name in junit.COUNTS:
            total[name] += run.report.get(name, 0) if run.report else 0
    bad = [r for r in runs if r.timed_out or r.exit_code != 0]
    total["exit_status"] = 0 if not bad else (bad[0].exit_code or -1)
    total["unreported"] = len(runs) - len(reported)
    total["partial"] = sum(r.partial for r in runs)
    total["tampered"] = sum(r.tampered for r in runs)
    total["tree"] = runs[-1].tree
    return total


# Options that choose which tests run (or which configuration, plugins and conftests pytest
# reads): a run with one of these, beyond the task's own arguments, is not the task's suite.
SELECTING = frozenset(
    {
        "-k",
        "-m",
        "--deselect",
        "--lf",
        "--last-failed",
        "--sw",
        "--stepwise",
        "--stepwise-skip",
        "--ignore",
        "--ignore-glob",
        "--co",
        "--collect-only",
        "-c",
        "--config-file",
        "--rootdir",
        "--confcutdir",
        "-o",
        "--override-ini",
        "--pyargs",
        "--noconftest",
        "-p",
        "--setup-only",
        "--setup-plan",
        "--trace-config",
        "--fixtures",
    }
)
# Options that take a value as the next argument without choosing tests.
VALUED = frozenset(
    {
        "--tb",
        "-r",
        "--durations",
        "-W",
        "--color",
        "--capture",
        "--import-mode",
        "--basetemp",
        "--maxfail",
        "--timeout",
        "--log-level",
    }
)
SUITE_FOLDERS = frozenset({".", "tests", "test"})


def partial(args: list[str], cwd: str, suite_args: Sequence[str] = ()) -> bool:
    """Whether a pytest run with `args` in `cwd` (relative to the project) runs less than the
    task's suite: a test path other than the project or its test folder, or an option that
    selects tests or configuration beyond the task's own `tests_pass.args` (`-p no:NAME`
    only disables a plugin)."""
    allowed, i, paths = set(suite_args), 0, 0
    while i < len(args):
        arg, i = args[i], i + 1
        name = arg.split("=", 1)[0]
        if arg in allowed or arg.startswith("-pno:"):
            continue
        if name == "-p" and i < len(args) and args[i].startswith("no:"):
            i += 1
            continue
        if name in SELECTING or (len(arg) > 2 and arg[1] != "-" and arg[:2] in SELECTING):
            return True
        if name in VALUED and "=" not in arg:
            i += 1
        elif not arg.startswith("-"):
            paths += 1
            if os.path.normpath(os.path.join(cwd, arg)) not in SUITE_FOLDERS:
                return True
    return paths == 0 and os.path.normpath(cwd) not in SUITE_FOLDERS  # run from a subfolder


class PytestRecorder:
    """One attempt's recorder: give the agent `environ` and `sandbox`; read `since(mark())`
    around a command, or `claim()` as an external harness reports its calls; `close()`."""

    def __init__(
        self,
        project: Path,
        env: Mapping[str, str],
        sandbox: Sandbox,
        timeout_s: float,
        work_root: Path | None = None,
        suite_args: Sequence[str] = (),
    ) -> None:
        self.project, self.env, self.run_sandbox = project, dict(env), sandbox
        self.suite_args = tuple(suite_args)
        self.timeout_s = timeout_s
        path = env.get("PATH")
        found = {name: shutil.which(name, path=path) for name in INTERPRETERS}
        self.real = {name: os.path.realpath(p) for name, p in found.items() if p}
        for real in list(self.real.values()):  # `python3.11` too: the name it really has
            if VERSIONED.fullmatch(os.path.basename(real)):
                self.real.setdefault(os.path.basename(real), real)
        # A Unix socket's path has room for about 100 bytes: these names are shorter than the
        # offline gh's, so where its socket fits under work_root, this one does too.
        deep = work_root is not None and len(str(work_root)) > SOCKET_ROOT_MAX
        self.home = scratch.make_folder("agenteval-pt-", None if deep else work_root)
        self.bin, self.sock_dir = self.home / "bin", self.home / "sock"
        self.site = self.home / "site"  # the agent's sitecustomize: the same client
        self.private = self.home / "private"  # the reports: never shown to the agent
        for folder in (self.bin, self.sock_dir, self.site, self.private):
            folder.mkdir(mode=0o700)
        self.socket_path = self.sock_dir / "s"
        self.runs: list[RecordedRun] = []
        self._claimed = 0
        self._seq = 0
        self._active: dict[int, subprocess.Popen[bytes]] = {}
        self._slots = threading.BoundedSemaphore(max(1, os.cpu_count() or 1))
        self._handlers = threading.BoundedSemaphore(MAX_REQUESTS)
        self._stale_below = 0
        self._closed = False
        self._changed = threading.Condition()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.socket_path))
        self._server.listen(8)
        self._thread = threading.Thread(target=self._serve, name="pytest-recorder", daemon=True)
        self._thread.start()
        self._write_wrappers()

    def _write_wrappers(self) -> None:
        text = CLIENT.format(
            python=sys.executable, real=self.real, socket_path=str(self.socket_path)
        )
        for name in (*PYTESTS, *self.real):
            wrapper = self.bin / name
            wrapper.write_text(text, encoding="utf-8")
            wrapper.chmod(0o755)
        (self.site / "sitecustomize.py").write_text(text, encoding="utf-8")

    def environ(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with the wrappers first on PATH and the client first on PYTHONPATH."""
        path, site = env.get("PATH", ""), env.get("PYTHONPATH", "")
        return {
            **env,
            "PATH": f"{self.bin}:{path}" if path else str(self.bin),
            "PYTHONPATH": f"{self.site}:{site}" if site else str(self.site),
        }

    def sandbox(self, sandbox: Sandbox) -> Sandbox:
        """`sandbox` showing the wrappers and the socket read-only (nothing else of ours)."""
        if sandbox.kind == "none":
            return sandbox
        return replace(sandbox, exposed=(*sandbox.exposed, self.bin, self.site, self.sock_dir))

    # -- reading the record (the evaluator's side only) ---------------------------------------
    def mark(self) -> int:
        with self._changed:
            return self._seq

    def since(self, mark: int) -> dict[str, int] | None:
        """The runs started since `mark`, after stopping any still running (its command has
        ended: what it left running is no run of that command's)."""
        with self._changed:
            self._stale_below = self._seq
            for proc in self._active.values():
                _kill_group(proc.pid)
            self._changed.wait_for(lambda: not self._active, timeout=SETTLE_S)
            return combined([r for r in self.runs if r.seq >= mark])

    def claim(self) -> dict[str, int] | None:
        """The runs finished since the last claim (an external harness's command result has
        just arrived: the runs it made are done)."""
        with self._changed:
            runs, self._claimed = self.runs[self._claimed :], len(self.runs)
            return combined(runs)

    # -- serving the wrappers ---------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed
                return
            if not self._handlers.acquire(blocking=False):  # a flood: refused, not queued
                conn.close()
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            self._handle(conn)
        finally:
            self._handlers.release()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(REQUEST_TIMEOUT_S)
            try:
                args, cwd, env = self._request(conn)
                code, out = self._run(args, cwd, env)
            except (OSError, ValueError) as exc:
                code, out = 3, f"pytest: bad request to the evaluator's recorder ({exc})\n"
            with contextlib.suppress(OSError):  # the client went away: logged all the same
                conn.sendall(json.dumps({"code": code, "out": out}).encode())

    def _request(self, conn: socket.socket) -> tuple[list[str], Path, dict[str, str]]:
        data = b""
        while len(data) <= REQUEST_BYTES:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        if len(data) > REQUEST_BYTES:
            raise ValueError(f"a request over {REQUEST_BYTES} bytes")
        request = json.loads(data.decode("utf-8"))
        if not isinstance(request, dict):
            raise ValueError("not a request")
        args, env = request.get("args"), request.get("env") or {}
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("args must be a list of strings")
        if not isinstance(env, dict) or not all(
            isinstance(v, str) and _ENV_NAME.match(str(k)) and "\0" not in v for k, v in env.items()
        ):
            raise ValueError("env must map names to strings")
        cwd = Path(os.path.realpath(str(request.get("cwd") or self.project)))
        top = Path(os.path.realpath(self.project))
        if not (cwd == top or cwd.is_relative_to(top)):
            raise ValueError("pytest runs only inside the project")
        path = ":".join(p for p in env.get("PATH", "").split(":") if p != str(self.bin))
        site = [p for p in env.get("PYTHONPATH", "").split(":") if p and p != str(self.site)]
        env = {**env, "PATH": path, "PYTHONPATH": ":".join(site)}
        if not site:
            del env["PYTHONPATH"]
        return args, cwd, env

    def _run(self, args: list[str], cwd: Path, env: dict[str, str]) -> tuple[int, str]:
        python = self.real.get("python") or self.real.get("python3")
        if python is None:
            return 127, "pytest: no python on the agent's PATH\n"
        with self._changed:
            seq, self._seq = self._seq, self._seq + 1
        with self._slots:  # a flood of requests waits here, one run per core at most
            if seq < self._stale_below or self._closed:  # its command ended while it waited
                return 124, "pytest: its command ended before it could run\n"
            return self._pytest(seq, python, args, cwd, env)

    def _pytest(
        self, seq: int, python: str, args: list[str], cwd: Path, env: dict[str, str]
    ) -> tuple[int, str]:
        reports = self.private / f"run-{seq}"
        reports.mkdir()
        report = reports / "junit.xml"
        # `env -i` inside the sandbox: the agent's environment reaches pytest, never bwrap.
        pairs = [f"{k}={v}" for k, v in env.items()]
        # stream.launcher: the copy's own `pytest.py` is never what runs, and each outcome
        # reaches this process as it is reported (an atexit rewrite of the report is seen).
        read_end, write_end = os.pipe()
        argv = ["env", "-i", *pairs, python, *stream.launcher(write_end)]
        argv += [f"--junitxml={report}", *args]
        wrapped = self.run_sandbox.wrap(argv, cwd, writable=[self.project, reports])
        streamed: list[bytes] = []
        reader = threading.Thread(
            target=lambda: streamed.append(stream.read_all(read_end)), daemon=True
        )
        reader.start()
        try:
            proc = subprocess.Popen(
                wrapped,
                cwd=cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                pass_fds=(write_end,),
            )
        finally:
            os.close(write_end)
        with self._changed:
            self._active[seq] = proc
        kept = Capped()  # a flood of output is cut as it arrives, never held whole
        assert proc.stdout is not None
        output = threading.Thread(target=kept.read_from, args=(proc.stdout,), daemon=True)
        output.start()
        try:
            proc.wait(timeout=self.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            proc.wait()
            timed_out = True
        _kill_group(proc.pid)  # a background child of the tests
        output.join(DRAIN_S)
        out = kept.value()
        killed = timed_out or proc.returncode < 0
        code = None if killed else proc.returncode
        where = os.path.relpath(cwd, os.path.realpath(self.project))
        part = partial(args, where, self.suite_args)
        reader.join(DRAIN_S)
        counts = junit.counts(report)
        # rewritten in the run (an atexit hook, a plugin): a report that cannot be believed
        tampered = not killed and bool(
            stream.verdict(streamed[0] if streamed else None, counts, code)
        )
        run = RecordedRun(seq, args, code, killed, counts, part, self._tree(), tampered)
        with self._changed:
            self.runs.append(run)
            self._active.pop(seq, None)
            self._changed.notify_all()
        text = cut(out.decode("utf-8", errors="replace"))
        return (124 if killed else proc.returncode), text

    def _tree(self) -> int:
        try:
            return graded.tree_mark(graded.walk(self.project, keep_git=False).files)
        except (graded.TreeTooLarge, OSError):
            return -1

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        with self._changed:
            self._closed = True  # nothing still waiting for a slot runs
            for proc in self._active.values():
                _kill_group(proc.pid)
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):  # closed twice: already gone
            scratch.discard(self.home)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


@contextlib.contextmanager
def recording(
    project: Path,
    env: Mapping[str, str],
    sandbox: Sandbox,
    timeout_s: float,
    work_root: Path | None = None,
    suite_args: Sequence[str] = (),
) -> Iterator[tuple[PytestRecorder, dict[str, str], Sandbox]]:
    """A recorder for one attempt on `project`, with the environment and sandbox the agent
    gets (the wrappers first on PATH and shown); removed on every exit path."""
    recorder = PytestRecorder(project, env, sandbox, timeout_s, work_root, suite_args)
    try:
        yield recorder, recorder.environ(env), recorder.sandbox(sandbox)
    finally:
        recorder.close()
