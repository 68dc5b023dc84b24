"""Parse YAML/JSON files while remembering the line of every key, for `path:line` messages."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from agenteval.schema.problems import Problem

Loc = tuple[str | int, ...]


@dataclass
class Located:
    """A parsed document and the 1-based line of each location in it."""

    path: str
    data: Any
    lines: dict[Loc, int] = field(default_factory=dict)

    def line(self, loc: Sequence[str | int]) -> int:
        """Line of `loc`, or of its nearest ancestor that has one."""
        key: Loc = tuple(loc)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.lines.get((), 1)

    def problem(
        self, loc: Sequence[str | int], message: str, warning: bool = False, strict: bool = False
    ) -> Problem:
        """A problem at `loc`; `strict` marks a warning that strict validation makes an error."""
        if warning or strict:
            return Problem(self.path, self.line(loc), message, "warning", strict)
        return Problem(self.path, self.line(loc), message)


def _walk(node: yaml.Node, loc: Loc, lines: dict[Loc, int], depth: int = 0) -> None:
    if depth > 200:  # pathological nesting: stop mapping lines, the parser already coped
        return
    lines.setdefault(loc, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            child = (*loc, str(key))
            lines[child] = key_node.start_mark.line + 1
            _walk(value_node, child, lines, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*loc, index), lines, depth + 1)


def _decode(raw: bytes, path: str) -> str | Problem:
    if b"\x00" in raw:
        return Problem(path, 1, "binary file (contains NUL bytes), expected UTF-8 text")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        return Problem(path, line, f"not valid UTF-8 text (byte {exc.start})")


# libyaml's parser when PyYAML was built with it: ~10x faster on the thousands of scenario
# files a large suite has. Errors are re-parsed with the pure-Python parser, whose messages
# and marks are the ones users (and tests) know.
_FAST_LOADER = getattr(yaml, "CSafeLoader", None)


def _parse(text: str, loader_class: Any) -> tuple[yaml.Node | None, Any]:
    """The node tree (for lines) and the data built from that same tree: one parse."""
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def load_located(path: Path, display: str | None = None) -> Located | Problem:
    """Read and parse a YAML (or JSON) file; any failure is a Problem, never an exception."""
    name = display or str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        return Problem(name, 1, f"cannot read file: {exc.strerror or exc}")
    text = _decode(raw, name)
    if isinstance(text, Problem):
        return text
    if not text.strip():
        return Problem(name, 1, "empty file")
    try:
        try:
            node, data = _parse(text, _FAST_LOADER or yaml.SafeLoader)
        except (yaml.YAMLError, RecursionError, ValueError, TypeError):
            if _FAST_LOADER is None:
                raise
            node, data = _parse(text, yaml.SafeLoader)  # the same error, in its usual words
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        return Problem(name, line, f"invalid YAML/JSON: {exc.problem or exc.context}")
    except (yaml.YAMLError, RecursionError, ValueError, TypeError) as exc:
        return Problem(name, 1, f"invalid YAML/JSON: {type(exc).__name__}")
    located = Located(name, data)
    if node is not None:
        _walk(node, (), located.lines)
    return located
