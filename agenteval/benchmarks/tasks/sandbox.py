"""Where the agent's commands run: a bubblewrap (`bwrap`) sandbox that reaches only its copy.

The one home of the policy. Every shell command of the project's own harness, every check
command run in the finished project (the agent's code runs there too) and Claude Code as a
whole process go through `Sandbox.wrap`:

* a root that shows only the system (`SYSTEM_PATHS`: /usr, /etc, the library folders), the
  interpreter and its venv, all read-only, a fresh /dev, its own /proc: the rest of the host
  (other clones of the project, other users' work, services' files) is not there at all;
* hidden, an empty tmpfs over each (`protected_paths`, the one list of them, also where a
  system or exposed folder holds one): the temporary folders (every other task's copy and every
  snapshot live there, or under `tasks.work_root`), /run (daemons' sockets), the user's home
  (~/.claude, ~/.config, ~/.ssh, tokens), the project repository and every git worktree of
  it, the task file's folder, the run folder, and `tasks.sandbox_hide`;
* shown read-only: the Python interpreter's prefixes (also when a hidden folder holds them: a
  venv inside the repository, an interpreter under the home), and `tasks.sandbox_expose`;
* read-write: the task's copy (and a mutant's copy for a check), nothing else;
* namespaces: user (no nested user namespace where bwrap can forbid it), pid (the command and
  everything it started die together: no process outlives its call), ipc, uts, cgroup, and
  network unless `tasks.sandbox_network`; no capabilities; its own session; it dies with
  its parent, so the timeout's kill of the process group still ends everything.

Mounts are applied from the shallowest path to the deepest, so a hidden folder stays hidden
under any exposed ancestor. `tasks.sandbox: none` runs commands unconfined, and the run says
so in its scorecard and summary; its commands are still started by a launcher (`LAUNCHER`)
that holds only the agent's environment, so `/proc/$PPID/environ` shows no key. Where bwrap
is missing or cannot create its namespaces, `check` refuses before any work, naming that
opt-out.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from agenteval.benchmarks.tasks.definitions import DEFAULT_FILE
from agenteval.layout import ANSWER_BEARING, moved_stores
from agenteval.scratch import temporary_folder

SandboxKind = Literal["bwrap", "none"]
KINDS: tuple[SandboxKind, ...] = ("bwrap", "none")
OPT_OUT = "tasks.sandbox: none (--set tasks.sandbox=none)"
# Hidden in every sandbox: where copies and snapshots live, and daemons' sockets.
SHARED_HIDDEN = ("/tmp", "/var/tmp", "/run", "/var/run")
CHECK_TIMEOUT_S = 20.0
UNSANDBOXED = "none: the agent's commands ran unconfined and could read the answer key"
# What the root of the sandbox shows besides the interpreter: the system, read-only.
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
# sandbox=none: a shell that stays the parent of the command (not `exec`), started with the
# agent's environment only, so /proc/$PPID/environ shows that, never the evaluator's keys.
LAUNCHER = ("/bin/sh", "-c", '"$@"; exit $?', "agenteval-launcher")


class SandboxUnavailable(Exception):
    """The sandbox cannot run here; the message names the opt-out."""


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(os.path.expanduser(str(path))))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def _git_lines(root: Path, *args: str) -> list[str]:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return done.stdout.splitlines() if done.returncode == 0 else []


def checkouts(root: Path) -> list[Path]:
    """`root`, every git worktree of its repository and the repository's git folder: each
    holds the task file (and the history holds it too)."""
    found = [root]
    for line in _git_lines(root, "worktree", "list", "--porcelain"):
        if line.startswith("worktree "):
            found.append(Path(line.removeprefix("worktree ")))
    common = _git_lines(root, "rev-parse", "--path-format=absolute", "--git-common-dir")
    found += [Path(common[0])] if common else []
    return found


def installed_source() -> list[Path]:
    """The checkout an editable install of agenteval points at (another copy of the key)."""
    from importlib import metadata

    try:
        raw = metadata.distribution("agenteval").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return []
    url = str((json.loads(raw) if raw else {}).get("url") or "")
    return [Path(url.removeprefix("file://"))] if url.startswith("file://") else []


def runtime_paths() -> list[Path]:
    """The running interpreter and its virtual environment: commands run `python` too."""
    prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    return [_real(p) for p in sorted(prefixes)] + [_real(sys.executable).parent]


@dataclass(frozen=True)
class Sandbox:
    """The sandbox policy of one run (kind `none`: commands run as they are)."""

    kind: SandboxKind = "bwrap"
    network: bool = False
    hidden: tuple[Path, ...] = ()
    exposed: tuple[Path, ...] = ()
    sealed: tuple[Path, ...] = ()  # never put back, whatever asks: the key's and run's folders
    executable: str = "bwrap"
    nested_userns_off: bool = True

    @property
    def label(self) -> str:
        """What a record says about the sandbox it ran in."""
        return self.label_for()

    def label_for(self, agent_network: bool = False) -> str:
        """The label of a run whose agent needs the network for itself (Claude Code's API)."""
        if self.kind == "none":
            return UNSANDBOXED
        if agent_network and not self.network:
            return "bwrap, network on for the agent (its API), off for the checks"
        return f"bwrap, network {'on' if self.network else 'off'}"

    def refuse_sealed(self, paths: Iterable[Path], what: str) -> None:
        """A path inside a sealed folder, or holding one, is never opened to the agent."""
        for path in paths:
            for sealed in self.sealed:
                if _inside(path, sealed) or _inside(sealed, path):
                    raise ValueError(f"{what}: {path} would open {sealed} to the agent")

    def wrap(
        self,
        argv: Sequence[str],
        cwd: Path,
        writable: Iterable[Path] = (),
        readable: Iterable[Path] = (),
        network: bool | None = None,
    ) -> list[str]:
        """`argv` as it runs in the sandbox, in `cwd`, with `writable` bound read-write and
        `readable` read-only (besides the policy's own); `network` overrides the policy."""
        if self.kind == "none":
            return [*LAUNCHER, *argv]
        rw = [_real(p) for p in writable]
        ro = [_real(p) for p in readable]
        self.refuse_sealed([*rw, *ro], "the sandbox cannot open")
        # (depth, order, path): shallow first, so deeper mounts win; at one path the later
        # kind wins (hidden < read-only < read-write).
        mounts = sorted(
            {(len(p.parts), 0, p) for p in self.hidden}
            | {(len(p.parts), 1, p) for p in (*self.exposed, *ro)}
            | {(len(p.parts), 2, p) for p in rw}
        )
        args = [self.executable, *_system_root(), "--dev", "/dev", "--proc", "/proc"]
        for _depth, order, path in mounts:
            if order == 0:
                hide = path.is_dir() or not path.exists()
                args += ["--tmpfs", str(path)] if hide else ["--ro-bind", "/dev/null", str(path)]
            else:
                args += ["--bind" if order == 2 else "--ro-bind", str(path), str(path)]
        args += ["--unshare-all", "--unshare-user"]
        args += ["--disable-userns"] if self.nested_userns_off else []
        args += ["--share-net"] if (self.network if network is None else network) else []
        args += ["--cap-drop", "ALL", "--die-with-parent", "--new-session"]
        return [*args, "--chdir", str(_real(cwd)), "--", *argv]

    def check(self) -> Sandbox:
        """This sandbox, proven to start here (a real command inside it); refused otherwise."""
        if self.kind == "none":
            return self
        found = shutil.which(self.executable)
        if found is None:
            raise SandboxUnavailable(
                f"tasks.sandbox is bwrap, but `{self.executable}` is not on PATH: install "
                f"bubblewrap (apt-get install bubblewrap) or run unsandboxed with {OPT_OUT} "
                "(the run is then recorded as 'sandbox: none')"
            )
        sandbox = replace(self, executable=found, nested_userns_off=_has_option(found))
        with temporary_folder("agenteval-sandbox-check-") as tmp:
            argv = sandbox.wrap(["true"], Path(tmp), writable=[Path(tmp)])
            try:
                done = subprocess.run(argv, capture_output=True, text=True, timeout=CHECK_TIMEOUT_S)
                why = done.stderr.strip() or f"exit code {done.returncode}"
                ok = done.returncode == 0
            except (OSError, subprocess.SubprocessError) as exc:
                why, ok = str(exc), False
        if not ok:
            raise SandboxUnavailable(
                f"tasks.sandbox is bwrap, but bwrap cannot create its sandbox here ({why[:300]}); "
                "user namespaces may be disabled (sysctl kernel.unprivileged_userns_clone, "
                "a container without them). Fix that, or run unsandboxed with "
                f"{OPT_OUT} (the run is then recorded as 'sandbox: none')"
            )
        return sandbox


def _system_root() -> list[str]:
    """The system folders, read-only (merged-/usr links as links)."""
    args: list[str] = []
    for path in SYSTEM_PATHS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def _has_option(executable: str, option: str = "--disable-userns") -> bool:
    """bwrap before 0.8 has no --disable-userns (nested namespaces still see the hidden
    folders hidden: mounts made here are locked for them)."""
    try:
        done = subprocess.run([executable, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return option in done.stdout + done.stderr


NO_SANDBOX = Sandbox(kind="none")


def _outermost(paths: set[Path], between: set[Path]) -> list[Path]:
    """`paths` without those inside another one, unless a path of `between` lies in
    between (a folder hidden inside an exposed one inside a hidden one stays hidden)."""
    keep = []
    for path in sorted(paths):
        covered = any(
            outer != path
            and _inside(path, outer)
            and not any(_inside(b, outer) and _inside(path, b) for b in between)
            for outer in paths
        )
        if not covered:
            keep.append(path)
    return keep


def protected_paths(
    root: Path | None, sealed: Iterable[Path] = (), work_root: Path | None = None
) -> list[Path]:
    """The one list of what no agent command may see (hidden even where a shown folder
    holds it): the temporary folders (copies, snapshots), daemons' sockets, the home (logins,
    tokens), the repository with every worktree and its git folder, the checkout an editable
    install points at, where copies are made, and the sealed folders (task file, run)."""
    wanted: list[Path] = [Path(p) for p in SHARED_HIDDEN]
    wanted += [Path(tempfile.gettempdir()), Path.home(), Path(os.environ.get("HOME", "~"))]
    wanted += [work_root] if work_root else []
    wanted += checkouts(root) if root else []
    wanted += [*installed_source(), *sealed]
    return sorted({_real(p) for p in wanted if os.path.lexists(os.path.expanduser(str(p)))})


def build(
    kind: str,
    *,
    network: bool = False,
    root: Path | None = None,
    sealed: Iterable[Path] = (),
    hide: Iterable[str | Path] = (),
    expose: Iterable[str | Path] = (),
    work_root: Path | None = None,
) -> Sandbox:
    """The policy for a run from `root` (the repository), the folders that hold the answer
    key or the run's records (`sealed`), and the user's extra `hide` / `expose` paths."""
    if kind not in KINDS:
        raise ValueError(f"tasks.sandbox must be one of {', '.join(KINDS)}, not {kind!r}")
    if kind == "none":
        return NO_SANDBOX
    sealed_paths = [_real(p) for p in sealed]
    hidden = protected_paths(root, [*sealed_paths, *(Path(p) for p in hide)], work_root)
    if Path("/") in hidden:
        raise ValueError("tasks.sandbox_hide: hiding / would hide everything")
    extra = [_real(p) for p in expose]
    needed = runtime_paths()
    if network:  # name resolution, whose file may live under /run (systemd-resolved)
        needed.append(_real("/etc/resolv.conf").parent)
    runtime = [p for p in needed if not any(_inside(p, Path(s)) for s in SYSTEM_PATHS)]
    exposed = _outermost({*extra, *runtime}, set())
    sandbox = Sandbox(
        kind="bwrap",
        network=network,
        hidden=tuple(_outermost(set(hidden), set(exposed))),
        exposed=tuple(exposed),
        sealed=tuple(sorted(set(sealed_paths))),
    )
    sandbox.refuse_sealed(extra, "tasks.sandbox_expose")
    return sandbox


def from_params(params: Mapping[str, Any], root: Path, sealed: Iterable[Path] = ()) -> Sandbox:
    """`tasks.sandbox`, `tasks.sandbox_network`, `tasks.sandbox_hide`, `tasks.sandbox_expose`;
    the task file's folder is always sealed."""
    section = params.get("tasks") or {}
    task_file = root / str(section.get("file") or DEFAULT_FILE)
    work_root = section.get("work_root")
    # The task file's folder, every answer-bearing folder (layout.ANSWER_BEARING, the fence's
    # list) and the stores a setting moved elsewhere (layout.moved_stores): hidden with the
    # checkout, refused as a tasks.sandbox_expose and as a tasks.work_root.
    sealed = [
        task_file.parent,
        *sealed,
        *(root / p for p in ANSWER_BEARING),
        *moved_stores(params, root),
    ]
    if work_root:
        refuse_work_root(Path(work_root), sealed)
    return build(
        str(section.get("sandbox", "bwrap")),
        network=bool(section.get("sandbox_network", False)),
        root=root,
        sealed=sealed,
        hide=list(section.get("sandbox_hide") or []),
        expose=list(section.get("sandbox_expose") or []),
        work_root=Path(work_root) if work_root else None,
    )


def refuse_work_root(work_root: Path, sealed: Iterable[Path]) -> None:
    """Copies made inside a sealed folder (the task file's, a run's records) would be bound
    writable into the agent's sandbox, and their folder's neighbours shown with them, in
    every sandbox kind: refused before any work."""
    where = _real(work_root)
    for folder in sealed:
        if _inside(where, _real(folder)):
            raise ValueError(
                f"tasks.work_root: {work_root} is inside {folder}, which the agent must never "
                "reach (the task file's folder, an answer-bearing folder or the run's records)"
            )


@functools.cache
def default_sandbox() -> Sandbox:
    """bwrap over the shared hides and, when this code runs from a git checkout, that
    checkout and its task folder: the sandbox of settings built without params."""
    top = _git_lines(Path(__file__).resolve().parent, "rev-parse", "--show-toplevel")
    root = Path(top[0]) if top else None
    sealed = [root / Path(DEFAULT_FILE).parent] if root else []
    return build("bwrap", root=root, sealed=sealed)
