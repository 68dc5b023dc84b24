"""The docs cannot rot: every command README.md and docs/*.md show is run, or says why not.

README runs in tests/test_docs_readme.py: its blocks in the order written, in one `git clone`.
Every other page runs here (or in tests/test_docs_pages.py) in its own scratch copy of one
base: a `git clone` of this repository (the working tree's uncommitted changes committed on
top) in which README's main job (`dvc repro` on the embedded offline default) already ran,
so the pipeline runs once for all these pages (once per session: CI's workers share it,
shared_base). The blocks of a page run in order in its copy and each command must exit as
shown (0 unless `# exit N`) and print the lines the page shows after it. The block grammar
is in tests/docblocks.py. The copies share the base's MLflow artifact folder (an absolute
path in the copied store); nothing checks its contents.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from docblocks import Block, Command, missing_lines, parse, problems
from servers import OpenAIServer, Reply
from servers.judges import lenient
from services import NO_JOB_RUNNER, REQUIRED, mlflow_server

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
MAX_README_LINES = 200
MAX_NOT_RUNNABLE = 12  # shown-not-run blocks: few, each with its reason
COMMAND_TIMEOUT_S = 900


@contextmanager
def tracking_server(tmp: Path) -> Iterator[str]:
    with mlflow_server(f"sqlite:///{tmp / 'server.db'}", tmp / "artifacts") as server:
        yield server.url


@contextmanager
def fake_model(server: OpenAIServer) -> Iterator[str]:
    with server:
        yield server.url


# The roles a block may ask for with serve=role:port, each real HTTP on 127.0.0.1 (the fake
# models of tests/servers, the real `mlflow server`); a factory gets a scratch folder.
SERVERS = {
    "agent": lambda tmp: fake_model(OpenAIServer()),  # a model that answers "ok"
    "judge": lambda tmp: fake_model(OpenAIServer(reply_fn=lenient())),  # a lenient judge
    "qa-judge": lambda tmp: fake_model(OpenAIServer(reply_fn=lambda body: Reply(text="B"))),
    "mlflow": tracking_server,
}
GIT_ID = {
    "GIT_AUTHOR_NAME": "docs",
    "GIT_AUTHOR_EMAIL": "docs@example.com",
    "GIT_COMMITTER_NAME": "docs",
    "GIT_COMMITTER_EMAIL": "docs@example.com",
}


def blocks() -> list[Block]:
    return [block for page in PAGES for block in parse(ROOT, page)]


def page_blocks(page: Path) -> list[Block]:
    return parse(ROOT, page)


# -- the static rules ------------------------------------------------------------------------


def test_every_command_block_says_whether_it_runs() -> None:
    found = [problem for block in blocks() for problem in problems(block)]
    assert found == []


def test_not_runnable_blocks_are_few_and_each_gives_its_reason() -> None:
    shown = [b for b in blocks() if b.marker == "not-runnable"]
    listing = "\n".join(f"  {b.where}: {b.reason}" for b in shown)
    # Listed on every run (pytest's warnings summary), so what is not run stays visible.
    warnings.warn(f"{len(shown)} command block(s) shown but not run:\n{listing}", stacklevel=1)
    assert len(shown) <= MAX_NOT_RUNNABLE, listing


def test_readme_is_read_in_five_minutes() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) < MAX_README_LINES


def test_every_relative_link_resolves() -> None:
    link = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
    broken = []
    for page in PAGES:
        for target in link.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []


SEPARATORS = {"&&", "||", "|", ";", "&"}


def shown_agenteval_commands() -> list[tuple[str, list[str]]]:
    """(where, argv) of every `agenteval ...` a command block shows, run or not."""
    found = []
    for block in blocks():
        if not block.is_command_block:
            continue
        for command in block.commands():
            for line in command.text.replace("\\\n", " ").splitlines():
                try:
                    tokens = shlex.split(line, comments=True)
                except ValueError:
                    continue
                words: list[str] = []
                for token in tokens:
                    if token.endswith(";") and len(token) > 1:
                        words += [token[:-1], ";"]
                    else:
                        words.append(token)
                segment: list[str] = []
                for word in [*words, ";"]:
                    if word in SEPARATORS:
                        if segment[:1] == ["agenteval"]:
                            found.append((block.where, segment))
                        segment = []
                    else:
                        segment.append(word.strip("[]"))
    return found


def unknown_parts(argv: list[str]) -> list[str]:
    """The subcommands and options of `argv` the command line does not have (typer's
    command objects, read by their click-shaped attributes)."""
    import typer

    from agenteval.cli import app

    command: Any = typer.main.get_command(app)
    args = argv[1:]
    while hasattr(command, "get_command") and args:
        word, args = args[0], args[1:]
        if word == "...":  # a page's placeholder for more options, never a subcommand
            continue
        if word.startswith("-"):
            option = _option(command, word)
            if option is None:
                return [word]
            if not getattr(option, "is_flag", False) and "=" not in word:
                args = args[1:]
            continue
        sub = command.get_command(None, word)
        if sub is None:
            return [word]
        command = sub
    return [w for w in args if w.startswith("--") and _option(command, w) is None]


def _option(command: Any, word: str) -> Any:
    name = word.split("=", 1)[0]
    if name == "--help":
        return "--help"
    for param in command.params:
        names = (*getattr(param, "opts", ()), *getattr(param, "secondary_opts", ()))
        if name in names and param.param_type_name == "option":
            return param
    return None


def test_every_agenteval_command_shown_has_those_subcommands_and_options() -> None:
    """Run or not, a command a page shows must parse: a renamed option fails here."""
    shown = shown_agenteval_commands()
    assert len(shown) > 40  # the extraction itself works, and so does the check:
    assert unknown_parts(["agenteval", "retrieval", "--baseline", "b.json"]) == ["--baseline"]
    assert unknown_parts(["agenteval", "climb", "--rounds", "2", "evaluat"]) == ["evaluat"]
    bad = [f"{where}: {' '.join(argv)}: {unknown_parts(argv)}" for where, argv in shown
           if unknown_parts(argv)]  # fmt: skip
    assert bad == []


CODE_PATH = re.compile(r"`((?:agenteval|tests|bench|stages|pipelines|eval)/[\w./-]+)`")


def test_every_repository_path_named_exists() -> None:
    """`agenteval/...`, `tests/...`, `bench/...` (and the like) in backticks name real files
    or folders; outputs the commands write (eval/baselines/, drafts/) are left out."""
    runtime = ("eval/baselines/", "eval/scenarios/drafts/", "eval/expectations/",
               "eval/climb/holdout_ledger.jsonl", "eval/climb/align_holdout.json",
               "eval/people_controls/controls.json")  # fmt: skip
    missing = []
    for page in PAGES:
        for path in CODE_PATH.findall(page.read_text(encoding="utf-8")):
            if path.startswith(runtime) or "/data/" in path or "/reports/" in path:
                continue
            if not (ROOT / path.rstrip("/.")).exists():
                missing.append(f"{page.relative_to(ROOT)}: {path}")
    assert missing == []


def setup_commands() -> list[list[str]]:
    """README's set-up commands, each split at `&&` into its steps."""
    found = [b for b in page_blocks(README) if b.marker == "setup"]
    commands = [command.text for b in found for command in b.commands()]
    return [[step.strip() for step in text.split("&&")] for text in commands]


def test_the_two_setup_commands_are_what_ci_runs() -> None:
    """CI (.ci/run) runs README's test command: the same install and the same pytest."""
    main_job, tests = setup_commands()
    venv = ["python3 -m venv .venv", ". .venv/bin/activate"]
    assert main_job[:2] == venv and tests[:2] == venv
    assert main_job[2] == "pip install -e ." and main_job[3:] == ["dvc repro"]
    *installs, pytest_line = tests[2:]
    ci = (ROOT / ".ci/run").read_text(encoding="utf-8").splitlines()
    ci_installs = [shlex.split(x.split("pip install", 1)[1]) for x in ci if "pip install" in x]
    assert installs
    for install in installs:  # the project with its extras, then the model without its deps
        wanted = shlex.split(install.split("pip install", 1)[1])
        assert [x for x in wanted if x != "--quiet"] in [
            [x for x in args if x != "--quiet"] for args in ci_installs
        ], f"{install!r} is not an install line of .ci/run"
    assert pytest_line == "pytest -q -n 3"  # workers, as CI runs it
    assert any(line.startswith(pytest_line + " ") or line == pytest_line for line in ci)


def test_ci_keeps_the_screenshots_where_ci_keeps_artifacts(tmp_path: Path) -> None:
    """.ci/run's exit trap copies test-artifacts/ into CI_ARTIFACTS_DIR, a failed run too."""
    script = (ROOT / ".ci/run").read_text(encoding="utf-8")
    keep = re.search(r"^keep_artifacts\(\) \{\n.*?^\}\n", script, re.S | re.M)
    assert keep and "trap keep_artifacts EXIT" in script
    shot = tmp_path / "checkout/test-artifacts/mlflow-ui/compare.png"
    shot.parent.mkdir(parents=True)
    shot.write_bytes(b"\x89PNG fake")
    kept = tmp_path / "kept"
    failing = f"{keep.group(0)}trap keep_artifacts EXIT\nexit 4\n"
    done = subprocess.run(["bash", "-c", failing], cwd=shot.parents[2], capture_output=True,
                          text=True, env=dict(os.environ, CI_ARTIFACTS_DIR=str(kept)))  # fmt: skip
    assert done.returncode == 4, done.stderr
    copied = kept / "test-artifacts/mlflow-ui/compare.png"
    assert copied.read_bytes() == shot.read_bytes() and str(kept) in done.stdout


# -- the scratch copies ----------------------------------------------------------------------


def command_env(repo: Path) -> dict[str, str]:
    env = dict(os.environ, PYTHONUTF8="1", DVC_NO_ANALYTICS="1", **GIT_ID)
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    env["PYTHONPATH"] = str(repo)  # the copy's code, as in a clone
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["COLUMNS"] = "200"
    for name in ("DVC_ROOT", "MLFLOW_TRACKING_URI", "DVC_EXP_NAME", "DVC_EXP_BASELINE_REV"):
        env.pop(name, None)
    return env


def run(argv: list[str], cwd: Path, timeout: float = COMMAND_TIMEOUT_S) -> tuple[int, str]:
    """Exit status and everything printed (stdout and stderr, as a terminal shows them); the
    whole process group is killed at the timeout."""
    proc = subprocess.Popen(
        argv, cwd=cwd, env=command_env(cwd), stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        return -1, f"{out}\n[timed out after {timeout:.0f} s]"
    return proc.returncode, out


def git_clone(source: Path, dest: Path) -> Path:
    """`git clone` of `source`, with what its working tree changes (edits, deletions, files
    git would add) committed on top: a developer's uncommitted work is what is tested, and
    in CI, whose tree is a checkout, it is the clone itself."""
    code, out = run(["git", "clone", "-q", str(source), str(dest)], source)
    assert code == 0, out
    listed = set(tracked(source, "--cached", "--others", "--exclude-standard"))
    for rel in set(tracked(dest, "--cached")) - listed:
        (dest / rel).unlink()
    for rel in sorted(listed):
        mine, theirs = source / rel, dest / rel
        if not mine.is_file() or (theirs.is_file() and theirs.read_bytes() == mine.read_bytes()):
            continue
        theirs.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(mine, theirs, follow_symlinks=False)
    if run(["git", "status", "--porcelain"], dest)[1].strip():
        commit(dest, "the working tree's uncommitted changes")
    return dest


def tracked(repo: Path, *which: str) -> list[str]:
    """`git ls-files` paths that exist in the working tree (a deleted one is gone)."""
    listed = subprocess.run(["git", "ls-files", "-z", *which], cwd=repo, capture_output=True,
                            check=True).stdout.decode().split("\0")  # fmt: skip
    return [rel for rel in listed if rel and (repo / rel).is_file()]


def commit(repo: Path, message: str) -> None:
    if not (repo / ".git").exists():
        assert run(["git", "init", "-q"], repo)[0] == 0
    assert run(["git", "add", "-A"], repo)[0] == 0
    code, out = run(["git", "commit", "-qm", message, "--allow-empty"], repo)
    assert code == 0, out


@dataclass
class Ran:
    """What one command of a page printed (ports: the block's servers, shown -> real)."""

    command: Command
    code: int
    output: str
    ports: dict[int, int] = field(default_factory=dict)


@dataclass
class Pages:
    """Runs each page once per session, in a copy of the base; results are kept."""

    tmp: Path
    shared: Path  # a folder every xdist worker of this session sees (session_folder)
    results: dict[str, list[Ran]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
    _base: Path | None = None

    def base(self) -> Path:
        """A fresh copy in which README's main job ran: its steps after the install; built
        once for the session, whichever worker asks first (see shared_base)."""
        if self._base is None:
            self._base = shared_base(self.shared)
        return self._base

    def run_page(self, page: Path) -> list[Ran]:
        rel = page.relative_to(ROOT).as_posix()
        if rel in self.failures:
            raise AssertionError(self.failures[rel])
        if rel not in self.results:
            try:
                self.results[rel] = self._run(page, rel)
            except AssertionError as exc:
                self.failures[rel] = str(exc)
                raise
        return self.results[rel]

    def _run(self, page: Path, rel: str) -> list[Ran]:
        blocks = page_blocks(page)
        runnable = [b for b in blocks if b.marker == "runnable" and "in" not in b.options]
        if not runnable:
            return []
        repo = self.tmp / "pages" / rel.replace("/", "_")
        shutil.copytree(self.base(), repo, symlinks=True)
        done: list[Ran] = []
        for n, block in enumerate(runnable):
            if missing_extra(block):
                continue
            with serving(block, self.tmp / "servers" / f"{rel.replace('/', '_')}-{n}") as ports:
                for command in block.commands():
                    done.append(run_shown(block, command, ports, repo))
        shutil.rmtree(repo)  # what it printed is kept; a failed page's copy stays to look at
        return done


def session_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of this test session that every xdist worker sees (pytest-xdist's
    documented pattern: the parent of the workers' own base folders); without xdist, the
    session's own base folder."""
    own = tmp_path_factory.getbasetemp()
    return own.parent if os.environ.get("PYTEST_XDIST_WORKER") else own


def shared_base(shared: Path) -> Path:
    """The docs' base (a `git clone` in which README's main job ran), built once per session
    for test_docs.py and test_docs_pages.py, which CI runs on different xdist workers: the
    first to ask builds it under a file lock, the others wait and use it (each page still
    runs in its own copy of it, so none sees another's changes)."""
    from filelock import FileLock

    repo, ready = shared / "docs-base", shared / "docs-base.ready"
    with FileLock(shared / "docs-base.lock"):
        if not ready.exists():
            shutil.rmtree(repo, ignore_errors=True)  # what a failed attempt left
            git_clone(ROOT, repo)
            main_job = " && ".join(setup_commands()[0][3:])
            code, out = run(["bash", "-c", main_job], repo)
            assert code == 0, f"{main_job}: exit {code}\n{out[-3000:]}"
            commit(repo, "reproduced")
            ready.touch()
    return repo


def missing_extra(block: Block) -> bool:
    """A block marked needs=module (an optional extra: ray, ik_llama_cpp) where the module is
    not installed is left out with a warning, as the service tests skip; with
    AGENTEVAL_REQUIRE_SERVICES=1 (CI) it fails instead."""
    needed = [m for m in block.options.get("needs", "").split(",") if m]
    absent = [m for m in needed if importlib.util.find_spec(m) is None]
    if not absent:
        return False
    why = f"{block.where}: not run, {', '.join(absent)} not installed (README's test command)"
    assert not REQUIRED, f"{why} (AGENTEVAL_REQUIRE_SERVICES=1)"
    warnings.warn(why, stacklevel=1)
    return True


def serve_port(text: str, ports: dict[int, int]) -> str:
    for shown, real in ports.items():
        text = text.replace(f"127.0.0.1:{shown}", f"127.0.0.1:{real}")
    return text


@contextmanager
def serving(block: Block, tmp: Path) -> Iterator[dict[int, int]]:
    """The block's loopback servers: {port shown in the page: real port}."""
    with ExitStack() as stack:
        ports = {}
        for shown, role in block.servers().items():
            assert role in SERVERS, f"{block.where}: no loopback server for role {role!r}"
            folder = tmp / role
            folder.mkdir(parents=True, exist_ok=True)
            url = stack.enter_context(SERVERS[role](folder))
            ports[shown] = int(url.rsplit(":", 1)[1])
        yield ports


def run_shown(block: Block, command: Command, ports: dict[int, int], repo: Path) -> Ran:
    text = serve_port(command.text, ports)
    if "background" in block.options:
        code, out = run_server(text, repo)
    elif block.language == "console":
        code, out = run(["bash", "-o", "pipefail", "-c", text], repo)
    else:
        code, out = run(["bash", "-euo", "pipefail", "-c", text], repo)
    where = f"{block.where}: `{command.text}`"
    wanted = command.exit_code
    assert code == wanted, f"{where}: exit {code}, not {wanted}\n{out[-4000:]}"
    expected = tuple(serve_port(line, ports) for line in command.expected)
    missing = missing_lines(expected, out)
    assert not missing, f"{where}: the output lacks {missing}\n--- it printed:\n{out[-4000:]}"
    return Ran(command, code, out, ports)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run_server(text: str, repo: Path, timeout: float = 300) -> tuple[int, str]:
    """Start a documented server on a free port, wait until it answers HTTP, stop it (an
    MLflow one without the job runner, as the tests' own servers: tests/services.py)."""
    port = free_port()
    text, count = re.subn(r"--port\s+\d+", f"--port {port}", text)
    assert count == 1, f"a background command needs --port: {text}"
    log = repo / f".server-{port}.log"
    with log.open("w") as sink:
        proc = subprocess.Popen(
            ["bash", "-c", f"exec {text}"], cwd=repo, env=command_env(repo) | NO_JOB_RUNNER,
            stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
        try:
            deadline, answered = time.monotonic() + timeout, False
            while time.monotonic() < deadline and proc.poll() is None and not answered:
                answered = answers(f"http://127.0.0.1:{port}/")
                time.sleep(0.5)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    out = log.read_text(errors="replace")
    return (0 if answered else 1), out + ("" if answered else "\n[never answered HTTP]")


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True  # an HTTP answer all the same
    except OSError:
        return False


@pytest.fixture(scope="session")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Pages:
    return Pages(tmp_path_factory.mktemp("docs"), session_folder(tmp_path_factory))


# README runs in tests/test_docs_readme.py: its blocks in the order written, in one clone.
RUNNABLE_PAGES = [
    page for page in PAGES[1:] if any(b.marker == "runnable" for b in page_blocks(page))
]


def pointed_at(block: Block) -> list[str]:
    return [name for name in block.options.get("in", "").split(",") if name]


# The pages README's blocks point at run here, the others in tests/test_docs_pages.py, so
# that CI's xdist workers (a file's tests on one of them) run the halves side by side.
WITH_README = {ROOT / name for b in page_blocks(README) for name in pointed_at(b)}


@pytest.mark.timeout(3600)
@pytest.mark.parametrize(
    "page",
    [page for page in RUNNABLE_PAGES if page in WITH_README],
    ids=lambda p: p.relative_to(ROOT).as_posix(),
)
def test_the_commands_of_a_page_run_and_print_what_it_shows(page: Path, pages: Pages) -> None:
    check_page(page, pages)


def check_page(page: Path, pages: Pages) -> None:
    pages.run_page(page)


def test_a_block_that_points_at_pages_shows_commands_they_run() -> None:
    """`in=a.md,b.md`: the page that says more runs the same commands (README runs them as
    well, in its order), so the two cannot drift apart."""
    drifted = []
    for page in [README, *RUNNABLE_PAGES]:
        for block in page_blocks(page):
            if block.marker != "runnable" or not pointed_at(block):
                continue
            theirs = {c.text for name in pointed_at(block) for b in page_blocks(ROOT / name)
                      if b.marker == "runnable" for c in b.commands()}  # fmt: skip
            drifted += [f"{block.where}: `{c.text}`" for c in block.commands()
                        if c.text not in theirs]  # fmt: skip
    assert drifted == []


# -- the grammar's own checks: a wrong page must fail ----------------------------------------


def test_an_unmarked_shell_block_and_a_silent_command_block_are_refused(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```bash\ndvc repro\n```\n\n```\nagenteval run\n```\n\n"
        "```bash not-runnable:\nx\n```\n\n```text\nagenteval run\n```\n"
    )
    found = [p for b in parse(tmp_path, page) for p in problems(b)]
    assert [p.split(":", 2)[1] for p in found] == ["1", "5", "9"], found


def test_shown_output_is_matched_in_order_with_ellipses() -> None:
    out = "Running stage 'fetch':\nfetch: 5 files, 77,933 bytes in /tmp/x/data: 5 cached\nok\n"
    shown = ("fetch: 5 files, ... bytes in .../data: 5 cached", "...", "ok")
    assert missing_lines(shown, out) == []
    assert missing_lines(("ok", "Running stage 'fetch':"), out) == ["Running stage 'fetch':"]
    assert missing_lines(("fetch: 6 files...",), out) == ["fetch: 6 files..."]


def test_console_commands_with_continuations_exit_codes_and_output() -> None:
    block = parse_one("```console runnable\n$ agenteval a \\\n    --b  # exit 2\nsaid\n$ c\n```\n")
    first, second = block.commands()
    assert first.text == "agenteval a --b  # exit 2" and first.exit_code == 2
    assert first.expected == ("said",) and second.text == "c" and second.expected == ()


def parse_one(text: str) -> Block:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "p.md"
        page.write_text(text)
        (block,) = parse(Path(folder), page)
    return block
