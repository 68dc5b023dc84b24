"""Source files into chunks with line spans and the symbols they define.

A Python file is cut along its definitions: each function, each method, and each class's
own lines (its header and class-level statements) is a chunk named by its qualified name
(`Class.method`, `outer.inner` for a def nested in a function); module-level statements
between definitions are chunks of their own, without a symbol. A definition longer than
`max_lines` is cut into windows that keep its name. A file that does not parse, and any
other extension, is cut into windows of `max_lines` lines.

`symbol_spans` gives every def/class of a file with its lines; `innermost` finds the
innermost one around a line, which is how a fix's changed lines become relevant symbols.

Reading follows one policy (`read_source`): a file with a NUL byte anywhere is binary (the
whole file is read, so a NUL past the first 8 KB counts too), a file over `max_bytes` is
skipped, text that is not UTF-8 is read as Latin-1 (every byte is a character there).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHUNKER = "python-ast-v2"
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class CodeChunk:
    path: str
    start: int  # 1-based, inclusive
    end: int
    symbol: str | None  # the definition this chunk is part of, if any
    symbols: tuple[str, ...]  # every definition that starts inside it
    text: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"

    def record(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "symbol": self.symbol,
                "symbols": list(self.symbols), "text": self.text}  # fmt: skip

    @classmethod
    def from_record(cls, path: str, raw: dict[str, Any]) -> CodeChunk:
        return cls(path, int(raw["start"]), int(raw["end"]), raw.get("symbol"),
                   tuple(raw.get("symbols") or ()), str(raw["text"]))  # fmt: skip


@dataclass(frozen=True)
class Span:
    name: str
    start: int
    end: int
    is_class: bool = False


@functools.lru_cache(maxsize=100_000)
def tokens_of(text: str) -> tuple[str, ...]:
    """BM25 tokens of a chunk's search text, computed once per distinct text in a process:
    the same chunk is indexed again at every commit it survives."""
    from agenteval.corpus.retrieval import tokenize

    return tuple(tokenize(text))


def search_text(chunk: CodeChunk) -> str:
    """What BM25 indexes: the path, the symbol and the code, camelCase words split too."""
    head = f"{chunk.path} {chunk.symbol or ''}"
    return split_camel(f"{head}\n{chunk.text}")


def split_camel(text: str) -> str:
    """`GateResult` also as `Gate Result`, so a query in words finds it and vice versa."""
    words = {w for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", text) if CAMEL.search(w)}
    return text + ("\n" + " ".join(CAMEL.sub(" ", w) for w in sorted(words)) if words else "")


def read_source(path: Path, max_bytes: int) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it is not indexed)."""
    size = path.stat().st_size
    if size > max_bytes:
        return None, f"oversized ({size} bytes > {max_bytes})"
    data = path.read_bytes()
    if b"\0" in data:
        return None, "binary (a NUL byte)"
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return data.decode("latin-1"), None


def symbol_spans(source: str) -> list[Span]:
    """Every def and class with its qualified name and lines; [] when it does not parse.

    Only statements are visited (a def or class is always one): walking every expression
    node of a file costs ten times as much for nothing."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    out: list[Span] = []
    stack: list[tuple[list[ast.stmt], str]] = [(tree.body, "")]
    while stack:
        body, prefix = stack.pop()
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{node.name}"
                start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                end = node.end_lineno or node.lineno
                out.append(Span(name, start, end, isinstance(node, ast.ClassDef)))
                stack.append((node.body, f"{name}."))
            else:
                stack += [(block, prefix) for block in _blocks(node)]
    return sorted(out, key=lambda s: (s.start, -s.end, s.name))


def _blocks(node: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists inside a compound statement (if, for, while, with, try, match)."""
    blocks = [getattr(node, f) for f in ("body", "orelse", "finalbody") if hasattr(node, f)]
    blocks += [h.body for h in getattr(node, "handlers", [])]
    blocks += [c.body for c in getattr(node, "cases", [])]
    return [b for b in blocks if isinstance(b, list)]


def innermost(spans: list[Span], line: int) -> Span | None:
    around = [s for s in spans if s.start <= line <= s.end]
    return min(around, key=lambda s: (s.end - s.start, -s.start)) if around else None


def chunk_file(path: str, text: str, max_lines: int) -> list[CodeChunk]:
    lines = text.splitlines()
    spans = symbol_spans(text) if path.endswith(".py") else []
    if not spans:
        return list(_windows(path, lines, 1, len(lines), None, max_lines, []))
    # Each line belongs to its innermost definition among the units chunked: functions
    # (nested defs stay inside their function) and classes (their methods are units).
    units = [s for s in spans if not _inside_function(s, spans)]
    owner: list[Span | None] = [None] * (len(lines) + 2)
    for span in sorted(units, key=lambda s: (s.start, -s.end)):
        for n in range(span.start, min(span.end, len(lines)) + 1):
            owner[n] = span
    chunks: list[CodeChunk] = []
    n = 1
    while n <= len(lines):
        start, unit = n, owner[n]
        while n + 1 <= len(lines) and owner[n + 1] is unit:
            n += 1
        name = unit.name if unit else None
        chunks += _windows(path, lines, start, n, name, max_lines, spans)
        n += 1
    return [c for c in chunks if c.text.strip()]


def _inside_function(span: Span, spans: list[Span]) -> bool:
    """Whether a def/class is nested in a function (then it is part of that function)."""
    parents = [s for s in spans if s is not span and s.start <= span.start and s.end >= span.end]
    return any(not p.is_class for p in parents)


def _windows(path: str, lines: list[str], first: int, last: int, name: str | None,
             max_lines: int, spans: list[Span]) -> Iterator[CodeChunk]:  # fmt: skip
    while first <= last and not lines[first - 1].strip():
        first += 1  # blank lines at either end belong to no chunk
    while last >= first and not lines[last - 1].strip():
        last -= 1
    for start in range(first, last + 1, max_lines):
        end = min(last, start + max_lines - 1)
        inside = tuple(s.name for s in spans if start <= s.start <= end)
        yield CodeChunk(path, start, end, name, inside, "\n".join(lines[start - 1 : end]))
