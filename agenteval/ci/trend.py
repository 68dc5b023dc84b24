"""The backlog lane's trend: each run's pass rate against the target, carried run to run
(`agenteval ci-trend`). The workflow restores the previous trend file from the Actions
cache, appends this run and keeps the result as the `backlog-trend` artifact; the job
summary shows the table. Backlog scenarios are the ones not yet reliable enough for the
full sweep: the target is the share that must pass before they move up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

BACKLOG_TARGET = 0.80  # the share of backlog scenarios that must pass (reference 001)
MAX_POINTS = 104  # two years of weekly runs: the file stays small


def point(card: Mapping[str, Any], run: str, when: str, commit: str | None) -> dict[str, Any]:
    """This run's entry: pass rate over every backlog unit (unmeasured ones do not pass)."""
    summary = card.get("summary") or {}
    total, passed = int(summary.get("total") or 0), int(summary.get("passed") or 0)
    if total == 0:
        raise ValueError("the scorecard holds no unit: nothing to add to the trend")
    commits = card.get("commits") or ([commit] if commit else [])
    return {
        "run": run,
        "at": when,
        "commits": list(commits),
        "passed": passed,
        "total": total,
        "pass_rate": round(passed / total, 4),
    }


def extend(history: Sequence[Mapping[str, Any]], new: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The trend with `new` appended; a run already present (a re-run job) is replaced."""
    kept = [dict(p) for p in history if p.get("run") != new["run"]]
    return [*kept, dict(new)][-MAX_POINTS:]


def markdown(points: Sequence[Mapping[str, Any]], target: float) -> str:
    """The table the job summary shows, newest last, each run against the target."""
    rows = ["| run | date | passed | pass rate | target |", "|---|---|---|---|---|"]
    for p in points:
        met = "met" if p["pass_rate"] >= target else "below"
        rows.append(f"| {p['run']} | {p['at']} | {p['passed']}/{p['total']} | "
                    f"{p['pass_rate']:.0%} | {met} ({target:.0%}) |")  # fmt: skip
    last = points[-1]
    gap = last["pass_rate"] - target
    head = (f"Backlog: {last['passed']} of {last['total']} scenarios pass this run "
            f"({last['pass_rate']:.0%}), {abs(gap):.0%} {'above' if gap >= 0 else 'below'} "
            f"the {target:.0%} target")  # fmt: skip
    return "\n".join(["## " + head, "", *rows, ""])
