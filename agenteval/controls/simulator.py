"""`agenteval simulator controls`: the simulator checks measured on labelled messages.

Each control is one simulated-user message for one scenario turn (objective, persona,
expected answer, whether it is the last turn) with a person's label: good, or failing named
checks. The checks (`simulators.checks`) run on it; the report gives, per split (dev / held
by a salted hash of the id, as the judge controls are dealt), agreement with the labels with
a bootstrap interval, missed faults (a bad message the checks let through: the number that
must stay 0 on held) and false flags, and per check its catches and misses.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.controls.agreement import estimate
from agenteval.controls.load import ControlsError
from agenteval.schema.located import load_located
from agenteval.schema.problems import Problem
from agenteval.schema.simulator_controls import SimulatorControl, SimulatorControlFile
from agenteval.simulators.checks import CHECKS, check_message

DEFAULT_FOLDER = Path("eval/simulator_controls")
SALT = "agenteval-simulator-controls-v1"  # fixed: changing it re-deals every control
HELD_SHARE = 0.5


@dataclass(frozen=True)
class Checked:
    control: SimulatorControl
    split: str
    found: list[str]  # the checks the message failed

    @property
    def ok(self) -> bool:
        return not self.found


def split_of(control_id: str) -> str:
    digest = hashlib.sha256(f"{SALT}:{control_id}".encode()).hexdigest()
    return "held" if int(digest[:8], 16) / 0x1_0000_0000 < HELD_SHARE else "dev"


def load_simulator_controls(folder: Path, root: Path) -> list[tuple[SimulatorControl, str]]:
    files = sorted(folder.glob("*.yaml"))
    if not files:
        raise ControlsError([Problem(str(folder), 1, "no simulator control files (*.yaml)")])
    found, problems, seen = [], [], set()
    for path in files:
        shown = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        located = load_located(path, shown)
        if isinstance(located, Problem):
            problems.append(located)
            continue
        try:
            parsed = SimulatorControlFile.model_validate(located.data)
        except ValidationError as exc:
            problems += [located.problem(list(e["loc"]), f"{'.'.join(map(str, e['loc']))}: "
                                         f"{e['msg']}") for e in exc.errors()]  # fmt: skip
            continue
        for i, c in enumerate(parsed.controls):
            if c.id in seen:
                line = located.line(["controls", i])
                problems.append(Problem(shown, line, f"duplicate control id {c.id!r}"))
            seen.add(c.id)
            found.append((c, split_of(c.id)))
    if problems:
        raise ControlsError(problems)
    return found


def check_controls(controls: Sequence[tuple[SimulatorControl, str]]) -> list[Checked]:
    return [
        Checked(c, split, [f.check for f in check_message(c.message, c.objective,
                                                          c.expected_answer, c.last)])
        for c, split in controls
    ]  # fmt: skip


def summary(checked: Sequence[Checked], resamples: int = 2000, seed: int = 0) -> dict[str, Any]:
    labels = [int(c.control.label.ok) for c in checked]
    verdicts = [int(c.ok) for c in checked]
    missed = [c.control.id for c in checked if not c.control.label.ok and c.ok]
    flagged = [c.control.id for c in checked if c.control.label.ok and not c.ok]
    per_check = {}
    for name in CHECKS:
        bad = [c for c in checked if name in c.control.label.failing]
        per_check[name] = {
            "labelled_failing": len(bad),
            "caught": sum(name in c.found for c in bad),
            "flagged_on_good": sum(name in c.found for c in checked if c.control.label.ok),
        }
    return {
        "controls": len(checked),
        "agreement": estimate("agreement", labels, verdicts, resamples, 0.95, seed).as_dict(),
        "missed_faults": missed,
        "false_flags": flagged,
        "checks": per_check,
    }


def simulator_report(checked: Sequence[Checked]) -> dict[str, Any]:
    splits = {s: summary([c for c in checked if c.split == s]) for s in ("dev", "held")}
    held = splits["held"]
    return {
        "schema": "agenteval.simulator_controls/1",
        "splits": splits,
        "overall": summary(checked),
        "passed": not held["missed_faults"],
        "details": [{"id": c.control.id, "split": c.split, "ok": c.control.label.ok,
                     "failing": c.control.label.failing, "found": c.found} for c in checked],
    }  # fmt: skip
