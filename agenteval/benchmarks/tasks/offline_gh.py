"""The offline `gh` every harness finds on PATH inside a task's sandbox, and what it recorded.

Each attempt gets its own service (`GhService`): the task file's GitHub fixture (issues and
pull requests, `github` in tasks.json) served by `benchmarks.gh_stub` in this process, behind
a Unix socket. Inside the sandbox the agent sees two read-only folders: `bin/` with an
executable `gh` (a standard-library client that sends its arguments over the socket and
prints the answer) and `sock/` with the socket. The call log lives beside them in a folder
the sandbox never shows, so the agent cannot read or forge it: whatever it sends the socket
is a `gh` call like any other, served and logged by the evaluator. The grader reads the log
(`GhRecord`): the labels a task's `expect.labels` names are the labels the calls set. No
call leaves the machine, and every harness (scripted, chat, Claude Code) gets the same
`gh` the same way: PATH in the agent's environment, the folders in its sandbox.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agenteval import scratch
from agenteval.benchmarks import gh_stub
from agenteval.benchmarks.tasks.sandbox import Sandbox
from agenteval.schema.task_records import CheckResult

REQUEST_BYTES = 1_000_000  # one call's arguments; more is refused
CALL_TIMEOUT_S = 10.0
# The client: standard library only, so it runs under the sandbox's interpreter as it is.
# The round trip both of the evaluator's stand-in clients make (this `gh` and pytest's recorder,
# recorder.py): one JSON request over the evaluator's unix socket, one JSON reply. Standard
# library only, and free of braces, so each client's format template can hold it.
ASK = """
def ask(socket_path, request, tool, service, code):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(socket_path)
    except OSError as exc:
        sys.stderr.write("%s: the %s is not running (%s)\\n" % (tool, service, exc))
        sys.exit(code)
    conn.sendall(json.dumps(request).encode() + b"\\n")
    conn.shutdown(socket.SHUT_WR)
    chunks = []
    while True:
        chunk = conn.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
    if not chunks:
        return dict(code=code, out="", err="%s: no answer\\n" % tool)
    return json.loads(b"".join(chunks))
"""
CLIENT = (
    "#!{python} -I\nimport json, socket, sys\n"
    + ASK
    + """
reply = ask({socket_path!r}, {{"argv": sys.argv[1:]}}, "gh", "offline gh service", 1)
sys.stdout.write(reply["out"])
sys.stderr.write(reply.get("err", ""))
sys.exit(reply["code"])
"""
)


@dataclass(frozen=True)
class GhRecord:
    """What the agent did through `gh`: the fixture it was served and every call logged."""

    fixture: dict[str, Any]
    calls: list[dict[str, Any]] = field(default_factory=list)

    def labels(self, number: int) -> list[str]:
        return gh_stub.labels_from(self.fixture, self.calls, number)

    def added(self) -> dict[int, list[str]]:
        """Issue number -> labels added by the calls (accepted ones only)."""
        found: dict[int, list[str]] = {}
        for call in self.calls:
            if call.get("command") == "issue edit" and call.get("ok"):
                number = int(call["number"])
                found[number] = [*found.get(number, []), *(call.get("added_labels") or [])]
        return found


def label_checks(expected: Mapping[int, list[str]], record: GhRecord | None) -> list[CheckResult]:
    """Each named issue carries exactly its expected labels at the end (the fixture's plus
    the agent's), and no other issue gained one: labelling everything is not labelling."""
    if record is None:
        why = "no offline gh ran for this attempt (the task file names no github fixture)"
        return [CheckResult(name="labels", target="gh", ok=False, detail=why)]
    results = []
    for number, wanted in sorted(expected.items()):
        try:
            have = record.labels(number)
        except gh_stub.Refused as exc:
            results.append(
                CheckResult(name="labels", target=f"#{number}", ok=False, detail=str(exc))
            )
            continue
        ok = sorted(set(have)) == sorted(set(wanted))
        detail = "" if ok else f"labels {sorted(set(have))}, expected {sorted(set(wanted))}"
        results.append(CheckResult(name="labels", target=f"#{number}", ok=ok, detail=detail))
    others = {n: added for n, added in record.added().items() if n not in expected and added}
    if others:
        listed = "; ".join(f"#{n}: {', '.join(sorted(set(a)))}" for n, a in sorted(others.items()))
        why = f"labels added to issues not asked about: {listed}"
        results.append(CheckResult(name="labels", target="other issues", ok=False, detail=why))
    return results


# Longest work_root that leaves room for "/agenteval-gh-XXXXXXXX/sock/gh.sock" in 107 bytes.
SOCKET_ROOT_MAX = 70


class GhService:
    """One attempt's offline `gh`: start, give the agent `environ` and `sandbox`, read
    `record()` after the agent has exited, `close()` (removes everything it made)."""

    def __init__(self, fixture_path: Path, work_root: Path | None = None) -> None:
        self.fixture = json.loads(fixture_path.read_text(encoding="utf-8"))
        # A Unix socket's path has a limit of about 100 bytes: a deep work_root gives way to
        # the system's temporary folder (the sandbox binds the folders wherever they lie).
        deep = work_root is not None and len(str(work_root)) > SOCKET_ROOT_MAX
        self.home = scratch.make_folder("agenteval-gh-", None if deep else work_root)
        self.bin, self.sock_dir = self.home / "bin", self.home / "sock"
        self.log = self.home / "private" / "calls.jsonl"  # never shown to the agent
        for folder in (self.bin, self.sock_dir, self.log.parent):
            folder.mkdir(mode=0o700)
        self.socket_path = self.sock_dir / "gh.sock"
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.socket_path))
        self._server.listen(8)
        self._thread = threading.Thread(target=self._serve, name="offline-gh", daemon=True)
        self._thread.start()
        client = self.bin / "gh"
        client.write_text(CLIENT.format(python=sys.executable, socket_path=str(self.socket_path)))
        client.chmod(0o755)

    def environ(self, env: Mapping[str, str]) -> dict[str, str]:
        """`env` with this `gh` first on PATH."""
        path = env.get("PATH", "")
        return {**env, "PATH": f"{self.bin}:{path}" if path else str(self.bin)}

    def sandbox(self, sandbox: Sandbox) -> Sandbox:
        """`sandbox` showing the client and the socket read-only (nothing else of ours)."""
        if sandbox.kind == "none":
            return sandbox
        return replace(sandbox, exposed=(*sandbox.exposed, self.bin, self.sock_dir))

    def record(self) -> GhRecord:
        with self._lock:
            return GhRecord(self.fixture, gh_stub.logged(self.log))

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(CALL_TIMEOUT_S)
            try:
                argv = _request(conn)
                with self._lock:
                    code, out, err = gh_stub.call(self.fixture, self.log, argv)
            except (OSError, ValueError) as exc:
                code, out, err = 1, "", f"gh: bad request to the offline gh ({exc})\n"
            except Exception as exc:  # a fixture the stub cannot read: say so, keep serving
                code, out, err = 1, "", f"gh: the offline gh failed ({type(exc).__name__}: {exc})\n"
            try:
                conn.sendall(json.dumps({"code": code, "out": out, "err": err}).encode())
            except OSError:
                return  # the client went away; the call is logged all the same

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)
        self._server.close()
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):  # closed twice: already gone
            scratch.discard(self.home)


def _request(conn: socket.socket) -> list[str]:
    data = b""
    while len(data) <= REQUEST_BYTES:
        chunk = conn.recv(65536)
        if not chunk:
            break
        data += chunk
    if len(data) > REQUEST_BYTES:
        raise ValueError(f"a request over {REQUEST_BYTES} bytes")
    request = json.loads(data.decode("utf-8"))
    argv = request.get("argv") if isinstance(request, dict) else None
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a list of strings")
    return argv
