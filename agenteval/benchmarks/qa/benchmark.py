"""The QA benchmark behind the protocol (agenteval.benchmarks.base): `tasks` (load and
select, the engine's suite), `infer` (the agent answers, resumable), `judge` (pre-check, then
A/B/C; no agent call), `score` (metrics, details, summary) and `track`; gated by its own rule
(qa.gate)."""

from __future__ import annotations

from collections import Counter
from types import MappingProxyType

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import Definition, Failure, Outcome, RunContext, Step
from agenteval.benchmarks.qa import gate as gating
from agenteval.benchmarks.qa import steps as qa
from agenteval.benchmarks.qa.records import QAVerdict
from agenteval.benchmarks.qa.settings import QAParams
from agenteval.benchmarks.qa.tasks import TaskFileError
from agenteval.benchmarks.questions import QATask
from agenteval.layout import Layout
from agenteval.llm import QuotaExhausted

RESUME = "resume with: dvc repro pipelines/qa/dvc.yaml (or agenteval qa --out the same run)"


class _Stopped(QuotaExhausted):
    """The endpoint's quota, said with how the run resumes."""


def _tasks(settings: QAParams, ctx: RunContext, layout: Layout) -> Outcome:
    tasks = qa.step_tasks(settings, ctx, layout)
    return Outcome((f"{len(tasks)} task(s), {settings.k} attempt(s) each",))


def _infer(settings: QAParams, ctx: RunContext, layout: Layout) -> Outcome:
    result = qa.step_qa_infer(settings, ctx, layout)
    completed = sum(t.status == "COMPLETED" for t in result.transcripts)
    lines = [f"{completed}/{len(result.transcripts)} attempt(s) completed"]
    if result.stop_reason:  # resumable: the next run asks only what is missing
        lines += [f"stopped early: {result.stop_reason}", RESUME]
        return Outcome(tuple(lines), status=runner.STOPPED)
    return Outcome(tuple(lines))


def _judge(settings: QAParams, ctx: RunContext, layout: Layout) -> Outcome:
    try:
        verdicts = qa.step_qa_judge(settings, ctx, layout)
    except QuotaExhausted as exc:
        raise _Stopped(f"{exc}; {RESUME}") from exc
    classes = Counter(v.verdict or v.status for v in verdicts)
    return Outcome((", ".join(f"{name} {n}" for name, n in sorted(classes.items())),))


def _score(settings: QAParams, ctx: RunContext, layout: Layout) -> Outcome:
    scored = qa.step_qa_score(settings, ctx, layout)
    first = scored.metrics["correct.native@1"]
    lines = [
        f"correct.native@1 {first['value']} ({first['evaluated']} evaluated, "
        f"{first['error']} error, {first['unavailable']} unavailable of {first['total']})"
    ]
    others = (n for n in scored.metrics if n.startswith("correct.") and n != "correct.native@1")
    for name in others:
        block = scored.metrics[name]
        lines.append(f"{name} {block['value']} ({block['evaluated']} of {block['total']} tasks)")
    return Outcome(tuple(lines), qa.coverage(scored))


# A task file's problems are its `path:line: message` lines; a judge that would grade the
# model under test, or a file that cannot be read, is said with its reason: input, never a
# figure. The quota stops a step, resumable, before anything wrong is recorded.
REFUSED = (
    Failure(TaskFileError, runner.INVALID),
    Failure(QuotaExhausted, runner.STOPPED, "stopped"),
    Failure((ValueError, OSError), runner.INVALID, "cannot run"),
)


BENCHMARK = Definition(
    name=qa.KIND,
    Settings=QAParams,
    steps=(
        Step("tasks", _tasks, REFUSED),
        Step("infer", _infer, REFUSED),
        Step("judge", _judge, REFUSED),
        Step("score", _score, REFUSED),
        runner.track(qa.KIND, lambda settings, ctx, layout: qa.tracked(ctx, layout)),
    ),
    schemas=MappingProxyType({"qa_task": QATask, "qa_verdict": QAVerdict}),
    rule=gating.gate,
    beside=gating.beside,
)
