"""Synthetic scorecards for the noise and compare tests: one letter per iteration.

P = PASS (score 8), F = FAIL (score 4), B = BLOCKED_BY_ARCHITECTURE (score 3),
T = TIMEOUT, E = INFRA_ERROR, N = NOT_JUDGED (unmeasured, no score).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.schema.status import Status
from agenteval.scorecard import pass_counts
from agenteval.scoring import ScoringRules, dimension_means, summarize

LETTERS = {
    "P": (Status.PASS, 8.0),
    "F": (Status.FAIL, 4.0),
    "B": (Status.BLOCKED_BY_ARCHITECTURE, 3.0),
    "T": (Status.TIMEOUT, None),
    "E": (Status.INFRA_ERROR, None),
    "N": (Status.NOT_JUDGED, None),
}

BASE_CONFIG: dict[str, Any] = {
    "agenteval_version": "test",
    "target": {
        "kind": "builtin",
        "model": "builtin-bm25",
        "protocol": "in-process",
        "config_digest": "agent-a",
        "details": {"knobs": {"temperature": 0.5}},
    },
    "simulator": {
        "kind": "scripted",
        "model": None,
        "protocol": None,
        "config_digest": None,
        "details": {},
    },
    "judge": {
        "kind": "code",
        "model": None,
        "protocol": None,
        "config_digest": "judge-1",
        "details": {},
        "rules": ScoringRules().describe(),
    },
    "scenario_set_digest": "set",
    "corpus_digest": "corpus-1",
    "params_digest": "params",
    "seed": 0,
}


def make_card(
    rows: Mapping[str, str],
    *,
    categories: Mapping[str, str] | None = None,
    scores: Mapping[str, list[float]] | None = None,
    digests: Mapping[str, str] | None = None,
    config: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> Scorecard:
    """A scorecard whose scenario ``id`` has the iterations spelled by ``rows[id]``."""
    results = []
    for sid, letters in rows.items():
        for iteration, letter in enumerate(letters):
            status, score = LETTERS[letter]
            if scores and sid in scores and score is not None:
                score = scores[sid][iteration]
            results.append(
                ScenarioResult(
                    id=sid,
                    iteration=iteration,
                    category=(categories or {}).get(sid, "general"),
                    status=status,
                    score=score,
                    scenario_digest=(digests or {}).get(sid, f"d-{sid}"),
                )
            )
    iterations = max((len(v) for v in rows.values()), default=1)
    cfg = copy.deepcopy(BASE_CONFIG)
    cfg.update(
        iterations=iterations,
        seed=seed,
        seeds=[seed * 1000 + i for i in range(iterations)],
        scenarios={sid: (digests or {}).get(sid, f"d-{sid}") for sid in rows},
    )
    for key, value in (config or {}).items():
        cfg[key] = copy.deepcopy(value)
    rules = ScoringRules()
    return Scorecard(
        summary=summarize(results, rules),
        config=cfg,
        scenarios=results,
        pass_counts=pass_counts(results),
        dimension_means=dimension_means(results),
    )


def with_config(section: str, **changes: Any) -> dict[str, Any]:
    """A config override: BASE_CONFIG[section] with some keys changed."""
    value = copy.deepcopy(BASE_CONFIG[section])
    value.update(changes)
    return {section: value}
