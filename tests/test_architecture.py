"""The house rules of ARCHITECTURE.md, checked against the code.

Every module of the package belongs to a floor listed in ARCHITECTURE.md; a module imports
only from its own floor or below (lazy imports inside functions included), and no two modules
import each other, directly or around a circle.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agenteval"
FLOOR_ROW = re.compile(r"^\|\s*(\d+)\s*\|[^|]*\|\s*(.+?)\s*\|")
NAME = re.compile(r"`([a-z_][a-z0-9_]*)/?`")


def floors() -> dict[str, int]:
    """{top-level name under agenteval: floor}, read from ARCHITECTURE.md's floor table."""
    table: dict[str, int] = {}
    in_section = False
    for line in (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            in_section = line.strip() == "## Floors"
            continue
        match = FLOOR_ROW.match(line) if in_section else None
        if match:
            for name in NAME.findall(match.group(2)):
                assert name not in table, f"{name} is listed on two floors"
                table[name] = int(match.group(1))
    return table


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, name: str, known: set[str]) -> set[str]:
    """Every agenteval module `path` imports, at any depth (lazy and TYPE_CHECKING too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return {m for m in found if m in known and m != name}


def floor_of(module: str, table: dict[str, int]) -> int:
    parts = module.split(".")
    if len(parts) == 1:
        return 0  # the package root holds only __version__
    return table[parts[1]]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports_of(path, name, known) for name, path in found.items()}


def test_every_module_has_a_floor() -> None:
    table = floors()
    assert table, "ARCHITECTURE.md has no floor table"
    homeless = sorted(
        {m.split(".")[1] for m in modules() if "." in m and m.split(".")[1] not in table}
    )
    assert not homeless, f"not on any floor of ARCHITECTURE.md: {homeless}"


def test_imports_only_go_down(graph: dict[str, set[str]]) -> None:
    table = floors()
    upward = [
        f"{src} (floor {floor_of(src, table)}) imports {dst} (floor {floor_of(dst, table)})"
        for src, targets in graph.items()
        for dst in sorted(targets)
        if floor_of(dst, table) > floor_of(src, table)
    ]
    assert not upward, "\n".join(upward)


def test_no_import_circle(graph: dict[str, set[str]]) -> None:
    # A submodule importing its own package's __init__ is how Python packages work, not a
    # circle, as long as __init__ does not import that submodule back.
    state: dict[str, int] = {}
    stack: list[str] = []
    circles: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                circles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not circles, "\n".join(circles)


def test_pure_core_does_no_io() -> None:
    """The pure core (floor 1) opens no files, sockets or processes."""
    table = floors()
    core = [n for n, f in table.items() if f == 1]
    banned = re.compile(
        r"\b(open\(|read_text|write_text|read_bytes|write_bytes|subprocess|socket|httpx|mlflow)"
    )
    offenders = [
        f"{path.relative_to(ROOT)}:{i}"
        for name in core
        for path in (sorted((PACKAGE / name).rglob("*.py")) or [PACKAGE / f"{name}.py"])
        if path.is_file()
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if banned.search(line.split("#")[0])
    ]
    assert not offenders, offenders


def test_a_registered_benchmark_lives_in_its_folder(graph: dict[str, set[str]]) -> None:
    """A benchmark behind the protocol (agenteval.benchmarks.base.REGISTRY) is its folder: no
    module elsewhere imports it (the registry names it as a string, resolved on first use),
    branches on its name, or holds its settings, records or stages."""
    from agenteval.benchmarks.base import REGISTRY
    from agenteval.schema.params import Params

    files = {**modules(), **{
        f"stages.{p.stem}": p for p in sorted((ROOT / "stages").glob("*.py"))}}  # fmt: skip
    compared = {m: _compared_strings(p) for m, p in files.items()}
    imported = {m: graph.get(m) or imports_of(p, m, set(graph)) for m, p in files.items()}
    found: list[str] = []
    for name in REGISTRY:
        home = f"agenteval.benchmarks.{name}"
        for module, path in files.items():
            if module == home or module.startswith(home + "."):
                continue
            found += [f"{module} imports {d}" for d in sorted(imported[module]) if
                      d.startswith(home)]  # fmt: skip
            found += [f"{path.relative_to(ROOT)}:{line}: compares with {name!r}"
                      for line, text in compared[module] if text == name]  # fmt: skip
        found += [f"stages/{m[7:]}.py" for m in files if m.startswith(f"stages.{name}_")]
        found += [f"agenteval/schema/{name}.py"] * (PACKAGE / "schema" / f"{name}.py").exists()
        found += [f"Params.{name} (its Settings are in its folder)"] * (name in Params.model_fields)
    assert not found, "\n".join(found)


def _compared_strings(path: Path) -> list[tuple[int, str]]:
    """(line, string) of each string constant `path` compares with (`kind == "x"`, `in`)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, side.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        for side in [node.left, *node.comparators]
        if isinstance(side, ast.Constant) and isinstance(side.value, str)
    ]
