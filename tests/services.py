"""Real services the tests start themselves: Ray, PostgreSQL, an MLflow tracking server.

A developer without one of them (Ray not installed, no PostgreSQL server binaries) gets a
skip naming what to install; CI sets AGENTEVAL_REQUIRE_SERVICES=1 (see .ci/run), where a
missing service fails the test instead, so a green CI always ran them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

REQUIRED = os.environ.get("AGENTEVAL_REQUIRE_SERVICES") == "1"
PG_USER = "postgres"  # Debian's package creates it; postgres refuses to run as root


def unavailable(reason: str) -> NoReturn:
    if REQUIRED:
        pytest.fail(f"{reason} (AGENTEVAL_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(
    check: object, what: str, timeout: float = 60.0, proc: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(check) and check():
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before it was ready")
        time.sleep(0.1)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s")


def healthy(url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


# ----- PostgreSQL ---------------------------------------------------------------------------


def pg_bindir() -> Path | None:
    """The server binaries of Debian's postgresql package (newest version), else PATH."""
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: p.parts[-3])
    if found:
        return found[-1].parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


@dataclass
class Postgres:
    port: int
    user: str
    database: str = "postgres"

    def uri(self, database: str | None = None, driver: str = "psycopg") -> str:
        return (
            f"postgresql+{driver}://{self.user}@127.0.0.1:{self.port}/{database or self.database}"
        )

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.user, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.uri(name)


def _as_server_user(cmd: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return cmd  # a developer's own user runs the throwaway cluster
    runuser = shutil.which("runuser")
    if runuser is None:
        unavailable("running PostgreSQL as root needs runuser (util-linux)")
    return [runuser, "-u", PG_USER, "--", *cmd]


@contextmanager
def postgres_server() -> Iterator[Postgres]:
    """A throwaway PostgreSQL cluster on a free 127.0.0.1 port (trust auth, no socket file)."""
    bindir = pg_bindir()
    if bindir is None:
        unavailable("PostgreSQL server not installed: apt-get install -y postgresql")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        unavailable("psycopg not installed: pip install -e '.[postgres]'")
    data = Path(tempfile.mkdtemp(prefix="agenteval-pg-"))
    user = PG_USER if os.geteuid() == 0 else os.environ.get("USER", "postgres")
    if os.geteuid() == 0:
        shutil.chown(data, PG_USER)
    port = free_port()
    init = _as_server_user(
        [str(bindir / "initdb"), "-D", str(data / "db"), "-U", user, "-A", "trust", "-E", "UTF8",
         "--no-sync", "--no-instructions"]
    )  # fmt: skip
    subprocess.run(init, check=True, capture_output=True)
    options = (
        f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories='' "
        "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    )
    start = _as_server_user(
        [str(bindir / "pg_ctl"), "-D", str(data / "db"), "-o", options, "-l",
         str(data / "server.log"), "-w", "-t", "60", "start"]
    )  # fmt: skip
    subprocess.run(start, check=True, capture_output=True)
    try:
        yield Postgres(port, user)
    finally:
        stop = _as_server_user(
            [str(bindir / "pg_ctl"), "-D", str(data / "db"), "-m", "immediate", "stop"]
        )
        subprocess.run(stop, capture_output=True)
        shutil.rmtree(data, ignore_errors=True)


# ----- MLflow tracking server ---------------------------------------------------------------


# MLflow 3's server starts a job runner beside it by default (a pool of huey consumers for
# the server's own jobs: online scoring, trace rollups), which nothing agenteval does uses.
# On CI's two cores those processes take CPU from every test and slow each server's start
# (tests/test_mlflow_ui.py's `mlflow ui` runs without it for the same reason), so the
# servers the tests start run without it; what they are asked (runs, traces, artifacts,
# /health) is served the same.
NO_JOB_RUNNER = {"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


@dataclass
class TrackingServer:
    url: str
    backend_uri: str
    artifacts: Path


@contextmanager
def mlflow_server(backend_uri: str, artifacts: Path) -> Iterator[TrackingServer]:
    """`mlflow server` on a free port: `backend_uri` as its store, proxied artifacts."""
    port = free_port()
    artifacts.mkdir(parents=True, exist_ok=True)
    log = artifacts.parent / "mlflow-server.log"
    cmd = [
        sys.executable, "-m", "mlflow", "server",
        "--backend-store-uri", backend_uri,
        "--artifacts-destination", artifacts.as_uri(), "--serve-artifacts",
        "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
    ]  # fmt: skip
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", **NO_JOB_RUNNER)
    env.pop("MLFLOW_TRACKING_URI", None)
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        url = f"http://127.0.0.1:{port}"
        try:
            wait_for(lambda: healthy(url), "mlflow server", timeout=120, proc=proc)
        except RuntimeError as exc:
            raise RuntimeError(f"{exc}:\n{log.read_text(errors='replace')[-3000:]}") from exc
        yield TrackingServer(url, backend_uri, artifacts)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)  # a throwaway server: no need to wait out its shutdown
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
