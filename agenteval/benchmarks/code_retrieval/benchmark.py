"""The code retrieval benchmark behind the protocol (agenteval.benchmarks.base): `evaluate`
(queries, baseline, replay, robustness), `gate` against the committed baseline, `track`."""

from __future__ import annotations

from types import MappingProxyType

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import Definition, Failure, Outcome, RunContext, Step
from agenteval.benchmarks.code_retrieval import gate as gating
from agenteval.benchmarks.code_retrieval import steps as evaluation
from agenteval.benchmarks.code_retrieval.history import HistoryError
from agenteval.benchmarks.code_retrieval.records import PinnedCommits
from agenteval.benchmarks.code_retrieval.settings import CodeRetrievalParams
from agenteval.layout import Layout

BASELINE = "eval/baselines/code_retrieval/pr.json"


class _PinnedHistoryError(HistoryError):
    """A history error said with the pins file it came from (`<commits>: <why>`)."""


def _evaluate(settings: CodeRetrievalParams, ctx: RunContext, layout: Layout) -> Outcome:
    try:
        results = evaluation.step_evaluate(settings, layout)
    except HistoryError as exc:
        raise _PinnedHistoryError(f"{settings.commits}: {exc}") from exc
    return Outcome(tuple(evaluation.summary_lines(results)), evaluation.coverage(results))


EVALUATE = Step(
    "evaluate",
    _evaluate,
    (Failure((evaluation.PinsError, HistoryError), runner.INVALID),
     Failure((ValueError, OSError), runner.INVALID, "cannot run")),
)  # fmt: skip


BENCHMARK = Definition(
    name=evaluation.KIND,
    Settings=CodeRetrievalParams,
    steps=(
        EVALUATE,
        runner.gate(evaluation.KIND, BASELINE),
        runner.track(evaluation.KIND, lambda settings, ctx, layout: evaluation.tracked(layout)),
    ),
    schemas=MappingProxyType({"code_retrieval_commits": PinnedCommits}),
    rule=gating.gate,
)
