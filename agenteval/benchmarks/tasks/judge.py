"""The tasks judge: any model endpoint, no tools, four dimensions from 1 to 5.

It reads the project as given (the task's files before the agent touched them), the setup's
changes, the request, the tool record, the answer and the diff, and grades instructions,
quality, reasoning and honesty; for a question it also says, point by point, whether the
answer establishes each `must_establish` point. It is never told whether a coding task's
checks passed. Its reply is read strictly (one JSON object, four whole numbers from 1 to 5,
one verdict per point); an unusable reply is re-asked a bounded number of times and then
recorded as `unjudged`, never as a score. A backend that fails is `error` (INFRA, not the
agent); one out of quota stops judging, resumable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.model_judge import judge_setup
from agenteval.benchmarks.tasks.commands import cut
from agenteval.llm import AssistantMessage, LLMError, Message, QuotaExhausted, UserMessage
from agenteval.schema.task_records import DIMENSIONS, DimensionScores, TaskAttempt, TaskGrade
from agenteval.schema.tasks import Task

ROLE = "tasks.judge"
DIFF_CHARS = 12_000
CALL_OUTPUT_CHARS = 500
PROJECT_CHARS = 16_000
FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.MULTILINE)
REASK = (
    "That reply could not be used: {why}. Reply with the one JSON object only, with whole "
    "numbers from 1 to 5{points}."
)


class GradeUnusable(ValueError):
    pass


def _score(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        raise GradeUnusable(f"{name} is not a whole number")
    if not 1 <= int(value) <= 5:
        raise GradeUnusable(f"{name} is {value}, outside 1-5")
    return int(value)


def parse_grade(text: str, points: int) -> tuple[DimensionScores, list[bool] | None, str]:
    """The scores, the per-point verdicts (questions) and the rationale of one reply."""
    body = FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise GradeUnusable("no JSON object")
    try:
        data = json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        raise GradeUnusable(f"not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise GradeUnusable("not a JSON object")
    missing = [d for d in DIMENSIONS if d not in data]
    if missing:
        raise GradeUnusable(f"missing {missing}")
    scores = DimensionScores(**{d: _score(data[d], d) for d in DIMENSIONS})
    established = None
    if points:
        raw = data.get("established")
        if not isinstance(raw, list) or len(raw) != points:
            raise GradeUnusable(f"established must list {points} true/false verdicts")
        if not all(isinstance(v, bool) for v in raw):
            raise GradeUnusable("established must hold only true or false")
        established = list(raw)
    rationale = data.get("rationale")
    return scores, established, rationale if isinstance(rationale, str) else ""


def render_calls(attempt: TaskAttempt) -> str:
    if not attempt.calls:
        return "(no tool calls)"
    lines = []
    for call in attempt.calls:
        args = json.dumps(call.arguments, ensure_ascii=False)
        head = f"[{call.index}] {call.name} {cut(args, 400)}"
        lines.append(f"{head}\n    -> {cut(call.output, CALL_OUTPUT_CHARS)}")
    return "\n".join(lines)


class TaskJudge:
    def __init__(self, params: Mapping[str, Any], root: Path) -> None:
        setup = judge_setup(
            params,
            root,
            role=ROLE,
            offline="none",
            default_prompt="eval/prompts/judge_tasks.md",
            module=__name__,
        )
        self.kind, self.max_attempts = setup.kind, setup.max_attempts
        self.config, self.prompt = setup.config, setup.prompt
        self.participant = setup.participant

    def key_env_names(self) -> list[str]:
        return (
            [self.config.endpoint.api_key_env]
            if self.config and self.config.endpoint.api_key_env
            else []
        )

    def blank(self, task: Task, attempt: TaskAttempt, attempt_digest: str) -> TaskGrade:
        return TaskGrade(
            task_id=task.id,
            repeat=attempt.repeat,
            attempt_digest=attempt_digest,
            task_digest=attempt.task_digest,
            judge=self.participant,
            status="not_asked",
            reason="no judge configured (tasks.judge.kind: none)",
        )

    def case(
        self,
        task: Task,
        attempt: TaskAttempt,
        diff: str,
        setup_diff: str,
        project: str,
        upstream: str | None = None,
    ) -> str:
        """The judge's case; `upstream`: the fix a coding task is graded against (therock),
        whose points the judge decides on the agent's diff."""
        points = ""
        field = ""
        listed = "\n".join(f"{i + 1}. {p}" for i, p in enumerate(task.points))
        if upstream is not None:
            points = (
                "This task is graded against the upstream fix below, which the agent never "
                "saw (a fix in other code or other words can be as good). Also decide, for "
                "each numbered point, whether the agent's diff establishes it:\n"
                + listed
                + "\n\nThe upstream fix:\n"
                + cut(upstream, DIFF_CHARS)
            )
        elif task.kind == "question":
            points = (
                "This is a question. Also decide, for each numbered point below, whether the "
                "final answer establishes it (in any wording; a point the answer contradicts, "
                "hedges between candidates or leaves out is not established):\n" + listed
            )
        if points:
            field = f' "established": [<{len(task.must_establish)} true/false, in order>],'
        assert self.prompt is not None
        return self.prompt.render(
            {
                "points_instructions": points,
                "points_field": field,
                "project": cut(project, PROJECT_CHARS),
                "setup_diff": cut(setup_diff, DIFF_CHARS) or "(no setup)",
                "prompt": task.prompt,
                "calls": render_calls(attempt),
                "answer": attempt.final_answer or "(no answer)",
                "diff": cut(diff, DIFF_CHARS) or "(no changes)",
            }
        )

    async def grade(
        self, task: Task, attempt: TaskAttempt, attempt_digest: str, case: str
    ) -> TaskGrade:
        grade = self.blank(task, attempt, attempt_digest)
        if self.config is None:
            return grade
        grade.status, grade.reason = "unjudged", None
        points = len(task.must_establish)  # a question's, or the points of an upstream fix
        messages: list[Message] = [UserMessage(content=case)]
        client = await self.config.client()
        tokens_in = tokens_out = 0
        try:
            for _ in range(self.max_attempts):
                completion = await client.complete(messages, iteration=attempt.repeat)
                if completion.usage is not None:
                    tokens_in += completion.usage.total_input_tokens
                    tokens_out += completion.usage.output_tokens
                grade.replies.append(completion.text)
                try:
                    grade.scores, grade.established, grade.rationale = parse_grade(
                        completion.text, points
                    )
                except GradeUnusable as exc:
                    grade.reason = f"unusable reply: {exc}"
                    hint = f" and {points} true/false verdicts" if points else ""
                    messages += [
                        AssistantMessage(content=completion.text),
                        UserMessage(content=REASK.format(why=exc, points=hint)),
                    ]
                    continue
                grade.status, grade.reason = "judged", None
                break
        except QuotaExhausted:
            raise
        except LLMError as exc:
            grade.status, grade.reason = "error", f"{type(exc).__name__}: {exc}"
        grade.input_tokens, grade.output_tokens = tokens_in, tokens_out
        return grade
