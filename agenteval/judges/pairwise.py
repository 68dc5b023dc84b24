"""`judge.kind: pairwise`: which of two replies is better, for work without ground truth.

Every pair is shown twice, in both orders (A first, then B first). The two answers are mapped
back to the replies; when they name the same reply it wins, when they differ (the judge
followed the position, not the reply) the pair is a tie (`two_order`). An answer that is not
the strict JSON the prompt asks for, after the re-asks, leaves the pair unmeasured, never a
tie or a win. `position_bias` measures how often a judge picks whichever reply it saw first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agenteval.fileio import code_of, digest_of
from agenteval.judges.output import InvalidOutput, json_schema_format, parse_output
from agenteval.llm import AssistantMessage, Message, SystemMessage, UserMessage
from agenteval.llm.config import EndpointConfig
from agenteval.llm.prompts import load_prompt
from agenteval.schema.transcript import Participant

KIND = "pairwise"
PROMPT = "judge_pairwise.md"
Choice = Literal["first", "second", "tie"]
Winner = Literal["a", "b", "tie"]
REASK = "That reply is not the JSON object asked for ({error}). Reply with the object only."


class PairChoice(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    winner: Choice
    reason: str


SCHEMA = PairChoice.model_json_schema()


@dataclass(frozen=True)
class PairOutcome:
    """A pair judged in both orders: `ab` when A was shown first, `ba` when B was."""

    ab: Choice | None
    ba: Choice | None
    reasons: tuple[str, str] = ("", "")

    @property
    def winner(self) -> Winner | None:
        return two_order(self.ab, self.ba)


def _as_reply(choice: Choice, first: Winner, second: Winner) -> Winner:
    found: dict[str, Winner] = {"first": first, "second": second, "tie": "tie"}
    return found[choice]


def two_order(ab: Choice | None, ba: Choice | None) -> Winner | None:
    """The pair's winner from both orders: the same reply twice wins, anything else ties;
    None (unmeasured) when either order went unanswered."""
    if ab is None or ba is None:
        return None
    first, second = _as_reply(ab, "a", "b"), _as_reply(ba, "b", "a")
    return first if first == second else "tie"


def position_bias(outcomes: Sequence[PairOutcome]) -> dict[str, Any]:
    """How often the judge chose the reply shown first, over every answered order that
    chose one (0.5: no position bias), with a Wilson interval; and how many pairs flipped
    with the order (the two orders named different replies)."""
    from agenteval.stats import wilson_interval

    chosen = [c for o in outcomes for c in (o.ab, o.ba) if c in ("first", "second")]
    firsts = sum(c == "first" for c in chosen)
    low, high = wilson_interval(firsts, len(chosen)) if chosen else (None, None)
    answered = [o for o in outcomes if o.winner is not None]
    flipped = sum(o.winner == "tie" and o.ab != "tie" and o.ab == o.ba for o in answered)
    return {
        "orders": len(chosen),
        "first_chosen": firsts,
        "first_rate": round(firsts / len(chosen), 4) if chosen else None,
        "first_rate_low": None if low is None else round(low, 4),
        "first_rate_high": None if high is None else round(high, 4),
        "pairs": len(answered),
        "flipped_with_order": flipped,
    }


def case_text(question: str, context: str, first: str, second: str) -> str:
    parts = [f"## Conversation so far\n{context}"] if context else []
    parts += [f"## User message\n{question}", f"## First reply\n{first}",
              f"## Second reply\n{second}"]  # fmt: skip
    return "\n\n".join(parts)


class PairwiseJudge:
    kind = KIND

    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params.get("judge") or {}
        self.config = EndpointConfig.from_params(params, "judge", root)
        self.max_attempts = int(section.get("max_attempts") or 3)
        prompt = load_prompt(root / (section.get("prompts") or "eval/prompts") / PROMPT)
        self.system = prompt.render({})
        described = {"endpoint": self.config.describe(), "prompt": prompt.sha256,
                     "code": code_of(__name__)}  # fmt: skip
        endpoint = self.config.endpoint
        self.participant = Participant(
            kind=KIND, model=endpoint.model, protocol=endpoint.protocol,
            config_digest=digest_of({"kind": KIND, **described}), details=described,
        )  # fmt: skip

    async def _ask(self, case: str, slot: int) -> tuple[Choice | None, str]:
        client = await self.config.client()
        messages: list[Message] = [SystemMessage(content=self.system), UserMessage(content=case)]
        fmt = json_schema_format("pair_choice", SCHEMA)
        for _ in range(self.max_attempts):
            done = await client.complete(messages, response_format=fmt, iteration=slot, seed=0)
            try:
                parsed = parse_output(done.text, PairChoice)
                return parsed.winner, parsed.reason
            except InvalidOutput as exc:
                messages = [*messages, AssistantMessage(content=done.text),
                            UserMessage(content=REASK.format(error=exc))]  # fmt: skip
        return None, "no valid answer"

    async def compare(
        self, question: str, context: str, reply_a: str, reply_b: str, slot: int = 0
    ) -> PairOutcome:
        """The pair judged in both orders (A first, then B first)."""
        ab, why_ab = await self._ask(case_text(question, context, reply_a, reply_b), slot)
        ba, why_ba = await self._ask(case_text(question, context, reply_b, reply_a), slot)
        return PairOutcome(ab, ba, (why_ab, why_ba))
