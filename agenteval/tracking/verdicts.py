"""Every verdict of a run in one MLflow table, traced or not (`tracking.policy` may trace only
a sample): one row per turn with its scenario's status, score and root cause, the turn's
recomputed score, pass and dimension scores, and the turn's trace where it has one.

    rows = verdict_table(card, trace_ids, experiment_id)
    log_verdict_table(client, run_id, rows)       # artifact verdicts.json, shown by the UI

The rows are built from the scorecard alone (every figure recomputed in code), so the table
costs one artifact however large the run. Pure but for `log_verdict_table`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.tracking.records import TurnTrace

if TYPE_CHECKING:
    from mlflow import MlflowClient

TABLE_FILE = "verdicts.json"
TurnKey = tuple[str, int, int]  # (scenario id, iteration, turn)


def turn_key(turn: TurnTrace) -> TurnKey:
    """The turn a trace is of, from the tags `tracking.conversations` gives it."""
    tags = turn.tags
    return (
        tags["agenteval.scenario_id"],
        int(tags["agenteval.iteration"]),
        int(tags["agenteval.turn"]),
    )


def trace_link(experiment_id: str, trace_id: str) -> str:
    """The trace's page in the MLflow UI, relative to the UI's address."""
    return f"#/experiments/{experiment_id}/traces?selectedEvaluationId={trace_id}"


def verdict_table(
    card: Scorecard, trace_ids: Mapping[TurnKey, str], experiment_id: str
) -> dict[str, list[Any]]:
    """Columns of the table (MLflow's `log_table` takes a mapping of equal-length lists): a
    row per judged turn, or one row for a scenario with no turn (it never ran)."""
    dimensions = sorted({d for r in card.scenarios for t in r.turns for d in t.scores})
    rows = [row for result in card.scenarios for row in _rows(result, dimensions)]
    for row in rows:
        found = trace_ids.get((row["scenario_id"], row["iteration"], row["turn"] or 0))
        row["trace_id"] = found
        row["trace"] = trace_link(experiment_id, found) if found else None
    names = [*_FIELDS, *dimensions, "trace_id", "trace"]
    return {name: [row.get(name) for row in rows] for name in names}


_FIELDS = ("scenario_id", "iteration", "category", "status", "scenario_score", "root_cause",
           "turn", "turn_score", "turn_pass")  # fmt: skip


def _rows(result: ScenarioResult, dimensions: list[str]) -> list[dict[str, Any]]:
    head = {"scenario_id": result.id, "iteration": result.iteration,
            "category": result.category, "status": str(result.status),
            "scenario_score": result.score, "root_cause": result.root_cause}  # fmt: skip
    if not result.turns:
        return [head | {"turn": None, "turn_score": None, "turn_pass": None}]
    return [
        head
        | {"turn": turn.turn, "turn_score": turn.score, "turn_pass": turn.passed}
        | {d: turn.scores.get(d) for d in dimensions}
        for turn in result.turns
    ]


def log_verdict_table(client: MlflowClient, run_id: str, table: dict[str, list[Any]]) -> None:
    """The table as the run's artifact verdicts.json (MLflow's table format, which its UI
    lists among the run's tables); logged once per run."""
    if any(table.values()):
        client.log_table(run_id, data=table, artifact_file=TABLE_FILE)
