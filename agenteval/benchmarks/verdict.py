"""What every benchmark gate returns or raises: the result with its checks and flips, the
two refusals (not comparable; not readable), and the one rule for a tolerance."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


def allowed_change(tolerance: float | None, default: float) -> float:
    """The gate's tolerance: `default` (the kind's own) when None; refused outside [0, 1)."""
    allowed = default if tolerance is None else tolerance
    if not 0 <= allowed < 1:
        raise ValueError(f"--tolerance must be in [0, 1), got {allowed}")
    return allowed


SMALL_SET_QUESTIONS = 1.5


def tolerance_for(questions: int, tolerance: float) -> float:
    """Widened on small sets to 1.5 questions (1.5 / n): one flipped question passes, two fail."""
    return max(tolerance, SMALL_SET_QUESTIONS / questions) if questions else tolerance


def check(name: str, base: float | None, now: float | None, allowed: float) -> dict[str, Any]:
    """One gated figure: `now` may fall at most `allowed` below `base`."""
    if base is None:
        return {"name": name, "baseline": None, "current": now, "ok": True, "note": "no baseline"}
    if now is None:
        return {"name": name, "baseline": base, "current": None, "ok": False, "note": "not run"}
    drop = base - now
    return {
        "name": name,
        "baseline": base,
        "current": now,
        "ok": drop <= allowed + 1e-12,
        "note": f"drop {drop:.4f}" if drop > 0 else "",
    }


class GateRefused(Exception):
    """The two runs are not comparable."""


class GateInputError(Exception):
    """A run or baseline could not be read."""


@dataclass
class GateResult:
    passed: bool
    tolerance: float
    checks: list[dict[str, Any]] = field(default_factory=list)
    flipped: list[dict[str, Any]] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"gate: {'PASS' if self.passed else 'FAIL'} (tolerance {self.tolerance:.4f})"]
        for c in self.checks:
            mark = "ok  " if c["ok"] else "FAIL"
            out.append(
                f"  {mark} {c['name']}: baseline {_fmt(c.get('baseline'))}, "
                f"current {_fmt(c.get('current'))}{_note(c)}"
            )
        for f in self.flipped:
            out.append(f"  flipped {f['question']} ({f['what']}): {f['from']} -> {f['to']}")
        return out


def _fmt(value: Any) -> str:
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def _note(check: Mapping[str, Any]) -> str:
    return f" ({check['note']})" if check.get("note") else ""
