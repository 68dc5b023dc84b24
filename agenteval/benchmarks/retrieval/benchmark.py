"""The retrieval benchmark behind the protocol (agenteval.benchmarks.base): `answer` (the
target answers every labelled question, resumable) and `evaluate` (rankings, answers, hard
cases -> reports/); gated by its own rule (retrieval.gate)."""

from __future__ import annotations

from types import MappingProxyType

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import Definition, Failure, Outcome, RunContext, Step
from agenteval.benchmarks.retrieval import gate as gating
from agenteval.benchmarks.retrieval import steps as evaluation
from agenteval.benchmarks.retrieval.library import LabelError
from agenteval.benchmarks.retrieval.records import EvidenceSet
from agenteval.benchmarks.retrieval.settings import RetrievalParams
from agenteval.layout import Layout

# A label that does not hold is its own `path:line: message` lines; a document that cannot be
# read or a value the step refuses is said with its reason: input, never a figure.
REFUSED = (
    Failure(LabelError, runner.INVALID),
    Failure((ValueError, OSError), runner.INVALID, "cannot run"),
)


def _answer(settings: RetrievalParams, ctx: RunContext, layout: Layout) -> Outcome:
    result = evaluation.step_answer(settings, ctx, layout)
    if result is None:
        return Outcome(("retrieval.answers is false; no answers asked",))
    completed = sum(t.status == "COMPLETED" for t in result.transcripts)
    lines = [f"{completed}/{len(result.transcripts)} question(s) answered"]
    if result.stop_reason:  # resumable: the next run asks only what is missing
        return Outcome((*lines, f"stopped early: {result.stop_reason}"), status=runner.STOPPED)
    return Outcome(tuple(lines))


def _evaluate(settings: RetrievalParams, ctx: RunContext, layout: Layout) -> Outcome:
    results = evaluation.step_evaluate(settings, ctx, layout)
    return Outcome(tuple(evaluation.summary_lines(results)))


BENCHMARK = Definition(
    name=evaluation.KIND,
    Settings=RetrievalParams,
    steps=(Step("answer", _answer, REFUSED), Step("evaluate", _evaluate, REFUSED)),
    schemas=MappingProxyType({"retrieval_questions": EvidenceSet}),
    rule=gating.gate,
)
