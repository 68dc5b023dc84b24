"""Problems found in user files, printed as `path:line: message` and never as tracebacks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True, order=True)
class Problem:
    path: str
    line: int
    message: str
    severity: Literal["error", "warning"] = "error"
    # A warning that `validate --strict` (and `run --strict`) treats as an error: input the
    # reference system's files use and we accept, such as a document with no manifest entry.
    strict: bool = False

    def __str__(self) -> str:
        tag = "" if self.severity == "error" else "warning: "
        return f"{self.path}:{self.line}: {tag}{self.message}"


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


def strictly(problems: list[Problem]) -> list[Problem]:
    """The same problems with every strict-only warning made an error."""
    return [
        Problem(p.path, p.line, p.message) if p.strict and p.severity == "warning" else p
        for p in problems
    ]
