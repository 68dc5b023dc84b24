"""What a model judge must reply, exactly: the verdict schemas and their strict parser.

A reply is accepted only when it is one JSON object and nothing else (no code fence, no
prose around it), with no duplicate key, no key the schema does not name, and every value
of the right type and range. Anything else is an `InvalidOutput` whose message is shown to
the model in the re-ask. The same models produce the JSON Schema sent as structured output
where the protocol supports it, so the decoder and the validator hold one contract.
"""

from __future__ import annotations

import json
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agenteval.scoring import DIMENSIONS, OPTIONAL_DIMENSIONS, SCORE_MAX, SCORE_MIN

MAX_ERROR_CHARS = 600
Model = TypeVar("Model", bound=BaseModel)


class InvalidOutput(ValueError):
    """The judge model's reply is not the JSON object the prompt asked for."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class DimensionMark(_Strict):
    reasoning: str
    # Strict: `true` or "8" is not a score; a model that writes one is asked again.
    score: float | None = Field(ge=SCORE_MIN, le=SCORE_MAX)


class TurnJudgment(_Strict):
    scores: dict[str, DimensionMark]
    total: float = Field(ge=SCORE_MIN, le=SCORE_MAX)
    # Whether the reply asks the user again for a fact an earlier turn established: an
    # observation, not a score; the recompute applies the rubric's cap (scoring.REASK_CAP).
    reasked: bool

    @model_validator(mode="after")
    def _dimensions(self) -> TurnJudgment:
        missing = [d for d in DIMENSIONS if d not in self.scores]
        unknown = sorted(set(self.scores) - set(DIMENSIONS))
        if missing or unknown:
            raise ValueError(f"scores must have exactly {list(DIMENSIONS)}; missing {missing}, "
                             f"unknown {unknown}")  # fmt: skip
        required = [d for d in DIMENSIONS if d not in OPTIONAL_DIMENSIONS]
        empty = [d for d in required if self.scores[d].score is None]
        if empty:
            only = list(OPTIONAL_DIMENSIONS)
            raise ValueError(f"{empty} must be scored; only {only} may be null")
        return self


class ScenarioJudgment(_Strict):
    status: Literal["PASS", "FAIL", "BLOCKED_BY_ARCHITECTURE"]
    root_cause: str | None
    recommended_fix: str | None


def _strict_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _mark_schema(optional: bool) -> dict[str, Any]:
    score: dict[str, Any] = {"type": ["number", "null"] if optional else "number"}
    return _strict_object({"reasoning": {"type": "string"}, "score": score})


TURN_SCHEMA = _strict_object(
    {
        "scores": _strict_object({d: _mark_schema(d in OPTIONAL_DIMENSIONS) for d in DIMENSIONS}),
        "total": {"type": "number"},
        "reasked": {"type": "boolean"},
    }
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


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """object_pairs_hook: a key given twice is ambiguous (which score counts?), so refused."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise InvalidOutput(f"duplicate key {key!r} in the JSON object")
        seen[key] = value
    return seen


def _constant(name: str) -> Any:
    raise InvalidOutput(f"{name} is not a JSON number")


def strict_json(text: str) -> Any:
    """The reply as JSON, or InvalidOutput: exactly one value, nothing around it."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_constant)
    except InvalidOutput:
        raise
    except ValueError as exc:
        stripped = text.strip()
        if stripped.startswith("```"):
            raise InvalidOutput("the reply is in a code fence; send the bare JSON") from None
        raise InvalidOutput(f"the reply is not exactly one JSON object ({exc})") from None


def parse_output(text: str, model: type[Model]) -> Model:
    data = strict_json(text)
    if not isinstance(data, dict):
        raise InvalidOutput("the reply must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'object'}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidOutput(problems[:MAX_ERROR_CHARS]) from None
