"""A conversation's grades as MLflow assessments: the judge's scores of each turn as feedback,
the scenario's ground truth as expectations, the scenario's outcome as session-level feedback,
each naming its source (which judge, which scenario file, scoring in code)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agenteval.llm.scrub import Scrubber
from agenteval.schema.scorecard import ScenarioResult
from agenteval.schema.status import JUDGED_STATUSES, Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant
from agenteval.schema.verdict import TurnVerdict, Verdict

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

    metadata = {f"judge.{k}": str(v) for k, v in _judge_fields(judge).items()}
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


SCORING_SOURCE = "agenteval.scoring"  # statuses and scores are recomputed in code


def session_feedback(
    result: ScenarioResult,
    verdict: Verdict | None,
    session: str,
    scrub: Scrubber,
) -> list[Assessment]:
    """The scenario's outcome as session-level feedback (MLflow's multi-turn convention:
    attached to the session's first trace, metadata `mlflow.trace.session`): its status and
    score as scoring recomputed them, pass/fail where it was judged, and the judge's own
    scenario-level judgment (verdict status, root cause, recommended fix)."""
    from mlflow.entities import AssessmentSource, Feedback

    from agenteval.tracking.records import SESSION_KEY

    scoring = AssessmentSource(source_type="CODE", source_id=SCORING_SOURCE)
    meta = {SESSION_KEY: session, "agenteval.scenario_id": result.id,
            "agenteval.iteration": str(result.iteration)}  # fmt: skip
    cause = scrub.scrub_text(result.root_cause) if result.root_cause else None
    warnings = "; ".join(scrub.scrub_text(w) for w in result.warnings) or None
    found: list[Assessment] = [
        Feedback(name="scenario_status", value=result.status, rationale=cause or warnings,
                 source=scoring, metadata=dict(meta)),
    ]  # fmt: skip
    if result.status in JUDGED_STATUSES:
        passed = result.status == Status.PASS
        found.append(Feedback(name="scenario_pass", value=passed, source=scoring,
                              metadata=dict(meta)))  # fmt: skip
    if result.score is not None:
        why = f"mean of {len(result.turns)} turn score(s), recomputed in code"
        found.append(Feedback(name="scenario_score", value=float(result.score), rationale=why,
                              source=scoring, metadata=dict(meta)))  # fmt: skip
    if verdict is not None:
        source = judge_source(verdict.judge, verdict.judge.kind)
        named = {f"judge.{k}": str(v) for k, v in _judge_fields(verdict.judge).items()}
        if verdict.root_cause:
            fix = verdict.recommended_fix
            found.append(Feedback(name="root_cause", value=scrub.scrub_text(verdict.root_cause),
                                  rationale=scrub.scrub_text(fix) if fix else None,
                                  source=source, metadata=meta | named))  # fmt: skip
        said = [part for part in (verdict.root_cause, verdict.recommended_fix, verdict.error)
                if part]  # fmt: skip
        found.append(Feedback(name="judge_verdict", value=verdict.status,
                              rationale=scrub.scrub_text(" · ".join(said)) if said else None,
                              source=source, metadata=meta | named))  # fmt: skip
    return found


def _judge_fields(judge: Participant) -> dict[str, Any]:
    named = judge.model_dump(include={"kind", "model", "protocol", "config_digest"})
    return {k: v for k, v in named.items() if v is not None}
