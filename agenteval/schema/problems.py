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

    def __str__(self) -> str:
        tag = "" if self.severity == "error" else "warning: "
        return f"{self.path}:{self.line}: {tag}{self.message}"


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]
