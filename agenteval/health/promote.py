"""`agenteval promote DRAFT`: adopt a reviewed draft into the suite.

A draft is promoted only when

1. it is complete: it passes `validate` together with the suite (every turn has a ground
   truth or success criteria, ids are unique, documents exist) and a person wrote its
   `difficulty_rationale`; nothing personal or secret is left in it;
2. a replay against the configured agent (params.yaml and --set) shows it is **passable** —
   at least one judged iteration passed — and **not saturated** — at least one judged
   iteration of some replayed model failed. `--weak-set key=value` replays a weaker
   configuration too (the reference's "strong cloud model and resident local model"): a case
   the strong agent passes and the weak one fails is the useful kind.

Then it moves to eval/scenarios/<category>/<id>.yaml without its draft header.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.health.redact import DraftScrubber
from agenteval.params import apply_overrides, check_params
from agenteval.schema.input_error import InputError
from agenteval.schema.problems import Problem
from agenteval.schema.status import JUDGED_STATUSES, Status
from agenteval.suite.validate import DEFAULT_SCENARIOS, LoadedScenario, validate


class DraftInvalid(InputError):
    """Problems that keep a draft scenario from being promoted."""


@dataclass
class Replay:
    label: str
    k: int
    n: int
    statuses: list[str]
    run_dir: Path
    stop_reason: str | None = None


@dataclass
class Promotion:
    scenario_id: str
    replays: list[Replay] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)  # why it is refused; empty = promotable
    destination: Path | None = None

    @property
    def ok(self) -> bool:
        return not self.reasons


def check_draft(draft: Path, root: Path) -> LoadedScenario:
    """The draft, validated with the suite; DraftInvalid lists every gap as path:line."""
    result = validate([root / DEFAULT_SCENARIOS, draft], root=root)
    errors = [p for p in result.problems if p.severity == "error"]
    wanted = draft.resolve()
    loaded = next((s for s in result.scenarios if (root / s.path).resolve() == wanted), None)
    if loaded is None and not errors:
        errors = [Problem(str(draft), 1, "not a scenario file")]
    if loaded is not None:
        scenario = loaded.scenario
        if not (scenario.difficulty_rationale or "").strip():
            errors.append(
                loaded.located.problem(
                    ("difficulty_rationale",),
                    "difficulty_rationale: a person must say why "
                    "this case is hard before it is promoted",
                )
            )
        leaks = DraftScrubber(root).leaks(draft.read_text(encoding="utf-8"))
        if leaks:
            errors.append(Problem(loaded.path, 1, f"still holds {', '.join(leaks)}"))
    if errors:
        raise DraftInvalid(errors)
    assert loaded is not None
    return loaded


def replay(params: dict[str, Any], draft_rel: str, root: Path, out: Path, label: str) -> Replay:
    """Run the draft alone through the whole pipeline with these params."""
    from agenteval.fileio import write_json
    from agenteval.layout import Layout
    from agenteval.pipeline import run_evaluation

    run_params = copy.deepcopy(params)
    run_params["suite"].update(scenarios=[draft_rel], ids=[], categories=[], tier=None)
    run_params["tracking"]["enabled"] = False  # a check of the draft, not a result to keep
    write_json(out / "params.json", run_params)
    result = run_evaluation(run_params, Layout.run_dir(root, out))
    rows = result.scorecard.scenarios
    judged = [r for r in rows if r.status in JUDGED_STATUSES]
    k = sum(r.status == Status.PASS for r in judged)
    return Replay(label, k, len(judged), [r.status for r in rows], out, result.stop_reason)


def verdict(replays: Sequence[Replay]) -> list[str]:
    """Why the replays refuse the draft (empty: passable and not saturated)."""
    configured = replays[0]
    if configured.n == 0:
        return [f"the configured agent could not be measured on it: {configured.statuses}"]
    reasons = []
    if configured.k == 0:
        reasons.append(
            f"not passable: the configured agent failed all {configured.n} judged iteration(s); "
            "check the ground truth, or replay with a stronger agent (--set)"
        )
    measured = [r for r in replays if r.n]
    if all(r.k == r.n for r in measured):
        names = ", ".join(f"{r.label} {r.k}/{r.n}" for r in measured)
        reasons.append(
            f"saturated: every judged iteration passed ({names}); replay a weaker "
            "configuration with --weak-set to show it separates agents"
        )
    return reasons


def promote(
    draft: Path,
    params: dict[str, Any],
    root: Path,
    out: Path,
    *,
    iterations: int = 3,
    weak_sets: Sequence[str] = (),
    dest: Path | None = None,
    dry_run: bool = False,
) -> Promotion:
    loaded = check_draft(draft, root)
    scenario = loaded.scenario
    configured = copy.deepcopy(params)
    configured["suite"]["iterations"] = iterations
    runs = [replay(configured, loaded.path, root, out / "configured", "configured")]
    if weak_sets:
        weak = apply_overrides(configured, weak_sets)
        check_params(weak, None, [s.partition("=")[0].strip() for s in weak_sets])
        runs.append(replay(weak, loaded.path, root, out / "weak", "weak"))
    promotion = Promotion(scenario.id, runs, verdict(runs))
    if promotion.ok and not dry_run:
        target = dest or root / DEFAULT_SCENARIOS / scenario.category / f"{scenario.id}.yaml"
        promotion.destination = adopt(draft, target)
    return promotion


def adopt(draft: Path, target: Path) -> Path:
    """Move the draft into the suite, without the draft header comments."""
    from agenteval.fileio import write_text

    if target.exists():
        raise FileExistsError(f"{target} exists")
    lines = draft.read_text(encoding="utf-8").splitlines(keepends=True)
    start = 0
    while start < len(lines) and lines[start].startswith("#"):
        start += 1
    write_text(target, "".join(lines[start:]))
    draft.unlink()
    return target
