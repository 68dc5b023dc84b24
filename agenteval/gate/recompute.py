"""`agenteval recompute`: a scorecard's numbers, derived again from its own dimension scores.

A committed scorecard must be what the scoring rules give for the dimension scores it holds:
every turn's weighted score and pass, and every count, rate and average of the summary and its
categories. A hand-edited number, or rules changed without the reports regenerated, shows up
as a difference naming the field. The rules are the scorecard's own (config.judge.rules).
"""

from __future__ import annotations

from typing import Any

from agenteval.schema.scorecard import Scorecard
from agenteval.scoring import ScoringRules, summarize, turn_passes, turn_score

TOLERANCE = 1e-4  # scores are rounded to 4 places when written


def rules_of(card: Scorecard) -> ScoringRules:
    described = (card.config.get("judge") or {}).get("rules") or {}
    defaults = ScoringRules()
    return ScoringRules(
        weights=dict(described.get("weights") or defaults.weights),
        pass_threshold=float(described.get("pass_threshold", defaults.pass_threshold)),
        min_correctness=float(described.get("min_correctness", defaults.min_correctness)),
        fail_cap=float(described.get("fail_cap", defaults.fail_cap)),
    )


def _differs(a: Any, b: Any) -> bool:
    if isinstance(a, float | int) and isinstance(b, float | int):
        return abs(float(a) - float(b)) > TOLERANCE
    return bool(a != b)


def recompute(card: Scorecard) -> list[str]:
    """Every number of `card` that its dimension scores do not give; empty when all agree."""
    rules = rules_of(card)
    problems: list[str] = []
    for result in card.scenarios:
        where = f"scenarios[{result.id}#{result.iteration}]"
        for turn in result.turns:
            score = turn_score(turn.scores, rules)
            if _differs(score, turn.score):
                problems.append(f"{where}.turn {turn.turn}: score {turn.score} != {score}")
            passed = turn_passes(turn.scores, score, rules)
            if passed != turn.passed:
                problems.append(f"{where}.turn {turn.turn}: pass {turn.passed} != {passed}")
    fresh = summarize(card.scenarios, rules).model_dump()
    stored = card.summary.model_dump()
    for key, value in fresh.items():
        if key == "by_category":
            continue
        if _differs(stored.get(key), value):
            problems.append(f"summary.{key}: {stored.get(key)} != {value}")
    for name, cat in fresh["by_category"].items():
        had = stored["by_category"].get(name) or {}
        problems += [
            f"summary.by_category.{name}.{k}: {had.get(k)} != {v}"
            for k, v in cat.items()
            if _differs(had.get(k), v)
        ]
    return problems
