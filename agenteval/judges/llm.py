"""Judge `llm`: a model grades each turn on the rubric, then judges the scenario as a whole.

Model output is never trusted as text: it must be exactly the JSON object of
`judges.output` (no prose, no fence, no extra or duplicate key), otherwise the judge is
asked again (a bounded number of times) and then the verdict is ERRORED with the reason and
the raw reply. Scores are never guessed or repaired. The code judge runs on the same
transcript; wherever both graded a dimension and disagree sharply, the disagreement is
recorded in the verdict for calibration. `judges.hybrid` builds on this class and lets the
code's certain findings bind.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of
from agenteval.judges.code import CodeJudge, judge_transcript
from agenteval.judges.output import (
    SCENARIO_SCHEMA,
    TURN_SCHEMA,
    InvalidOutput,
    Model,
    ScenarioJudgment,
    TurnJudgment,
    json_schema_format,
    parse_output,
)
from agenteval.judges.prompts import TRUTH_POSITIONS, rubric_values, scenario_case, turn_case
from agenteval.llm import (
    AssistantMessage,
    BaseChatClient,
    Completion,
    Endpoint,
    LLMError,
    Message,
    QuotaExhausted,
    SystemMessage,
    TransientError,
    UserMessage,
)
from agenteval.llm.config import EndpointConfig, endpoint_from, sum_usage
from agenteval.llm.prompts import load_prompt
from agenteval.schema.status import COMPLETED, NO_OPINION, Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, Transcript
from agenteval.schema.verdict import Disagreement, TurnVerdict, Verdict
from agenteval.scoring import DIMENSIONS, DISAGREEMENT_GAP, ScoringRules

__all__ = ["SCENARIO_SCHEMA", "TURN_SCHEMA", "InvalidOutput", "LLMJudge", "parse_output"]

KIND = "llm"
DEFAULT_MAX_ATTEMPTS = 3
REASK = (
    "Your reply could not be used: {error}\n"
    "Reply again with only the JSON object described in the instructions."
)
# Repeated judgings of one transcript (judge.repeats) must be independent samples, so each
# gets its own response-cache slot: iteration + sample * SAMPLE_STRIDE, far above any
# iteration count a suite uses.
SAMPLE_STRIDE = 1_000_000
NOT_APPLICABLE_FIRST_TURN = "not applicable: the first turn has no earlier conversation"


class JudgeOutputError(RuntimeError):
    """Still invalid after every allowed attempt; `raw` is the model's last reply."""

    def __init__(self, message: str, raw: str) -> None:
        super().__init__(message)
        self.raw = raw


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
    kind = KIND

    def __init__(self, params: dict[str, Any], root: Path) -> None:
        section = params.get("judge") or {}
        self.config = EndpointConfig.from_params(params, "judge", root)
        refuse_self_judge(params, self.config.endpoint)
        self.rules = ScoringRules.from_params(section)
        self.max_attempts = int(section.get("max_attempts") or DEFAULT_MAX_ATTEMPTS)
        if self.max_attempts < 1:
            raise ValueError("judge.max_attempts must be at least 1")
        self.truth = str(section.get("ground_truth_position") or "before")
        if self.truth not in TRUTH_POSITIONS:
            raise ValueError(f"judge.ground_truth_position must be one of {TRUTH_POSITIONS}")
        folder = root / (section.get("prompts") or "eval/prompts")
        prompts = [load_prompt(folder / "judge_turn.md"), load_prompt(folder / "judge_scenario.md")]
        values = rubric_values(self.rules)
        self.turn_system, self.scenario_system = (p.render(values) for p in prompts)
        # Both protocols can constrain decoding to the schema (OpenAI-compatible servers with
        # response_format, Anthropic with output_config); the parser checks it either way.
        structured = section.get("structured_output")
        self.structured = True if structured is None else bool(structured)
        self.code_judge = CodeJudge().participant
        shas = {p.path.name: p.sha256 for p in prompts}
        settings = {
            "max_attempts": self.max_attempts,
            "structured_output": self.structured,
            "ground_truth_position": self.truth,
        }
        endpoint = self.config.endpoint
        self.participant = Participant(
            kind=self.kind,
            model=endpoint.model,
            protocol=endpoint.protocol,
            config_digest=digest_of(
                {
                    "kind": self.kind,
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

    async def judge(self, item: SuiteItem, transcript: Transcript, sample: int = 0) -> Verdict:
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
        slot = transcript.iteration + sample * SAMPLE_STRIDE
        asker = _Asker(await self.config.client(), self.max_attempts, slot, transcript.seed)
        try:
            await self._grade(item, transcript, code, verdict, asker)
        except QuotaExhausted:
            raise  # the run must stop and resume later, not record a verdict
        except JudgeOutputError as exc:
            verdict.status, verdict.error = Status.ERRORED, f"{type(exc).__name__}: {exc}"
            verdict.raw_reply = exc.raw
        except TransientError as exc:  # the judge's backend, not the agent: unmeasured
            verdict.status = Status.INFRA_ERROR
            verdict.error = f"judge backend failed: {type(exc).__name__}: {exc}"
        except LLMError as exc:
            verdict.status, verdict.error = Status.ERRORED, f"{type(exc).__name__}: {exc}"
        finally:
            verdict.judge_attempts = len(asker.completions)
            verdict.usage = sum_usage(asker.completions)
        # Reasons quote model output, which could echo a credential; verdicts are shared.
        scrubbed = self.config.endpoint.scrubber().scrub(verdict.model_dump(mode="json"))
        return Verdict.model_validate(scrubbed)

    def merge(self, graded: TurnVerdict, code: TurnVerdict, verdict: Verdict) -> TurnVerdict:
        """The turn's final grades: the model's, with every sharp disagreement recorded."""
        verdict.disagreements += disagreements(graded, code, self.rules.min_correctness)
        return graded

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
            case = turn_case(item, transcript, said, self.truth)
            fmt = self._format("turn_judgment", TURN_SCHEMA)
            mark = await asker.ask(self.turn_system, case, TurnJudgment, fmt, f"turn {said.turn}")
            verdict.turns.append(self.merge(_graded(said.turn, mark), code_turn, verdict))
        case = scenario_case(item, transcript, verdict.turns)
        fmt = self._format("scenario_judgment", SCENARIO_SCHEMA)
        overall = await asker.ask(self.scenario_system, case, ScenarioJudgment, fmt, "scenario")
        verdict.status = overall.status
        verdict.root_cause = overall.root_cause or None
        verdict.recommended_fix = overall.recommended_fix or None


def _graded(turn: int, mark: TurnJudgment) -> TurnVerdict:
    scores = {d: mark.scores[d].score for d in DIMENSIONS}
    reasons = {d: mark.scores[d].reasoning for d in DIMENSIONS}
    if turn == 1:
        # A fact, not a judgment: nothing came before, so nothing could be retained. A
        # score here would only inflate the turn against judges that leave it out.
        scores["context_retention"] = None
        reasons["context_retention"] = NOT_APPLICABLE_FIRST_TURN
    return TurnVerdict(
        turn=turn,
        scores=scores,
        judged_by={d: KIND for d in DIMENSIONS if scores[d] is not None},
        reported_score=mark.total,
        reasons=reasons,
        # Nothing came before the first turn, so nothing could be asked again.
        reasked=mark.reasked if turn > 1 else None,
    )


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
        error = raw = ""
        for _ in range(self.max_attempts):
            completion = await self.client.complete(
                messages,
                response_format=response_format,
                iteration=self.iteration,
                seed=self.seed,
            )
            self.completions.append(completion)
            raw = completion.text
            try:
                return parse_output(raw, model)
            except InvalidOutput as exc:
                error = str(exc)
            # The re-ask shows the model its own reply and what was wrong with it, which
            # fixes most slips (a missing key, a trailing comment) in one more call.
            messages = [
                *messages,
                AssistantMessage(content=raw),
                UserMessage(content=REASK.format(error=error)),
            ]
        raise JudgeOutputError(
            f"{what}: judge output invalid after {self.max_attempts} attempt(s): {error}", raw
        )
