"""One evaluation per backend at a time: a machine-wide lock keyed by the agent's endpoint.

Two evaluations sharing one model server evict each other's models and slow each other down,
so both runs' scores and timings would be wrong. Inference takes the lock of its agent's
endpoint before the first scenario; judging, comparing and reports never take it.

The lock is an `flock` on a file under ``~/.cache/agenteval/locks`` (``AGENTEVAL_LOCK_DIR``):
the kernel releases it when the holding process exits or dies, ``kill -9`` included, so a
lock can never outlive its holder. The file records who holds it (pid, command, working
directory, run folder, since when) for the refusal message. ``AGENTEVAL_NO_LOCK=1`` opts out,
for evaluations whose agents use separate backends.

The builtin agent runs in-process on no shared backend and takes no lock: two builtin runs
cannot disturb each other's results.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

NO_LOCK_ENV = "AGENTEVAL_NO_LOCK"
LOCK_DIR_ENV = "AGENTEVAL_LOCK_DIR"
DEFAULT_LOCK_DIR = Path("~/.cache/agenteval/locks")


class EvalLocked(Exception):
    """Another evaluation holds the lock of this backend."""

    def __init__(self, endpoint: str, holder: Mapping[str, Any]) -> None:
        self.endpoint, self.holder = endpoint, dict(holder)
        who = f"pid {holder.get('pid', '?')} ({holder.get('command', 'unknown command')})"
        where = holder.get("run") or holder.get("cwd") or "?"
        super().__init__(
            f"another evaluation is using {endpoint}: {who}, writing {where}, since "
            f"{holder.get('since', '?')}. Wait for it to finish, or set {NO_LOCK_ENV}=1 if "
            "the two evaluations use separate backends"
        )


def endpoint_key(target: Mapping[str, Any]) -> str | None:
    """The backend an agent under test talks to, from its params section; None for the
    in-process builtin agent (nothing shared to protect)."""
    kind = target.get("kind")
    if kind == "builtin":
        return None
    if kind == "mcp":
        command = target.get("command")
        if target.get("url"):
            return f"mcp:{target['url']}"
        shown = command if isinstance(command, str) else " ".join(map(str, command or []))
        return f"mcp-stdio:{shown}"
    if target.get("base_url") or target.get("protocol"):
        from agenteval.llm.config import endpoint_from

        endpoint = endpoint_from(target, "target")
        return f"{endpoint.protocol}:{endpoint.public_base_url}"
    return f"{kind}:{target.get('model')}"


def lock_dir() -> Path:
    return Path(os.environ.get(LOCK_DIR_ENV) or DEFAULT_LOCK_DIR).expanduser()


def lock_path(endpoint: str) -> Path:
    return lock_dir() / f"{hashlib.sha256(endpoint.encode()).hexdigest()[:24]}.lock"


def _holder(endpoint: str, run: str | None) -> dict[str, Any]:
    return {
        "endpoint": endpoint,
        "pid": os.getpid(),
        "command": " ".join(sys.argv) or sys.executable,
        "cwd": str(Path.cwd()),
        "run": run,
        "since": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _read_holder(handle: Any) -> dict[str, Any]:
    handle.seek(0)
    try:
        data = json.loads(handle.read() or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


@contextmanager
def eval_lock(endpoint: str | None, run: str | None = None) -> Iterator[None]:
    """Hold the lock of `endpoint` for the block; raise EvalLocked if another process has it.

    No-op for None (the builtin agent), with AGENTEVAL_NO_LOCK=1, or where flock is missing.
    """
    if endpoint is None or os.environ.get(NO_LOCK_ENV) == "1" or sys.platform == "win32":
        yield
        return
    import fcntl

    path = lock_path(endpoint)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise EvalLocked(endpoint, _read_holder(handle)) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(_holder(endpoint, run)))
            handle.flush()
            yield
        finally:
            # Emptied before unlocking: a later reader never names a finished holder.
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
