"""Judge `llm`: a model grades each turn on the rubric, then judges the scenario as a whole.

Model output is never trusted as text: it must parse as JSON and validate against a pydantic
model, otherwise the judge is asked again (a bounded number of times) and then the verdict
is ERRORED with the reason. Scores are never guessed or repaired. The code judge runs on
the same transcript; wherever both graded a dimension and disagree sharply, the
disagreement is recorded in the verdict for calibration.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field, ValidationError, field_validator

from agenteval.fileio import code_of, digest_of
from agenteval.judges.code import CodeJudge, judge_transcript
from agenteval.judges.prompts import rubric_values, scenario_case, turn_case
from agenteval.llm import (
    AssistantMessage,
    BaseChatClient,
    Completion,
    Endpoint,
    LLMError,
    Message,
    QuotaExhausted,
    SystemMessage,
    UserMessage,
)
from agenteval.llm.config import EndpointConfig, endpoint_from, sum_usage
from agenteval.llm.prompts import load_prompt
from agenteval.schema.status import COMPLETED, NO_OPINION, Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, Transcript
from agenteval.schema.verdict import Disagreement, TurnVerdict, Verdict
from agenteval.scoring import DIMENSIONS, DISAGREEMENT_GAP, SCORE_MAX, SCORE_MIN, ScoringRules

KIND = "llm"
DEFAULT_MAX_ATTEMPTS = 3
# Two judges this far apart on one dimension are not rounding differently; they read the
# turn differently, and someone should look at it.
REASK = (
    "Your reply could not be used: {error}\n"
    "Reply again with only the JSON object described in the instructions."
)
MAX_ERROR_CHARS = 600
FENCE = re.compile(r"^\s*```[a-zA-Z]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)

Model = TypeVar("Model", bound=BaseModel)


class InvalidOutput(ValueError):
    """The judge model's reply is not the JSON object the prompt asked for."""


class JudgeOutputError(RuntimeError):
    """Still invalid after every allowed attempt."""


# -- what the judge must return -----------------------------------------------------------
class DimensionMark(BaseModel):
    reasoning: str
    # Strict: `true` or "8" is not a score; a model that writes one is asked again.
    score: float = Field(ge=SCORE_MIN, le=SCORE_MAX, strict=True)


class TurnJudgment(BaseModel):
    scores: dict[str, DimensionMark]
    total: float = Field(ge=SCORE_MIN, le=SCORE_MAX, strict=True)

    @field_validator("scores")
    @classmethod
    def _all_dimensions(cls, value: dict[str, DimensionMark]) -> dict[str, DimensionMark]:
        missing = [d for d in DIMENSIONS if d not in value]
        unknown = sorted(set(value) - set(DIMENSIONS))
        if missing or unknown:
            raise ValueError(f"scores must have exactly {list(DIMENSIONS)}; missing {missing}, "
                             f"unknown {unknown}")  # fmt: skip
        return value


class ScenarioJudgment(BaseModel):
    status: Literal["PASS", "FAIL", "BLOCKED_BY_ARCHITECTURE"]
    root_cause: str | None = None
    recommended_fix: str | None = None


def _strict_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


MARK_SCHEMA = _strict_object({"reasoning": {"type": "string"}, "score": {"type": "number"}})
TURN_SCHEMA = _strict_object(
    {"scores": _strict_object({d: MARK_SCHEMA for d in DIMENSIONS}), "total": {"type": "number"}}
)
NULLABLE_TEXT = {"type": ["string", "null"]}
SCENARIO_SCHEMA = _strict_object(
    {
        "status": {"type": "string", "enum": ["PASS", "FAIL", "BLOCKED_BY_ARCHITECTURE"]},
        "root_cause": NULLABLE_TEXT,
        "recommended_fix": NULLABLE_TEXT,
    }
)


def json_schema_format(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


def extract_json(text: str) -> Any:
    """The JSON object in a reply; tolerates code fences and chatter around one object."""
    fenced = FENCE.match(text)
    body = fenced.group(1) if fenced else text.strip()
    try:
        return json.loads(body)
    except ValueError:
        pass
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end <= start:
        raise InvalidOutput("the reply contains no JSON object")
    try:
        return json.loads(body[start : end + 1])
    except ValueError as exc:
        raise InvalidOutput(f"the reply is not valid JSON ({exc})") from None


def parse_output(text: str, model: type[Model]) -> Model:
    data = extract_json(text)
    if not isinstance(data, dict):
        raise InvalidOutput("the reply must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'object'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidOutput(problems[:MAX_ERROR_CHARS]) from None


# -- comparing with the code judge --------------------------------------------------------
def disagreements(
    llm: TurnVerdict, code: TurnVerdict, min_correctness: float
) -> list[Disagreement]:
    found = []
    for dim in DIMENSIONS:
        a, b = llm.scores.get(dim), code.scores.get(dim)
        if a is None or b is None:
            continue
        if abs(a - b) >= DISAGREEMENT_GAP:
            rule = "gap"
        elif dim == "correctness" and (a < min_correctness) != (b < min_correctness):
            rule = "threshold"
        else:
            continue
        found.append(
            Disagreement(
                turn=llm.turn,
                dimension=dim,
                llm_score=a,
                code_score=b,
                rule=rule,
                llm_reason=llm.reasons.get(dim),
                code_reason=code.reasons.get(dim),
            )
        )
    return found


def refuse_self_judge(params: Mapping[str, Any], judge: Endpoint) -> None:
    """A model grading its own answers is neither fair nor comparable across agents."""
    if (params.get("judge") or {}).get("allow_self_judge"):
        return
    target = params.get("target") or {}
    if target.get("kind") == "builtin" or not target.get("model"):
        return
    try:
        agent = endpoint_from(target, "target")
    except ValueError:
        return
    if (agent.public_base_url, agent.model) == (judge.public_base_url, judge.model):
        raise ValueError(
            f"judge.model {judge.model!r} at {judge.public_base_url} is the agent under test's "
            "own endpoint and model; point the judge at a different model, or set "
            "judge.allow_self_judge: true to accept a self-graded run"
        )


# -- the judge ----------------------------------------------------------------------------
class LLMJudge:
    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params.get("judge") or {}
        self.config = EndpointConfig.from_params(params, "judge", root)
        refuse_self_judge(params, self.config.endpoint)
        self.rules = ScoringRules.from_params(section)
        self.max_attempts = int(section.get("max_attempts", DEFAULT_MAX_ATTEMPTS))
        if self.max_attempts < 1:
            raise ValueError("judge.max_attempts must be at least 1")
        folder = root / section.get("prompts", "eval/prompts")
        prompts = [load_prompt(folder / "judge_turn.md"), load_prompt(folder / "judge_scenario.md")]
        values = rubric_values(self.rules)
        self.turn_system, self.scenario_system = (p.render(values) for p in prompts)
        # Anthropic endpoints are asked for JSON in the prompt and validated; OpenAI-compatible
        # servers (llama.cpp, vLLM, OpenAI) can also constrain decoding to the schema.
        structured = bool(section.get("structured_output", True))
        self.structured = structured and self.config.endpoint.protocol == "openai"
        self.code_judge = CodeJudge().participant
        shas = {p.path.name: p.sha256 for p in prompts}
        settings = {"max_attempts": self.max_attempts, "structured_output": self.structured}
        endpoint = self.config.endpoint
        self.participant = Participant(
            kind=KIND,
            model=endpoint.model,
            protocol=endpoint.protocol,
            config_digest=digest_of(
                {
                    "endpoint": self.config.describe(),
                    "prompts": shas,
                    "rules": self.rules.describe(),
                    "settings": settings,
                    "code": code_of(__name__),
                }
            ),
            details={
                "endpoint": self.config.describe(),
                "prompts": shas,
                **settings,
                "code": code_of(__name__),
            },
        )

    def _format(self, name: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        return json_schema_format(name, schema) if self.structured else None

    async def judge(self, item: SuiteItem, transcript: Transcript) -> Verdict:
        verdict = Verdict(
            scenario_id=item.scenario.id,
            iteration=transcript.iteration,
            scenario_digest=item.digest,
            transcript_digest=digest_of(transcript),
            judge=self.participant,
            status=NO_OPINION,
        )
        if transcript.status != COMPLETED:
            verdict.status = transcript.status  # unmeasured: nothing to grade
            return verdict
        code = judge_transcript(item, transcript, self.code_judge)
        if code.status == Status.ERRORED:
            verdict.status, verdict.error = Status.ERRORED, code.error
            return verdict
        asker = _Asker(
            await self.config.client(), self.max_attempts, transcript.iteration, transcript.seed
        )
        try:
            await self._grade(item, transcript, code, verdict, asker)
        except QuotaExhausted:
            raise  # the run must stop and resume later, not record a verdict
        except (JudgeOutputError, LLMError) as exc:
            verdict.status, verdict.error = Status.ERRORED, f"{type(exc).__name__}: {exc}"
        finally:
            verdict.judge_attempts = len(asker.completions)
            verdict.usage = sum_usage(asker.completions)
        # Reasons quote model output, which could echo a credential; verdicts are shared.
        scrubbed = self.config.endpoint.scrubber().scrub(verdict.model_dump(mode="json"))
        return Verdict.model_validate(scrubbed)

    async def _grade(
        self,
        item: SuiteItem,
        transcript: Transcript,
        code: Verdict,
        verdict: Verdict,
        asker: _Asker,
    ) -> None:
        said_by_number = {t.turn: t for t in transcript.turns}
        for code_turn in code.turns:
            said = said_by_number[code_turn.turn]
            if said.simulator_fault:
                # Scoring skips simulator-fault turns, so no model call is spent on them.
                verdict.turns.append(code_turn)
                continue
            case = turn_case(item, transcript, said)
            fmt = self._format("turn_judgment", TURN_SCHEMA)
            mark = await asker.ask(self.turn_system, case, TurnJudgment, fmt, f"turn {said.turn}")
            graded = TurnVerdict(
                turn=said.turn,
                scores={d: mark.scores[d].score for d in DIMENSIONS},
                judged_by=dict.fromkeys(DIMENSIONS, KIND),
                reported_score=mark.total,
                reasons={d: mark.scores[d].reasoning for d in DIMENSIONS},
            )
            verdict.turns.append(graded)
            verdict.disagreements += disagreements(graded, code_turn, self.rules.min_correctness)
        case = scenario_case(item, transcript, verdict.turns)
        fmt = self._format("scenario_judgment", SCENARIO_SCHEMA)
        overall = await asker.ask(self.scenario_system, case, ScenarioJudgment, fmt, "scenario")
        verdict.status = overall.status
        verdict.root_cause = overall.root_cause or None
        verdict.recommended_fix = overall.recommended_fix or None


class _Asker:
    """Asks one judging question, re-asking with the validation error until it gets JSON."""

    def __init__(
        self, client: BaseChatClient, max_attempts: int, iteration: int, seed: int
    ) -> None:
        self.client = client
        self.max_attempts = max_attempts
        self.iteration, self.seed = iteration, seed
        self.completions: list[Completion] = []

    async def ask(
        self,
        system: str,
        case: str,
        model: type[Model],
        response_format: dict[str, Any] | None,
        what: str,
    ) -> Model:
        messages: list[Message] = [SystemMessage(content=system), UserMessage(content=case)]
        error = ""
        for _ in range(self.max_attempts):
            completion = await self.client.complete(
                messages,
                response_format=response_format,
                iteration=self.iteration,
                seed=self.seed,
            )
            self.completions.append(completion)
            try:
                return parse_output(completion.text, model)
            except InvalidOutput as exc:
                error = str(exc)
            # The re-ask shows the model its own reply and what was wrong with it, which
            # fixes most slips (a missing key, a trailing comment) in one more call.
            messages = [
                *messages,
                AssistantMessage(content=completion.text),
                UserMessage(content=REASK.format(error=error)),
            ]
        raise JudgeOutputError(
            f"{what}: judge output invalid after {self.max_attempts} attempt(s): {error}"
        )
