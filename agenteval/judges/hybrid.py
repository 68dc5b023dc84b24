"""Judge `hybrid`: the LLM judge, with the code judge's certain findings binding.

Code can prove some replies wrong beyond argument: a committed figure more than the
automatic-zero deviation off, a different name or identifier, a value guessed where the
answer is not in the documents, a refusal without a search, a forbidden tool, a tool loop;
and it knows how close a figure is (the precision table). Those findings
(`scoring.BINDING_FINDINGS`) set a ceiling on the dimension they settle: a model's higher
score is replaced by the code's, and the replacement is recorded as an override. Everything
else (context retention, personality, prose answers, turns code defers) is the model's.
Sharp disagreements that did not bind are recorded as for the `llm` judge.

The configuration digest covers both instruments: the LLM judge's (endpoint, model,
prompts, rules, settings, code) and the code judge's, plus the binding rules themselves.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import digest_of
from agenteval.judges.code import KIND as CODE_KIND
from agenteval.judges.llm import LLMJudge, disagreements
from agenteval.schema.verdict import Override, TurnVerdict, Verdict
from agenteval.scoring import BINDING_FINDINGS, DIMENSIONS

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

    def merge(self, graded: TurnVerdict, code: TurnVerdict, verdict: Verdict) -> TurnVerdict:
        merged, overrides = bind(graded, code)
        verdict.overrides += overrides
        # A bound dimension is an override, not also a disagreement; the rest compare the
        # model's own grades with the code's.
        bound = {o.dimension for o in overrides}
        found = disagreements(graded, code, self.rules.min_correctness)
        verdict.disagreements += [d for d in found if d.dimension not in bound]
        return merged
