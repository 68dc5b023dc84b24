"""`judge.kind: mlflow`: an MLflow GenAI judge (`mlflow.genai.judges.make_judge`) grading the
correctness of each turn, with its provenance recorded like any other judge.

The judge's instructions are eval/prompts/judge_mlflow.md (rubric numbers rendered from
`scoring`, MLflow's `{{ inputs }}`, `{{ outputs }}` and `{{ expectations }}` left for MLflow);
its model is the `judge` endpoint of params (an OpenAI-compatible server: MLflow is given the
chat-completions URL and the key, read from `judge.api_key_env`, as a header, never written).
Its pass/fail becomes the turn's correctness (full marks or none); the other dimensions stay
ungraded (null), and a reply MLflow could not judge is ERRORED, never a score.

Needs an MLflow whose make_judge takes `base_url` (feature-detected; refused before any work
otherwise, naming the installed version).
"""

from __future__ import annotations

import asyncio
import inspect
import os
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of, sha256_text
from agenteval.judges.llm import refuse_self_judge
from agenteval.judges.prompts import rubric_values
from agenteval.llm.config import EndpointConfig
from agenteval.llm.prompts import load_prompt
from agenteval.schema.status import COMPLETED, NO_OPINION, Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, Transcript
from agenteval.schema.verdict import TurnVerdict, Verdict
from agenteval.scoring import SCORE_MAX, SCORE_MIN, ScoringRules

KIND = "mlflow"
PROMPT = "judge_mlflow.md"
OPENAI_KEY_ENV = "OPENAI_API_KEY"
MLFLOW_SLOTS = {name: "{{ " + name + " }}" for name in ("inputs", "outputs", "expectations")}


@dataclass(frozen=True)
class TurnCase:
    """What MLflow's judge is shown of one turn (also the fields of a trace MLflow's
    align() learns from: the root span's inputs and outputs, the expectations)."""

    turn: int
    inputs: dict[str, Any]
    outputs: str
    expectations: dict[str, Any]


def turn_cases(item: SuiteItem, transcript: Transcript) -> list[TurnCase]:
    """Every scenario turn as MLflow's judge sees it; KeyError when a turn went unanswered."""
    said = {t.turn: t for t in transcript.turns}
    cases = []
    for turn in item.scenario.turns:
        got = said[turn.turn]
        truth = turn.ground_truth.model_dump(exclude_none=True) if turn.ground_truth else {}
        if turn.success_criteria:
            truth["success_criteria"] = turn.success_criteria
        expectations = {k: v for k, v in truth.items() if v is not None}
        cases.append(TurnCase(turn.turn, {"question": got.user_message}, got.response,
                              expectations or {"expected_response": None}))  # fmt: skip
    return cases


def _make_judge() -> Any:
    from mlflow.genai.judges import make_judge

    if "base_url" not in inspect.signature(make_judge).parameters:
        raise ValueError(
            "judge.kind: mlflow needs make_judge(base_url=...), not in MLflow " + version("mlflow")
        )
    return make_judge


class MlflowJudge:
    kind = KIND

    def __init__(self, params: dict[str, Any], root: Path, instructions: str | None = None) -> None:
        """`instructions` replaces the rendered prompt (a judge MLflow's align() tuned)."""
        section = params.get("judge") or {}
        self.config = EndpointConfig.from_params(params, "judge", root)
        endpoint = self.config.endpoint
        if endpoint.protocol not in (None, "openai"):
            raise ValueError("judge.protocol: judge.kind mlflow speaks openai only")
        refuse_self_judge(params, endpoint)
        self.rules = ScoringRules.from_params(section)
        prompt = load_prompt(root / (section.get("prompts") or "eval/prompts") / PROMPT)
        digest = prompt.sha256 if instructions is None else sha256_text(instructions)
        if instructions is None:
            instructions = prompt.render(rubric_values(self.rules) | MLFLOW_SLOTS)
        key = endpoint.read_api_key()
        # MLflow's OpenAI provider refuses to start without OPENAI_API_KEY, even for a server
        # that wants none; the configured key goes as a header, the variable only fills in.
        os.environ.setdefault(OPENAI_KEY_ENV, key or "none")
        self.mlflow_judge = _make_judge()(
            name="agenteval_correctness",
            instructions=instructions,
            model=f"openai:/{endpoint.model}",
            base_url=endpoint.effective_base_url.rstrip("/") + "/chat/completions",
            extra_headers={"Authorization": f"Bearer {key}"} if key else None,
            feedback_value_type=bool,
        )
        described = {"endpoint": self.config.describe(), "prompt": digest,
                     "mlflow": version("mlflow"), "code": code_of(__name__)}  # fmt: skip
        self.participant = Participant(
            kind=KIND, model=endpoint.model, protocol="mlflow.make_judge",
            config_digest=digest_of({"kind": KIND, **described}), details=described,
        )  # fmt: skip

    async def _turn(self, case: TurnCase) -> TurnVerdict:
        feedback = await asyncio.to_thread(
            self.mlflow_judge, inputs=case.inputs, outputs=case.outputs,
            expectations=case.expectations,
        )  # fmt: skip
        if feedback.error is not None or not isinstance(feedback.value, bool):
            why = getattr(feedback.error, "error_message", None) or repr(feedback.value)
            raise RuntimeError(f"MLflow judge gave no verdict: {why}")
        score = SCORE_MAX if feedback.value else SCORE_MIN
        return TurnVerdict(turn=case.turn, scores={"correctness": float(score)},
                           reasons={"correctness": str(feedback.rationale or "")})  # fmt: skip

    async def judge(self, item: SuiteItem, transcript: Transcript, sample: int = 0) -> Verdict:
        verdict = Verdict(
            scenario_id=item.scenario.id, iteration=transcript.iteration,
            scenario_digest=item.digest, transcript_digest=digest_of(transcript),
            judge=self.participant, status=NO_OPINION,
        )  # fmt: skip
        if transcript.status != COMPLETED:
            verdict.status = transcript.status
            return verdict
        from mlflow.exceptions import MlflowException

        try:
            for case in turn_cases(item, transcript):
                verdict.turns.append(await self._turn(case))
        except (KeyError, RuntimeError, OSError, MlflowException) as exc:
            verdict.turns = []
            verdict.status, verdict.error = Status.ERRORED, f"{type(exc).__name__}: {exc}"
        return verdict
