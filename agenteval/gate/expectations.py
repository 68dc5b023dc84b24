"""Expectations: gate limits from the worst of N draws, and checking a run against them.

A **draw** is one iteration index of one run over the whole suite (a run with
`suite.iterations: 3` is three draws), so `propose` can take several runs, several repeats, or
both. The limits are what *every* draw met, before a documented headroom for one noisy draw:

* `min_passed` — the worst draw's PASS count minus ``FLIP_HEADROOM`` (one scenario may flip);
* `min_avg_score` — the worst draw's average score minus ``SCORE_HEADROOM``;
* `max_unmeasured` — the worst draw's count of unmeasured scenarios, without headroom: a
  scenario that main always measured and this run did not is a miss;
* `max_total_tokens` / `max_cost_usd` — the most expensive draw's usage times
  ``USAGE_HEADROOM`` (usage is kept per run, so a draw's usage is its run's total divided by
  its iterations); not gated when the runs reported none.

The limits are tied to the agent model (kind + model), the scenario set (its digest) and the
judge (kind, model, config digest and scoring rules), because a different judge grades on a
different scale and a different suite counts different passes. ``propose`` refuses runs that
differ in any of them; ``check`` refuses (never passes) a run that does — a mismatch is
"not comparable", not a miss. The agent's own configuration (prompts, code, knobs) may
differ: that is what the gate is for.

A run meets the expectations when each of its draws does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agenteval.gate.runs import LoadedRun
from agenteval.params import flatten
from agenteval.schema.expectations import (
    DrawMeasure,
    Expectations,
    Headroom,
    Identity,
    Limits,
    ScenarioMeasure,
)
from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.schema.status import JUDGED_STATUSES, Status
from agenteval.scoring import ScoringRules, summarize

FLIP_HEADROOM = 1
SCORE_HEADROOM = 0.5
USAGE_HEADROOM = 1.35
MIN_DRAWS = 2
DIGITS = 4


class ExpectationsError(Exception):
    """Runs that cannot give or meet expectations (too few draws, mixed identities)."""


def _r(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


def identity(card: Scorecard) -> Identity:
    cfg = card.config
    target, judge = cfg.get("target") or {}, cfg.get("judge") or {}
    return Identity(
        agent={"kind": target.get("kind"), "model": target.get("model")},
        suite={
            "scenario_set_digest": cfg.get("scenario_set_digest"),
            "scenarios": len(cfg.get("scenarios") or {}),
        },
        judge={
            key: judge.get(key) for key in ("kind", "model", "protocol", "config_digest", "rules")
        },
    )


def identity_differences(expected: Identity, actual: Identity) -> list[str]:
    a, b = flatten(expected.model_dump()), flatten(actual.model_dump())
    return [
        f"{key}: {a.get(key)!r} -> {b.get(key)!r}"
        for key in sorted(a.keys() | b.keys())
        if a.get(key) != b.get(key)
    ]


def _rules(card: Scorecard) -> ScoringRules:
    rules = (card.config.get("judge") or {}).get("rules") or {}
    base = ScoringRules.from_params(rules)
    return ScoringRules(
        weights=base.weights,
        pass_threshold=base.pass_threshold,
        min_correctness=base.min_correctness,
        fail_cap=float(rules.get("fail_cap", base.fail_cap)),
    )


def _per_iteration(total: float | None, iterations: int) -> float | None:
    return None if not total else float(total) / iterations


def draws_of(run: LoadedRun) -> list[DrawMeasure]:
    card = run.card
    iterations = max(int(card.config.get("iterations") or 1), 1)
    usage = card.usage or {}
    tokens = (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
    by_iteration: dict[int, list[ScenarioResult]] = {}
    for row in card.scenarios:
        by_iteration.setdefault(row.iteration, []).append(row)
    rules = _rules(card)
    draws = []
    for iteration, rows in sorted(by_iteration.items()):
        s = summarize(rows, rules)
        judged = s.passed + s.failed + s.blocked
        draws.append(
            DrawMeasure(
                source=run.source,
                iteration=iteration,
                passed=s.passed,
                judged=judged,
                unmeasured=s.total - judged,
                judged_pass_rate=s.judged_pass_rate,
                avg_score=s.avg_score,
                total_tokens=_r(_per_iteration(tokens, iterations)),
                cost_usd=_r(_per_iteration(usage.get("cost_usd"), iterations)),
            )
        )
    return draws


def _scenario_measures(runs: Sequence[LoadedRun]) -> dict[str, ScenarioMeasure]:
    out: dict[str, ScenarioMeasure] = {}
    scores: dict[str, list[float]] = {}
    for run in runs:
        for row in run.card.scenarios:
            m = out.setdefault(row.id, ScenarioMeasure(k=0, n=0, draws=0))
            m.draws += 1
            if row.status in JUDGED_STATUSES:
                m.n += 1
                m.k += row.status == Status.PASS
                if row.score is not None:
                    scores.setdefault(row.id, []).append(row.score)
    for sid, values in scores.items():
        out[sid].score_mean = _r(sum(values) / len(values))
    return dict(sorted(out.items()))


def _ceiling(values: Sequence[float | None]) -> float | None:
    seen = [v for v in values if v]
    return _r(max(seen) * USAGE_HEADROOM) if seen else None


def limits_from(draws: Sequence[DrawMeasure]) -> Limits:
    scores = [d.avg_score for d in draws if d.avg_score is not None]
    return Limits(
        min_passed=max(0, min(d.passed for d in draws) - FLIP_HEADROOM),
        min_avg_score=_r(max(0.0, min(scores) - SCORE_HEADROOM)) if scores else None,
        max_unmeasured=max(d.unmeasured for d in draws),
        max_total_tokens=_ceiling([d.total_tokens for d in draws]),
        max_cost_usd=_ceiling([d.cost_usd for d in draws]),
    )


def propose(runs: Sequence[LoadedRun], commit: str | None = None) -> Expectations:
    """Limits every draw of `runs` met; ExpectationsError when they are not one identity."""
    if not runs:
        raise ExpectationsError("propose needs at least one run")
    first = identity(runs[0].card)
    for run in runs[1:]:
        diffs = identity_differences(first, identity(run.card))
        if diffs:
            raise ExpectationsError(
                f"{run.source} is not the same agent model, suite and judge as "
                f"{runs[0].source}: {'; '.join(diffs[:4])}"
            )
    draws = [d for run in runs for d in draws_of(run)]
    if len(draws) < MIN_DRAWS:
        raise ExpectationsError(
            f"{len(draws)} draw(s): limits from the worst of N need at least {MIN_DRAWS} "
            "(give several runs, or runs with suite.iterations >= 2)"
        )
    return Expectations(
        identity=first,
        proposed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        measured_on={
            "runs": [run.source for run in runs],
            "draws": len(draws),
            "commit": commit,
        },
        headroom=Headroom(flips=FLIP_HEADROOM, score=SCORE_HEADROOM, usage_factor=USAGE_HEADROOM),
        limits=limits_from(draws),
        measured=draws,
        scenarios=_scenario_measures(runs),
    )


@dataclass
class Check:
    name: str
    limit: float | int | None
    main_worst: float | int | None
    main_best: float | int | None
    run: float | int | None  # this run's worst draw for the metric
    ok: bool | None  # None: not gated (no limit, or nothing measured)


@dataclass
class GateResult:
    comparable: bool
    differences: list[str]
    checks: list[Check] = field(default_factory=list)
    scenarios: list[dict[str, Any]] = field(default_factory=list)
    draws: list[DrawMeasure] = field(default_factory=list)

    @property
    def missed(self) -> list[Check]:
        return [c for c in self.checks if c.ok is False]

    @property
    def verdict(self) -> str:
        if not self.comparable:
            return "not comparable"
        return "miss" if self.missed else "met"


# (check name, draw field, kind): "min" limits take the worst (lowest) draw, "max" the highest.
CHECKS: tuple[tuple[str, str, str], ...] = (
    ("min_passed", "passed", "min"),
    ("min_avg_score", "avg_score", "min"),
    ("max_unmeasured", "unmeasured", "max"),
    ("max_total_tokens", "total_tokens", "max"),
    ("max_cost_usd", "cost_usd", "max"),
)


def _check(name: str, kind: str, limit: Any, main: list[Any], now: list[Any]) -> Check:
    pick = min if kind == "min" else max
    seen_main = [v for v in main if v is not None]
    seen_now = [v for v in now if v is not None]
    worst = pick(seen_now) if seen_now else None
    best_of = max if kind == "min" else min
    check = Check(
        name,
        limit,
        pick(seen_main) if seen_main else None,
        best_of(seen_main) if seen_main else None,
        worst,
        None,
    )
    if limit is None:
        return check
    if worst is None:
        # Unmeasured is not a pass: a run with nothing to compare misses a floor.
        check.ok = kind == "max"
        return check
    check.ok = worst >= limit if kind == "min" else worst <= limit
    return check


def _scenario_rows(expected: Expectations, run: LoadedRun) -> list[dict[str, Any]]:
    current = _scenario_measures([run])
    rows = []
    for sid in sorted(expected.scenarios.keys() | current.keys()):
        main, now = expected.scenarios.get(sid), current.get(sid)
        row: dict[str, Any] = {
            "id": sid,
            "main": f"{main.k}/{main.n}" if main else "-",
            "run": f"{now.k}/{now.n}" if now else "-",
        }
        if main and now:
            if main.n and main.k == main.n and now.n and now.k < now.n:
                row["change"] = "fails now (passed in every main draw)"
            elif main.n and main.k == 0 and now.n and now.k > 0:
                row["change"] = "passes now (failed in every main draw)"
            elif main.n and not now.n:
                row["change"] = "not measured now"
        elif main is None:
            row["change"] = "new scenario"
        else:
            row["change"] = "missing from the run"
        rows.append(row)
    return rows


def check(expected: Expectations, run: LoadedRun) -> GateResult:
    """Main's measured results beside this run's, and which limits its draws miss."""
    differences = identity_differences(expected.identity, identity(run.card))
    draws = draws_of(run)
    result = GateResult(not differences, differences, draws=draws)
    result.scenarios = _scenario_rows(expected, run)
    if differences:
        return result
    limits = expected.limits.model_dump()
    for name, attr, kind in CHECKS:
        main = [getattr(d, attr) for d in expected.measured]
        now = [getattr(d, attr) for d in draws]
        result.checks.append(_check(name, kind, limits.get(name), main, now))
    return result
