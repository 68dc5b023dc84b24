"""pytest's outcomes streamed live to the evaluator, beside its report and its exit status.

The agent's code is imported by the tests it is graded with, so it runs inside that pytest:
an `atexit` hook can rewrite the JUnit report after pytest wrote it and `os._exit(0)`. A
plugin of the evaluator's (given to `pytest.main` by the launcher, never found in the
project) writes each test's outcome to a pipe as it is reported, and the session's own exit
status when it finishes, with `os.write` and `json.dumps` bound before the project is on
`sys.path`. The evaluator reads the pipe as the tests run: what was sent is out of the
process's reach. A run passes only when the stream, the report and the exit status all say
so; where they disagree (a report with no failure after a streamed one, an exit status the
session did not end with) the run is `tests_tampered`: a finding that fails the task.

Code the tests import can also make the three agree, by changing pytest itself (every
failed `TestReport` made a pass, `Function.runtest` emptied, a module's `call_and_report`
replaced, a function's `__code__` swapped). So the launcher imports all of `_pytest` and
takes fingerprints (the identity of each function, class member and code object of
pytest, pluggy and the launcher) before the project is on `sys.path`; at the session's end
the plugin compares, and any change is streamed as `patched`: tampering too.
"""

from __future__ import annotations

import asyncio
import json
import os
from dataclasses import dataclass

STREAM_BYTES = 5_000_000  # what is read of the stream; more is drained and dropped
# `python -P -c SCRIPT FD ARGS...`: pytest and the stream's tools are imported from the
# toolchain before the project folder goes first on sys.path (as `python -m pytest` would),
# so neither a `pytest.py` nor a `json.py` in the project is what runs.
SCRIPT = """import importlib, json, os, pkgutil, sys, types, pytest, _pytest, pluggy
_dumps, _write, _fd = json.dumps, os.write, int(sys.argv.pop(1))
for _found in pkgutil.iter_modules(_pytest.__path__, "_pytest."):
    try:
        importlib.import_module(_found.name)
    except Exception:
        pass


def _fingerprints(own=("pytest", "_pytest", "pluggy", "__main__"), vars=vars, id=id,
                  list=list, isinstance=isinstance, getattr=getattr, modules=sys.modules,
                  kinds=(type, types.FunctionType)):
    out = {}
    for name, module in list(modules.items()):
        if module is None or name.split(".")[0] not in own:
            continue
        for key, value in list(vars(module).items()):
            if not isinstance(value, kinds) or key.startswith("__"):
                continue
            out[name, key] = (id(value), id(getattr(value, "__code__", None)))
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                for attr, member in list(vars(value).items()):
                    inner = getattr(member, "__func__", member)
                    if isinstance(inner, kinds) or isinstance(member, property):
                        out[name, key, attr] = (id(member), id(getattr(inner, "__code__", None)))
    return out


# What pytest patches in itself for the session (legacypath's MonkeyPatch, undone only at
# unconfigure, after the session finished).
OWN_PATCHES = frozenset({"_pytest.config.Config._getini_unknown_type"})


def _send(row):
    try:
        _write(_fd, (_dumps(row) + "\\n").encode())
    except OSError:
        pass


class AgentevalStream:
    def pytest_collectreport(self, report):
        if report.failed:
            _send({"id": report.nodeid, "when": "collect", "outcome": "failed"})

    def pytest_runtest_logreport(self, report):
        _send({"id": report.nodeid, "when": report.when, "outcome": report.outcome})

    def pytest_sessionfinish(self, session, exitstatus, _before={}, _now=_fingerprints,
                             _send=_send, sorted=sorted, _own_patches=OWN_PATCHES):
        now = _now()
        changed = [".".join(k) for k, v in _before.items() if now.get(k) != v]
        changed = [name for name in changed if name not in _own_patches]
        if changed:
            _send({"patched": sorted(changed)[:20]})
        _send({"finished": int(exitstatus)})


AgentevalStream.pytest_sessionfinish.__defaults__[0].update(_fingerprints())
sys.path.insert(0, os.getcwd())
raise SystemExit(pytest.main(plugins=[AgentevalStream()]))
"""


def launcher(fd: int) -> list[str]:
    """What follows `python` to run pytest streaming to `fd` (pytest's own args after it)."""
    return ["-P", "-c", SCRIPT, str(fd)]


@dataclass(frozen=True)
class Streamed:
    """What the stream said: tests by outcome, and the status the session finished with."""

    passed: int
    failed: int
    skipped: int
    finished: int | None  # None: the session never finished (killed, died, exited early)
    unreadable: int = 0  # lines that were not the plugin's (a second `finished` included)
    patched: tuple[str, ...] = ()  # pytest's own functions and classes changed in the run


def parse(data: bytes) -> Streamed:
    outcomes: dict[str, str] = {}
    finished, unreadable = None, 0
    patched: tuple[str, ...] = ()
    for line in data.decode("utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            unreadable += 1
            continue
        if not isinstance(row, dict):
            unreadable += 1
        elif isinstance(row.get("patched"), list):
            patched += tuple(str(name) for name in row["patched"]) or ("?",)
        elif isinstance(row.get("finished"), int):
            unreadable += finished is not None  # a session finishes once
            finished = row["finished"]
        elif isinstance(row.get("id"), str) and row.get("outcome") in (
            "passed",
            "failed",
            "skipped",
        ):
            before = outcomes.get(row["id"])
            if before != "failed" and not (before == "skipped" and row["outcome"] == "passed"):
                outcomes[row["id"]] = row["outcome"]
        else:
            unreadable += 1
    values = list(outcomes.values())
    return Streamed(
        values.count("passed"), values.count("failed"), values.count("skipped"), finished,
        unreadable, patched,
    )  # fmt: skip


def disagreement(
    stream: Streamed, counts: dict[str, int] | None, exit_code: int | None
) -> str | None:
    """Where the stream, pytest's report and its exit status contradict each other (one of
    them was rewritten), or None. A run that died or was killed contradicts nothing."""
    if stream.patched:
        return "code of the run changed pytest's own: " + ", ".join(stream.patched[:5])
    if stream.unreadable:
        return (
            f"{stream.unreadable} lines on the evaluator's stream that pytest's plugin never wrote"
        )
    if exit_code is not None and stream.finished is not None and exit_code != stream.finished:
        return f"the session finished with status {stream.finished}, the process exited {exit_code}"
    if exit_code == 0 and stream.finished is None:
        return "exit status 0, but the session never finished"
    if counts is None or stream.finished is None:
        return None
    bad = counts["failures"] + counts["errors"]
    if bool(bad) != bool(stream.failed):
        return f"the report counts {bad} failed or errors, the run reported {stream.failed} failed"
    passed = counts["tests"] - counts["skipped"] - bad
    if not bad and passed != stream.passed:
        return f"the report counts {passed} passed, the run reported {stream.passed}"
    return None


def read_all(fd: int) -> bytes:
    """`collect` for a thread: blocking reads until every writer closed the pipe (capped);
    `fd` is closed after."""
    chunks, size = [], 0
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            if size < STREAM_BYTES:
                chunks.append(chunk[: STREAM_BYTES - size])
            size += len(chunk)
    return b"".join(chunks)


def verdict(data: bytes | None, counts: dict[str, int] | None, exit_code: int | None) -> str | None:
    """Why a finished (not killed) run's report cannot be believed, or None (`disagreement`;
    `data` None: the stream never ended)."""
    if data is None:
        return "the stream never ended (a writer escaped the kill)"
    return disagreement(parse(data), counts, exit_code)


async def collect(fd: int) -> bytes:
    """Everything written to the pipe's read end `fd` until every writer closed it (capped)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    pipe = os.fdopen(fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    chunks, size = [], 0
    try:
        while chunk := await reader.read(65536):
            if size < STREAM_BYTES:
                chunks.append(chunk[: STREAM_BYTES - size])
            size += len(chunk)
    finally:
        transport.close()
    return b"".join(chunks)
