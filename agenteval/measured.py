"""How much of a run was measured: the one rule every benchmark and the scenario run follow.

A unit whose model or tool backend failed (refused, 5xx, garbage, a tool that crashed) is
unmeasured, never a measured failure. A run says how much it left unmeasured and why in its
headline (`45 of 105 checks unmeasured: model backend failed (...)`); a run that measured
nothing at all exits 3 with that reason (the CLI's EXIT_STOPPED and every stage's status 3),
never 0 with a score and never 1 as though the agent had failed. Each benchmark counts its
own units (checks, requests, attempts, tasks, cases, queries) into a `Coverage`; the
headline line and the exit rule live here only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from agenteval.schema.scorecard import ScenarioResult
from agenteval.schema.status import JUDGED_STATUSES

NOTHING_MEASURED_STATUS = 3


class NothingMeasured(RuntimeError):
    """A run whose every unit went unmeasured: its outputs are written, its status is 3."""


@dataclass(frozen=True)
class Coverage:
    """`unmeasured` of `total` units (`noun`) were not measured, the first for `reason`."""

    unmeasured: int
    total: int
    reason: str
    noun: str = ""

    @property
    def nothing(self) -> bool:
        """Not one unit was measured (none ran, or every one that ran went unmeasured)."""
        return self.unmeasured >= self.total

    def line(self) -> str | None:
        """The headline's line, or None when every unit was measured."""
        if not self.unmeasured:
            return None
        noun = f" {self.noun}" if self.noun else ""
        return f"{self.unmeasured} of {self.total}{noun} unmeasured: {self.reason}"

    def refusal(self) -> str:
        """What a run that measured nothing says before it exits 3."""
        return f"nothing measured: {self.line() or 'no unit ran'}"

    def check(self) -> None:
        """NothingMeasured when nothing was measured (for steps run through a stage)."""
        if self.nothing:
            raise NothingMeasured(self.refusal())


def first_reason(reasons: Iterable[str | None], default: str) -> str:
    """The first reason given (the one a reader fixes first), else `default`."""
    return next((r for r in reasons if r), default)


def scenario_coverage(results: Sequence[ScenarioResult]) -> Coverage:
    """Scenario units not judged (PASS, FAIL or BLOCKED) of all run, and why: their statuses
    and the first error (`2 of 6 scenarios unmeasured: 2 INFRA_ERROR (model backend failed:
    ...)`)."""
    unmeasured = [r for r in results if r.status not in JUDGED_STATUSES]
    counts = Counter(str(r.status) for r in unmeasured)
    found = ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
    first = first_reason((w for r in unmeasured for w in r.warnings), "")
    return Coverage(len(unmeasured), len(results), f"{found} ({first})" if first else found,
                    "scenarios")  # fmt: skip
