"""Small file helpers: canonical digests and atomic writes (temp file + rename)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace: equal values give equal bytes."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digest_of(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    return sha256_text(canonical_json(value))


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write via a temp file in the same directory and rename, so readers never see halves."""
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(raw)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class _Scrub(Protocol):
    def scrub(self, obj: Any) -> Any: ...

    def scrub_text(self, text: str) -> str: ...


_scrubber: _Scrub | None = None


def install_scrubber(scrubber: _Scrub | None) -> None:
    """Route every file this process writes through `scrubber` (known and shaped secrets)."""
    global _scrubber
    _scrubber = scrubber


def write_text(path: Path, text: str) -> None:
    write_atomic(path, _scrubber.scrub_text(text) if _scrubber else text)


def write_json(path: Path, value: Any) -> None:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True)
    if _scrubber is not None:
        value = _scrubber.scrub(value)
    write_atomic(path, json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False) + "\n")


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


PACKAGE_DIR = Path(__file__).resolve().parent
PACKAGE = PACKAGE_DIR.name


def _module_file(name: str, package_dir: Path) -> Path | None:
    """The source file of module `name` (dotted, starting with the package name), if any."""
    parts = name.split(".")[1:]
    base = package_dir.joinpath(*parts)
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    file = base.with_suffix(".py")
    return file if parts and file.is_file() else None


def _imported(name: str, file: Path, package_dir: Path) -> set[str]:
    """Project modules that `file` imports anywhere (module level or inside functions).

    `from P import x` counts the module P.x when x is a module, else P itself: the package
    is then only the path to the code that defines the name.
    """
    import ast

    package = name if file.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(file.read_bytes(), str(file))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.add(sub if _module_file(sub, package_dir) else base)
    root = package_dir.name
    return {
        m for m in found if (m == root or m.startswith(root + ".")) and _module_file(m, package_dir)
    }


def code_identity(module: str, package_dir: Path = PACKAGE_DIR) -> dict[str, str]:
    """sha256 of every source file `module` is built from: the module itself and, transitively,
    every project module it imports. Keyed by the file's path inside the package.

    This is the code part of a participant's identity: a stored transcript or verdict is
    reused, and two runs compare, only when the code that produced them is the same, while an
    edit elsewhere (another agent, the report) leaves them valid.
    """
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        file = _module_file(name, package_dir)
        if name in seen or file is None:
            continue
        seen[name] = file
        todo.extend(_imported(name, file, package_dir) - set(seen))
    return {
        file.relative_to(package_dir).as_posix(): sha256_file(file)
        for file in sorted(seen.values())
    }


# 16 hex digits (64 bits) per file name a change unambiguously and keep provenance short.
CODE_SHA_CHARS = 16


@functools.cache
def _code_of(module: str) -> tuple[tuple[str, str], ...]:
    return tuple((path, sha[:CODE_SHA_CHARS]) for path, sha in code_identity(module).items())


def code_of(module: str) -> dict[str, str]:
    """{file: short sha256} of the installed package's files `module` is built from; part of
    a participant's configuration digest and details, so a difference names the file."""
    return dict(_code_of(module))
