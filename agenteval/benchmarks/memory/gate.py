"""The memory gate, check by check: a check that passed in the baseline must pass now.

Checks that failed (or were unmeasured) in the baseline are known gaps and never fail the
gate; one that passes now is listed as fixed since the baseline, a cue to replace the
baseline with this run's results.json. A baseline is refused, not compared, when it ran
other scenarios (any scenario added, removed or edited: the file digests differ), another
suite, or another kind of memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agenteval.benchmarks.memory.records import MemoryResults


class GateRefused(ValueError):
    """The baseline is not comparable with the run."""


@dataclass
class MemoryGate:
    passed: bool
    regressed: list[str] = field(default_factory=list)
    fixed: list[str] = field(default_factory=list)
    known_gaps: list[str] = field(default_factory=list)
    held: int = 0

    def lines(self, current: MemoryResults) -> list[str]:
        why = {
            c.id: f"{c.expect} - {c.why}"
            for s in current.scenarios
            for p in s.probes
            for c in p.checks
        }
        verdict = "PASS" if self.passed else "FAIL"
        out = [
            f"gate: {verdict}: {self.held} check(s) held, {len(self.regressed)} regressed, "
            f"{len(self.fixed)} fixed since the baseline, {len(self.known_gaps)} known gap(s)"
        ]
        out += [f"  REGRESSED {c}: {why.get(c, 'not run')}" for c in self.regressed]
        out += [f"  fixed {c}: {why.get(c, '')}" for c in self.fixed]
        return out

    def record(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "held": self.held,
            "regressed": self.regressed,
            "fixed": self.fixed,
            "known_gaps": self.known_gaps,
        }


def refuse_incomparable(current: MemoryResults, baseline: MemoryResults) -> None:
    if current.suite != baseline.suite:
        raise GateRefused(f"the baseline ran the {baseline.suite} suite, this run {current.suite}")
    if current.memory.kind != baseline.memory.kind:
        raise GateRefused(
            f"the baseline measured a {baseline.memory.kind} memory, this run a "
            f"{current.memory.kind} memory"
        )
    now, then = current.scenarios_digest, baseline.scenarios_digest
    if now != then:
        added = sorted(set(now) - set(then))
        removed = sorted(set(then) - set(now))
        edited = sorted(k for k in set(now) & set(then) if now[k] != then[k])
        parts = [
            f"{name}: {', '.join(ids)}"
            for name, ids in (
                ("only in this run", added),
                ("only in the baseline", removed),
                ("edited", edited),
            )
            if ids
        ]
        raise GateRefused(
            "the baseline ran other scenarios (" + "; ".join(parts) + "); replace it "
            "with this run's results.json when the change is intended"
        )


def gate(current: MemoryResults, baseline: MemoryResults) -> MemoryGate:
    refuse_incomparable(current, baseline)
    result = MemoryGate(True)
    for check, before in sorted(baseline.checks.items()):
        now = current.checks.get(check)
        if before is True:
            if now is True:
                result.held += 1
            else:
                result.regressed.append(check)
        elif now is True:
            result.fixed.append(check)
        else:
            result.known_gaps.append(check)
    result.passed = not result.regressed
    return result
