"""What the agent may reach: its own copy of the project, and an environment without keys.

`confine` is the path boundary of the project's own tool-using harness: every path a tool is
given is resolved (symlinks followed) and refused unless it lands inside the copy, so `..`,
absolute paths and links out are all the same refusal. `agent_env` is the environment every
agent process and every command it runs gets, built from an allow-list (`AGENT_ENV_NAMES`,
plus what a task or harness declares), never by removing what looks secret: a variable the
list does not name (`*_PASSWD`, `*_CREDENTIALS`, a provider key) never reaches the agent,
and even a declared one is dropped when its name or value looks like a secret.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from agenteval.llm.scrub import SECRET_ENV_NAME, Scrubber

# The one list of what the agent's environment is made of (issue #42: an allow-list).
AGENT_ENV_NAMES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR", "TZ")
# Set for every command: no bytecode files in the diff, no third-party pytest plugins (the
# toybox uses none, and loading them cost 1.4 s of CPU per run here), no package index (an
# agent that tries to install something learns it cannot, and the machine stays as it was).
TASK_ENV = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "PIP_NO_INDEX": "1",
    "PYTHONUNBUFFERED": "1",
    "PYTHONNOUSERSITE": "1",
}


class OutsideWorkspace(ValueError):
    """A path that resolves outside the agent's copy."""


def confine(root: Path, path: str) -> Path:
    """`path` (relative to the copy, or absolute) resolved inside `root`, or refused."""
    if not isinstance(path, str) or not path.strip():
        raise OutsideWorkspace("a path is required")
    if "\x00" in path:
        raise OutsideWorkspace("a path cannot contain NUL")
    base = root.resolve()
    candidate = Path(path)
    resolved = (candidate if candidate.is_absolute() else base / candidate).resolve()
    if resolved != base and not resolved.is_relative_to(base):
        raise OutsideWorkspace(f"{path}: outside the project (only its own files are reachable)")
    return resolved


def relative(root: Path, path: Path) -> str:
    return path.relative_to(root.resolve()).as_posix() or "."


def secret_names(env: Mapping[str, str], key_env_names: Iterable[str]) -> set[str]:
    """Names whose values must never reach the agent."""
    wanted = set(key_env_names)
    shapes = Scrubber()  # shape rules only: a value shaped like a key is dropped too
    found = set()
    for name, value in env.items():
        named = name in wanted or SECRET_ENV_NAME.search(name)
        if named or (len(value) >= 16 and shapes.scrub_text(value) != value):
            found.add(name)
    return found


def agent_env(
    key_env_names: Iterable[str] = (),
    base: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
    allow: Iterable[str] = (),
) -> dict[str, str]:
    """The allow-listed variables of `base` (the process's environment), then the task
    settings and `extra`; `allow` names more variables to pass (a harness's own)."""
    source = dict(os.environ if base is None else base)
    wanted = [*AGENT_ENV_NAMES, *allow]
    picked = {name: source[name] for name in wanted if name in source}
    dropped = secret_names(picked, key_env_names)
    env = {name: value for name, value in picked.items() if name not in dropped}
    return {**env, **TASK_ENV, **dict(extra or {})}
