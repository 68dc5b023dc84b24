"""The agent's editable artifacts: what agent.yaml lists, one edit, and restoring exact bytes.

An edit is ONE change: a knob of `target.params` (written into params.yaml on its own line,
comments kept) or the new text of one editable file. Files are handled as bytes so a revert
writes back exactly what was there, and a snapshot can say whether anything else moved.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agenteval.fileio import sha256_bytes
from agenteval.schema.agent import AgentConfig, KnobRange
from agenteval.schema.located import Located, load_located

AGENT_FILE = "agent.yaml"
PARAMS_FILE = "params.yaml"


class ClimbError(Exception):
    """A session cannot start or go on; the message says why (exit 2 at the command line)."""


@dataclass(frozen=True)
class Spec:
    """Where the agent lives and what of it may change."""

    root: Path
    agent_dir: str  # relative to root, e.g. eval/agents/default
    files: tuple[str, ...]  # relative to root
    knobs: Mapping[str, KnobRange]

    @property
    def artifacts(self) -> tuple[str, ...]:
        """Every file an edit may write (params.yaml only for knob edits)."""
        return (*self.files, PARAMS_FILE) if self.knobs else self.files


def load_spec(root: Path, params: Mapping[str, Any]) -> Spec:
    """The editable list of the configured agent (`<target.agent>/agent.yaml`)."""
    agent_dir = str(params["target"].get("agent") or "eval/agents/default").rstrip("/")
    rel = f"{agent_dir}/{AGENT_FILE}"
    if not (root / rel).is_file():
        raise ClimbError(f"{rel}:1: no agent config: list what a hillclimb may edit there")
    located = load_located(root / rel, rel)
    if not isinstance(located, Located):
        raise ClimbError(str(located))
    try:
        config = AgentConfig.model_validate(located.data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = located.line([str(p) for p in first["loc"]])
        loc = ".".join(map(str, first["loc"]))
        raise ClimbError(f"{rel}:{where}: {loc}: {first['msg']}") from None
    files = tuple(f"{agent_dir}/{name}" for name in config.editable.files)
    for name, path in zip(config.editable.files, files, strict=True):
        if name == AGENT_FILE or "/" in name or name.startswith("."):
            raise ClimbError(
                f"{rel}:{located.line(('editable', 'files'))}: {name!r} cannot be "
                "editable (a file of this folder, not agent.yaml)"
            )
        if not (root / path).is_file():
            raise ClimbError(f"{rel}:{located.line(('editable', 'files'))}: no file {path}")
    if config.editable.knobs and params["target"].get("kind", "builtin") not in ("builtin", "chat"):
        raise ClimbError(f"{rel}: knobs are target.params of the builtin and chat targets")
    return Spec(root, agent_dir, files, dict(config.editable.knobs))


@dataclass(frozen=True)
class Edit:
    """One proposed change. `knob` + `value`, or `file` + `text`; `why` is the proposer's."""

    knob: str | None = None
    value: float | int | None = None
    file: str | None = None
    text: str | None = None
    why: str = ""

    def describe(self) -> str:
        if self.knob is not None:
            return f"target.params.{self.knob} = {self.value}"
        return f"rewrite {self.file}"


@dataclass
class Change:
    """The files an edit writes: {path: (old bytes, new bytes)}."""

    files: dict[str, tuple[bytes, bytes]] = field(default_factory=dict)

    def diff(self) -> str:
        out: list[str] = []
        for path, (old, new) in sorted(self.files.items()):
            out += difflib.unified_diff(
                old.decode("utf-8", "replace").splitlines(keepends=True),
                new.decode("utf-8", "replace").splitlines(keepends=True),
                f"a/{path}",
                f"b/{path}",
            )
        return "".join(out)

    def added_text(self) -> str:
        """Lines the edit adds (what it could smuggle in), without the diff markers."""
        lines = self.diff().splitlines()
        return "\n".join(x[1:] for x in lines if x.startswith("+") and not x.startswith("+++"))


def knob_values(params: Mapping[str, Any], spec: Spec) -> dict[str, Any]:
    knobs = params["target"].get("params") or {}
    return {name: knobs.get(name) for name in spec.knobs}


def materialize(edit: Edit, root: Path) -> Change:
    """The bytes the edit writes. Raises ClimbError for an edit that cannot be written."""
    if edit.knob is not None:
        path = root / PARAMS_FILE
        old = path.read_bytes()
        return Change({PARAMS_FILE: (old, set_knob(old, edit.knob, edit.value))})
    if edit.file is None or edit.text is None:
        raise ClimbError("an edit names a knob and a value, or a file and its new text")
    target = root / edit.file
    old = target.read_bytes() if target.is_file() else b""
    return Change({edit.file: (old, edit.text.encode("utf-8"))})


_VALUE = re.compile(r"^(?P<head>\s*[\w-]+:\s*)(?P<value>[^#\s][^#]*?)(?P<tail>\s*(#.*)?)$")


def set_knob(params_yaml: bytes, knob: str, value: Any) -> bytes:
    """params.yaml with `target.params.<knob>` set to `value` on its own line, comments kept."""
    text = params_yaml.decode("utf-8")
    line = _key_line(text, ("target", "params", knob))
    if line is None:
        raise ClimbError(f"{PARAMS_FILE}: no target.params.{knob} line to edit; write it once")
    lines = text.splitlines(keepends=True)
    body = lines[line].rstrip("\r\n")
    match = _VALUE.match(body)
    if match is None:
        raise ClimbError(f"{PARAMS_FILE}:{line + 1}: target.params.{knob} is not a plain value")
    ending = lines[line][len(body) :]
    fresh, tail = _scalar(value), match["tail"]
    if tail.strip():  # keep the comment in its column when there is room
        width = len(match["value"]) + len(tail) - len(tail.lstrip())
        tail = " " * max(1, width - len(fresh)) + tail.lstrip()
    lines[line] = f"{match['head']}{fresh}{tail}{ending}"
    return "".join(lines).encode("utf-8")


def _key_line(text: str, path: tuple[str, ...]) -> int | None:
    """0-based line of a nested mapping key written in block style, or None."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    for part in path:
        if not isinstance(node, yaml.MappingNode):
            return None
        found = [
            (k, v) for k, v in node.value if isinstance(k, yaml.ScalarNode) and k.value == part
        ]
        if not found:
            return None
        key, node = found[0]
    line = key.start_mark.line
    return line if isinstance(node, yaml.ScalarNode) and node.start_mark.line == line else None


def _scalar(value: Any) -> str:
    if isinstance(value, float):
        return repr(round(value, 10))
    return str(value)


def write(change: Change, root: Path, new: bool = True) -> None:
    """Write the new bytes (or, with new=False, the old ones back, byte for byte)."""
    for path, (old, fresh) in change.files.items():
        (root / path).write_bytes(fresh if new else old)


def fingerprint(root: Path, paths: tuple[str, ...]) -> dict[str, str | None]:
    """sha256 of each path (None when absent): proof that a revert restored every byte."""
    return {
        p: (sha256_bytes((root / p).read_bytes()) if (root / p).is_file() else None) for p in paths
    }
