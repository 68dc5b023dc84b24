"""The error a loader raises for input that cannot be used: every problem found in it.

Kept apart from `schema.problems`, which every target's code identity includes, so the
loaders' errors can change without invalidating stored transcripts."""

from __future__ import annotations

from typing import ClassVar

from agenteval.schema.problems import Problem


class InputError(Exception):
    """`problems`, each printed as `path:line: message`; the message is the problems joined
    by `separator`."""

    separator: ClassVar[str] = "\n"

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(self.separator.join(str(p) for p in problems))
        self.problems = problems
