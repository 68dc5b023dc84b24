"""The tasks' judge as an MLflow GenAI scorer, for `mlflow.genai.evaluate` on anyone's traces.

    from agenteval.benchmarks.tasks.scorer import tasks_scorer
    mlflow.genai.evaluate(data=traces_or_rows, scorers=[tasks_scorer(params)])

The judge is the one the tasks benchmark uses (`tasks.judge`: an endpoint, the prompt
eval/prompts/judge_tasks.md): it sees the request (the inputs), the trace's TOOL spans as the
tool record, and the final answer (the outputs), and grades instructions, quality, reasoning
and honesty from 1 to 5. Points the answer must establish come from the expectations
(`must_establish`, else `expected_facts`, else the `expected_response` as one point); with
points the scorer's verdict is True only when the judge finds every one established, as a
question task's PASS. A reply the judge cannot settle, or a backend that fails, is a feedback
with an error, never a score: unmeasured is not failed.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.benchmarks.tasks.judge import TaskJudge
from agenteval.fileio import digest_of
from agenteval.schema.task_records import DIMENSIONS, Answer, TaskAttempt, TaskGrade, TaskToolCall
from agenteval.schema.tasks import Point, Reference, Task
from agenteval.schema.transcript import Participant
from agenteval.tracking.assessments import judge_source
from agenteval.tracking.sessions import _reply, _text

if TYPE_CHECKING:
    from mlflow.entities import Feedback

NAME = "agenteval_tasks"


def points_of(expectations: Mapping[str, Any] | None) -> list[str]:
    """What the answer must establish, from MLflow's expectations (see the module doc)."""
    expected = dict(expectations or {})
    for key in ("must_establish", "expected_facts"):
        value = expected.get(key)
        if isinstance(value, list) and value:
            return [str(v) for v in value]
    for key in ("expected_response", "expected_answer"):
        if expected.get(key) is not None:
            return [f"The answer states: {_text(expected[key])}"]
    return []


def _calls(trace: Any) -> list[TaskToolCall]:
    if trace is None:
        return []
    spans = sorted(
        (s for s in trace.data.spans if str(s.span_type) == "TOOL"), key=lambda s: s.start_time_ns
    )
    calls = []
    for n, s in enumerate(spans):
        ok = str(s.status.status_code) != "ERROR"
        args = s.inputs if isinstance(s.inputs, dict) else {"input": s.inputs}
        output = s.outputs if isinstance(s.outputs, str) else json.dumps(s.outputs, default=str)
        error = None if ok else str(s.status.description or "error")
        calls.append(TaskToolCall(index=n, name=s.name, arguments=args, ok=ok, output=output,
                                  error=error))  # fmt: skip
    return calls


def task_case(
    inputs: Any, outputs: Any, expectations: Mapping[str, Any] | None, trace: Any
) -> tuple[Task, TaskAttempt]:
    """One traced reply as the (task, attempt) pair the tasks judge grades."""
    request = _text(inputs.get("prompt") or inputs.get("question") or inputs) if isinstance(
        inputs, dict) else _text(inputs)  # fmt: skip
    points = points_of(expectations)
    case = {"inputs": inputs, "expectations": dict(expectations or {})}
    # Built without the benchmark file's authoring rules (a question's wrong_answers, a coding
    # task's expect block): the judge reads only the id, kind, request and points.
    task = Task.model_construct(
        id="mlflow-" + digest_of(case)[:12], kind="question" if points else "coding",
        title="an MLflow trace", prompt=request or "(no request)",
        must_establish=[Point(point=p) for p in points],
        reference=Reference(answer="(none: the judge never sees a reference)"),
    )  # fmt: skip
    answer = outputs if isinstance(outputs, str) else _reply(outputs)
    calls = _calls(trace)
    attempt = TaskAttempt(
        task_id=task.id, task_digest=digest_of(case), harness=Participant(kind="mlflow"),
        status="COMPLETED", prompt=task.prompt, calls=calls,
        answers=[Answer(text=answer, after_call=len(calls))] if answer else [],
    )  # fmt: skip
    return task, attempt


def feedback_of(grade: TaskGrade, points: list[str]) -> list[Feedback]:
    """The grade as MLflow feedback: the verdict on the points (when any) and one per dimension."""
    from mlflow.entities import Feedback

    source = judge_source(grade.judge, grade.judge.kind)
    if grade.status != "judged" or grade.scores is None:
        why = grade.reason or grade.status
        return [Feedback(name=NAME, error=f"{grade.status}: {why}", source=source)]
    found = []
    if points:
        missing = [p for p, ok in zip(points, grade.established or [], strict=True) if not ok]
        rationale = "every point established" if not missing else f"not established: {missing}"
        found.append(Feedback(name=NAME, value=not missing, rationale=rationale, source=source))
    scores = grade.scores.model_dump()
    for dim in DIMENSIONS:
        found.append(Feedback(name=f"{NAME}.{dim}", value=float(scores[dim]), source=source,
                              rationale=grade.rationale or None))  # fmt: skip
    return found


def tasks_scorer(params: Mapping[str, Any], root: Path | None = None) -> Any:
    """An MLflow scorer grading with the tasks benchmark's judge (params `tasks.judge`)."""
    from mlflow.genai.scorers import scorer

    judge = TaskJudge(params, root or Path.cwd())
    if judge.config is None:
        raise ValueError("tasks.judge.kind: the tasks scorer needs kind llm and an endpoint")

    @scorer(name=NAME)
    def agenteval_tasks(
        inputs: Any = None, outputs: Any = None, expectations: Any = None, trace: Any = None
    ) -> list[Feedback]:
        task, attempt = task_case(inputs, outputs, expectations, trace)
        case = judge.case(task, attempt, diff="", setup_diff="", project="")
        grade = asyncio.run(judge.grade(task, attempt, attempt.task_digest, case))
        return feedback_of(grade, task.points)

    return agenteval_tasks
