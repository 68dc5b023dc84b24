"""A turn's grades as MLflow assessments: the judge's scores as feedback, the scenario's ground
truth as expectations, each naming its source (which judge, which scenario file)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agenteval.llm.scrub import Scrubber
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant
from agenteval.schema.verdict import TurnVerdict

if TYPE_CHECKING:
    from mlflow.entities import Assessment, AssessmentSource


def judge_source(judge: Participant, kind: str) -> AssessmentSource:
    """Names the judge: kind, model (when it is this dimension's judge) and config digest."""
    from mlflow.entities import AssessmentSource

    source_type = {"code": "CODE", "human": "HUMAN"}.get(kind, "LLM_JUDGE")
    model = judge.model if kind == judge.kind and judge.model else "-"
    digest = (judge.config_digest or "-")[:12]
    return AssessmentSource(source_type=source_type, source_id=f"{kind}:{model}:{digest}")


def feedback(judge: Participant, verdict: TurnVerdict, scrub: Scrubber) -> list[Assessment]:
    """One feedback per judged dimension; a dimension the judge could not judge has none."""
    from mlflow.entities import Feedback

    named = judge.model_dump(include={"kind", "model", "protocol", "config_digest"})
    metadata = {f"judge.{k}": str(v) for k, v in named.items() if v is not None}
    found: list[Assessment] = []
    for dimension, score in verdict.scores.items():
        if score is None:  # not judged: no feedback, never a zero
            continue
        kind = verdict.judged_by.get(dimension) or judge.kind
        reason = verdict.reasons.get(dimension)
        found.append(
            Feedback(
                name=dimension,
                value=float(score),
                rationale=scrub.scrub_text(reason) if reason else None,
                source=judge_source(judge, kind),
                metadata=dict(metadata),
            )
        )
    return found


def expectations(item: SuiteItem | None, turn_number: int, scrub: Scrubber) -> list[Assessment]:
    """The scenario turn's success criteria, tools and ground truth, sourced to its file."""
    from mlflow.entities import AssessmentSource, Expectation

    if item is None:
        return []
    turn = next((t for t in item.scenario.turns if t.turn == turn_number), None)
    if turn is None:
        return []
    truth = turn.ground_truth
    found: dict[str, Any] = {
        "success_criteria": turn.success_criteria,
        "expected_tools": turn.expected_tools or None,
        "forbidden_tools": item.scenario.forbidden_for(turn) or None,
    }
    if truth is not None:
        found["expected_answer"] = truth.expected_answer
        found["answer_unknown"] = True if truth.answer_unknown else None
        found["expected_phrases"] = truth.expected_phrases or None
        found["expected_behavior"] = truth.expected_behavior
    source = AssessmentSource(
        source_type="HUMAN", source_id=f"scenario:{item.path}@{item.digest[:12]}"
    )
    return [
        Expectation(name=name, value=scrub.scrub(value), source=source)
        for name, value in found.items()
        if value is not None
    ]
