"""Reading user files into models with `path:line` problems, shared by scenarios and manifests."""

from __future__ import annotations

from collections.abc import Set
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agenteval.schema.located import Loc, Located
from agenteval.schema.problems import Problem

M = TypeVar("M", bound=BaseModel)


def pattern(loc: Loc) -> str:
    return ".".join("*" if isinstance(part, int) else part for part in loc)


def unknown_keys(located: Located, shape: dict[str, Any], kind: str) -> list[Problem]:
    found: list[Problem] = []

    def visit(value: Any, loc: Loc) -> None:
        model = shape.get(pattern(loc))
        if isinstance(value, dict):
            if model is not None:
                allowed = set(model.model_fields)
                for key in value:
                    if str(key) not in allowed:
                        msg = f"unknown key {key!r} in {kind} {located.path} (ignored)"
                        found.append(located.problem((*loc, str(key)), msg, warning=True))
            for key, child in value.items():
                visit(child, (*loc, str(key)))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                visit(child, (*loc, index))

    visit(located.data, ())
    return found


def model_errors(located: Located, exc: ValidationError) -> list[Problem]:
    problems = []
    for error in exc.errors():
        loc = tuple(part for part in error["loc"] if not str(part).startswith("function-"))
        where = ".".join(str(p) for p in loc) or "file"
        problems.append(located.problem(loc, f"{where}: {error['msg']}"))
    return problems


def parse_model(located: Located, model: type[M], what: str) -> tuple[M | None, list[Problem]]:
    if not isinstance(located.data, dict):
        got = type(located.data).__name__
        return None, [located.problem((), f"a {what} must be a mapping, got {got}")]
    try:
        return model.model_validate(located.data), []
    except ValidationError as exc:
        return None, model_errors(located, exc)
    except (RecursionError, ValueError, TypeError) as exc:
        return None, [located.problem((), f"cannot read {what}: {type(exc).__name__}")]


def check_path_inside(raw: str, root: Path, known: Set[str] = frozenset()) -> str | None:
    """Why `raw` is not an acceptable repository path, or None when it is.

    Paths in `known` may be absent: files `agenteval fetch` materialises, and documents a
    manifest lists but the repository does not hold (the scenario is reported
    SKIPPED_NO_DOCUMENT, not invalid).
    """
    if not raw.strip():
        return "path is empty"
    candidate = Path(raw)
    if candidate.is_absolute():
        return f"path {raw!r} is absolute; use a path relative to the repository root"
    resolved = (root / candidate).resolve()
    if not resolved.is_relative_to(root.resolve()):
        return f"path {raw!r} escapes the repository root"
    if not resolved.is_file() and str(resolved.relative_to(root.resolve())) not in known:
        return f"path {raw!r} does not exist"
    return None


def display(path: Path, root: Path) -> str:
    """`path` relative to the repository root, as messages show it."""
    if path.is_absolute() and ".." not in path.parts:
        try:  # a file found under the root: no need to resolve both (a run lists thousands)
            return str(path.relative_to(root))
        except ValueError:
            pass
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)
