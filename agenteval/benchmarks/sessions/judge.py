"""The session judge: a model grades an answer against the reference, on substance, 0..5.

The reply must be exactly the JSON object of `SessionJudgment` (judges.output's strict
parser: no prose, no fence, no unknown or duplicate key, whole-number grade in range), and
consistent with the rubric: an answer flagged as claiming work it did not do, or as a
refusal, is graded the minimum. Anything else is re-asked a bounded number of times and then
left unjudged with the raw replies kept - never turned into a grade. The rubric's numbers are
rendered from scoring (SESSION_GRADE_*), the words live in eval/prompts/judge_session.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agenteval.fileio import code_of, digest_of
from agenteval.judges.output import InvalidOutput, json_schema_format, parse_output
from agenteval.llm import (
    AssistantMessage,
    Completion,
    LLMError,
    Message,
    QuotaExhausted,
    SystemMessage,
    UserMessage,
)
from agenteval.llm.config import EndpointConfig, endpoint_from, sum_usage
from agenteval.llm.prompts import load_prompt
from agenteval.schema.sessions import Exchange, ToolUse
from agenteval.schema.transcript import Participant, Usage
from agenteval.scoring import SESSION_GRADE_ANCHORS, SESSION_GRADE_MAX, SESSION_GRADE_MIN

ROLE = "sessions.judge"
KIND = "sessions-llm"
DEFAULT_PROMPT = "eval/prompts/judge_session.md"
REASK = (
    "Your reply could not be used: {error}\n"
    "Reply again with only the JSON object described in the instructions."
)
NO_TOOLS = "(none)"


class SessionJudgment(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    rationale: str = Field(min_length=1)
    claimed_unmade_work: bool
    refused: bool
    grade: int = Field(ge=SESSION_GRADE_MIN, le=SESSION_GRADE_MAX)

    @model_validator(mode="after")
    def _zero_when_flagged(self) -> SessionJudgment:
        if (self.claimed_unmade_work or self.refused) and self.grade != SESSION_GRADE_MIN:
            flag = "claimed_unmade_work" if self.claimed_unmade_work else "refused"
            raise ValueError(f"{flag} is true, so the grade must be {SESSION_GRADE_MIN}")
        return self


JUDGMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string"},
        "claimed_unmade_work": {"type": "boolean"},
        "refused": {"type": "boolean"},
        "grade": {"type": "integer", "minimum": SESSION_GRADE_MIN, "maximum": SESSION_GRADE_MAX},
    },
    "required": ["rationale", "claimed_unmade_work", "refused", "grade"],
    "additionalProperties": False,
}


@dataclass
class Graded:
    judgment: SessionJudgment | None
    replies: list[str] = field(default_factory=list)
    usage: Usage | None = None
    error: str | None = None


@dataclass(frozen=True)
class Case:
    """What the judge sees: the request, its context, the reference and the answer."""

    request: str
    context: list[Exchange]
    reference: str
    reference_tools: list[ToolUse]
    answer: str
    tools: list[ToolUse]


def grade_table() -> str:
    rows = ["| Grade | Meaning |", "|---|---|"]
    for grade in sorted(SESSION_GRADE_ANCHORS, reverse=True):
        rows.append(f"| {grade} | {SESSION_GRADE_ANCHORS[grade]} |")
    return "\n".join(rows)


def _tools(tools: list[ToolUse]) -> str:
    if not tools:
        return NO_TOOLS
    return "\n".join(f"- {t.name}" + (f" {t.target}" if t.target else "") for t in tools)


def case_text(case: Case) -> str:
    parts = []
    if case.context:
        parts.append("## Earlier in the conversation")
        for n, exchange in enumerate(case.context, 1):
            parts += [f"### Request {n}", exchange.request, f"### Reference answer {n}",
                      exchange.answer]  # fmt: skip
    parts += ["## Request", case.request]
    parts += ["## Reference answer", case.reference or "(empty)"]
    parts += ["## Tools the reference used", _tools(case.reference_tools)]
    parts += ["## Answer under test", case.answer or "(empty)"]
    parts += ["## Tools the agent under test used", _tools(case.tools)]
    return "\n\n".join(parts) + "\n"


def refuse_self_judge(params: Mapping[str, Any], section: Mapping[str, Any]) -> None:
    target = params.get("target") or {}
    same = (target.get("model"), target.get("base_url")) == (
        section.get("model"),
        section.get("base_url"),
    )
    if target.get("kind") not in (None, "builtin") and same and target.get("model"):
        raise ValueError(
            f"sessions.judge.model {section.get('model')!r} is the agent under test's own "
            "model and endpoint; grade with a different model"
        )


class SessionJudge:
    def __init__(self, params: Mapping[str, Any], root: Path) -> None:
        section = dict((params.get("sessions") or {}).get("judge") or {})
        endpoint = endpoint_from(section, ROLE)  # names sessions.judge.model when missing
        refuse_self_judge(params, section)
        # No response cache: it would keep the user's prompts outside the private folder.
        run = {**(params.get("run") or {}), "cache": False}
        self.config = EndpointConfig.from_params({"run": run, ROLE: section}, ROLE, root)
        self.max_attempts = int(section.get("max_attempts") or 3)
        prompt = load_prompt(root / str(section.get("prompt") or DEFAULT_PROMPT))
        values = {"grade_min": SESSION_GRADE_MIN, "grade_max": SESSION_GRADE_MAX,
                  "grade_table": grade_table()}  # fmt: skip
        self.system = prompt.render(values)
        structured = section.get("structured_output")
        self.structured = True if structured is None else bool(structured)
        details = {
            "endpoint": self.config.describe(),
            "prompt_sha256": prompt.sha256,
            "max_attempts": self.max_attempts,
            "structured_output": self.structured,
            "code": code_of(__name__),
        }
        self.participant = Participant(
            kind=KIND,
            model=endpoint.model,
            protocol=endpoint.protocol,
            config_digest=digest_of(details),
            details=details,
        )

    async def grade(self, case: Case, sample: int = 0) -> Graded:
        """One judgment of one answer; QuotaExhausted propagates (stop, resume later)."""
        client = await self.config.client()
        fmt = json_schema_format("session_judgment", JUDGMENT_SCHEMA) if self.structured else None
        messages: list[Message] = [
            SystemMessage(content=self.system),
            UserMessage(content=case_text(case)),
        ]
        done: list[Completion] = []
        graded = Graded(None)
        error = ""
        try:
            for _ in range(self.max_attempts):
                completion = await client.complete(messages, response_format=fmt, iteration=sample)
                done.append(completion)
                try:
                    graded.judgment = parse_output(completion.text, SessionJudgment)
                    break
                except InvalidOutput as exc:
                    error = str(exc)
                graded.replies.append(completion.text)
                messages = [*messages, AssistantMessage(content=completion.text),
                            UserMessage(content=REASK.format(error=error))]  # fmt: skip
            else:
                graded.error = f"no valid grade in {self.max_attempts} judge reply(ies): {error}"
        except QuotaExhausted:
            raise
        except LLMError as exc:
            graded.error = f"{type(exc).__name__}: {exc}"
        graded.usage = sum_usage(done)
        return graded
