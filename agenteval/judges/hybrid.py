"""Judge `hybrid`: the LLM judge, with the code judge's findings binding.

The code judge grades only what it can settle and defers the rest; every grade it gives
names its rule (`findings.CODE_FINDINGS`). Each rule that can score below full marks
(`findings.BINDING_FINDINGS`, derived from that table) sets a ceiling on its dimension: a
committed figure off (or only so close, by the precision table), a different name or
identifier, a refusal of an answerable question with or without a search, an expected value
absent, denied or offered among alternatives, a guess where the answer is not in the
documents, a forbidden tool, a loop. A model's higher score is replaced by the code's, and
the replacement is recorded as an override with its rule. The model keeps the last word
only where code defers (the dimension unscored, the turn NOT_JUDGED) or where code does not
grade the dimension at all (context retention, personality). Sharp disagreements that did
not bind are recorded as for the `llm` judge.

When the model's reply stays invalid after the re-asks, a verdict is still certain where a
binding finding fails a turn on its own (`scoring.fails_alone`: no score of the other
dimensions could pass it): the transcript gets the code judge's grades, status FAIL, with the
model's error and raw reply kept and each such finding recorded as an override of nothing.
Otherwise the verdict stays ERRORED: without the model nothing else is certain.

The configuration digest covers both instruments: the LLM judge's (endpoint, model,
prompts, rules, settings, code) and the code judge's, plus the binding rules themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import digest_of
from agenteval.findings import BINDING_FINDINGS
from agenteval.judges.code import KIND as CODE_KIND
from agenteval.judges.code import judge_transcript
from agenteval.judges.llm import LLMJudge, disagreements
from agenteval.schema.status import Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Override, TurnVerdict, Verdict
from agenteval.scoring import DIMENSIONS, ScoringRules, fails_alone

KIND = "hybrid"


def bind(graded: TurnVerdict, code: TurnVerdict) -> tuple[TurnVerdict, list[Override]]:
    """The model's turn grades with every binding code finding applied as a ceiling."""
    scores, reasons = dict(graded.scores), dict(graded.reasons)
    judged_by = dict(graded.judged_by)
    overrides = []
    for dim in DIMENSIONS:
        rule = code.findings.get(dim)
        ceiling = code.scores.get(dim)
        if rule not in BINDING_FINDINGS or ceiling is None:
            continue
        given = scores.get(dim)
        if given is not None and given <= ceiling:
            continue  # the model is already within what code allows
        overrides.append(
            Override(
                turn=graded.turn,
                dimension=dim,
                rule=rule,
                llm_score=given,
                code_score=ceiling,
                code_reason=code.reasons.get(dim),
                llm_reason=graded.reasons.get(dim),
            )
        )
        scores[dim] = ceiling
        reasons[dim] = f"set by code ({rule}): {code.reasons.get(dim, '')}".rstrip(": ")
        judged_by[dim] = CODE_KIND
    merged = graded.model_copy(
        update={
            "scores": scores,
            "reasons": reasons,
            "judged_by": judged_by,
            "findings": dict(code.findings),
        }
    )
    return merged, overrides


def failing_findings(code: Verdict, rules: ScoringRules) -> list[Override]:
    """The binding code findings that fail their turn whatever the model would say."""
    found = []
    for turn in code.turns:
        for dim, rule in turn.findings.items():
            score = turn.scores.get(dim)
            if rule in BINDING_FINDINGS and score is not None and fails_alone(dim, score, rules):
                reason = turn.reasons.get(dim)
                found.append(
                    Override(
                        turn=turn.turn,
                        dimension=dim,
                        rule=rule,
                        llm_score=None,
                        code_score=score,
                        code_reason=reason,
                    )
                )
    return found


def settled_by_code(errored: Verdict, code: Verdict, rules: ScoringRules) -> Verdict | None:
    """The FAIL code alone is sure of, for a verdict the model could not give; else None."""
    overrides = failing_findings(code, rules)
    if not overrides:
        return None
    first = overrides[0]
    error = f"the model judge gave no valid grade; code settled the FAIL: {errored.error}"
    return errored.model_copy(
        update={
            "status": Status.FAIL,
            "turns": [t.model_copy(deep=True) for t in code.turns],
            "overrides": overrides,
            "root_cause": f"turn {first.turn} {first.dimension}, set by code ({first.rule}): "
            f"{first.code_reason or ''}".rstrip(": "),
            "error": error,
        }
    )


class HybridJudge(LLMJudge):
    kind = KIND

    def __init__(self, params: dict[str, Any], root: Path) -> None:
        super().__init__(params, root)
        llm_digest = self.participant.config_digest
        self.participant = self.participant.model_copy(
            update={
                "config_digest": digest_of(
                    {
                        "kind": KIND,
                        "llm": llm_digest,
                        "code": self.code_judge.config_digest,
                        "binding": sorted(BINDING_FINDINGS),
                    }
                ),
                "details": {**self.participant.details, "binding": sorted(BINDING_FINDINGS)},
            }
        )

    async def judge(self, item: SuiteItem, transcript: Transcript, sample: int = 0) -> Verdict:
        verdict = await super().judge(item, transcript, sample)
        if verdict.status != Status.ERRORED or verdict.raw_reply is None:
            return verdict  # judged, or unmeasured, or no model reply at all (infrastructure)
        code = judge_transcript(item, transcript, self.code_judge)
        return settled_by_code(verdict, code, self.rules) or verdict

    def merge(self, graded: TurnVerdict, code: TurnVerdict, verdict: Verdict) -> TurnVerdict:
        merged, overrides = bind(graded, code)
        verdict.overrides += overrides
        # A bound dimension is an override, not also a disagreement; the rest compare the
        # model's own grades with the code's.
        bound = {o.dimension for o in overrides}
        found = disagreements(graded, code, self.rules.min_correctness)
        verdict.disagreements += [d for d in found if d.dimension not in bound]
        return merged
