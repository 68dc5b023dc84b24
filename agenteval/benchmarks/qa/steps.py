"""The QA benchmark as steps over files: tasks -> infer -> judge -> score (-> track).

Inference is the scenario engine itself (one-turn conversations, `qa.k` iterations with
their own seeds); judging reads the stored transcripts only, so a new judge re-grades
without calling the agent. `agenteval qa` and `python -m stages.benchmark qa STEP` run them
through agenteval.benchmarks.runner (qa.benchmark). The judge and the scenario pipeline's
step_infer still take the params as loaded (`ctx.logged`); every setting read here is typed.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.benchmarks.base import RunContext
from agenteval.benchmarks.qa.judge import QAJudge
from agenteval.benchmarks.qa.metrics import Observation, qa_metrics
from agenteval.benchmarks.qa.records import QAVerdict
from agenteval.benchmarks.qa.settings import QAParams
from agenteval.benchmarks.qa.tasks import TaskFileError, load_tasks, select
from agenteval.benchmarks.questions import QATask, build_qa_suite
from agenteval.fileio import digest_of, read_json, write_json
from agenteval.layout import Layout, load_suite, load_transcript, transcript_path
from agenteval.measured import Coverage, first_reason
from agenteval.params import section_digest
from agenteval.pipeline import install_scrubber, step_infer
from agenteval.schema.corpus import Manifest
from agenteval.schema.problems import Problem

KIND = "qa"


def tasks_file(layout: Layout) -> Path:
    return layout.data / "tasks.json"


def verdicts_dir(layout: Layout) -> Path:
    return layout.data / "qa_verdicts"


def _manifest(root: Path, manifest: str) -> Manifest | None:
    path = root / manifest
    return Manifest.model_validate(read_json(path)) if path.is_file() else None


def step_tasks(section: QAParams, ctx: RunContext, layout: Layout) -> list[QATask]:
    """Load and select the tasks; write them and the engine's suite (k attempts each)."""
    QAJudge(ctx.logged, layout.root)  # a judge that would be refused stops the run first
    source = layout.root / section.tasks
    tasks = load_tasks(source, section.format, layout.root)
    chosen = select(tasks, list(section.levels), list(section.ids), section.tasks)
    if ctx.suite.iterations != 1:
        raise TaskFileError(
            [Problem("params.yaml", 1, "suite.iterations: QA attempts are qa.k; leave it at 1")]
        )
    manifest = _manifest(layout.root, ctx.suite.manifest)
    suite = build_qa_suite(chosen, section.k, ctx.suite.seed, layout.root, manifest)
    write_json(tasks_file(layout), [t.model_dump(mode="json") for t in chosen])
    write_json(layout.suite, suite)
    return chosen


def load_task_list(layout: Layout) -> list[QATask]:
    return [QATask.model_validate(t) for t in read_json(tasks_file(layout))]


def step_qa_infer(section: QAParams, ctx: RunContext, layout: Layout) -> Any:
    return step_infer(dict(ctx.logged), layout, ctx.progress)


def _stored(path: Path) -> QAVerdict | None:
    try:
        return QAVerdict.model_validate(read_json(path))
    except (OSError, ValueError):
        return None


async def _judge_all(
    tasks: list[QATask], layout: Layout, judge: QAJudge, attempts: int, concurrency: int
) -> list[QAVerdict]:
    semaphore = asyncio.Semaphore(max(1, concurrency))

    async def one(task: QATask, attempt: int) -> QAVerdict | None:
        transcript = load_transcript(layout.transcripts, task.id, attempt)
        if transcript is None:
            return None
        path = transcript_path(verdicts_dir(layout), task.id, attempt)
        fresh = judge.blank(task, transcript)
        stored = _stored(path)
        if (
            stored is not None
            and (stored.transcript_digest, stored.task_digest, stored.judge)
            == (fresh.transcript_digest, fresh.task_digest, fresh.judge)
            and stored.status != "error"
        ):
            return stored  # the same grade of the same answer: never pay twice
        async with semaphore:
            verdict = await judge.grade(task, transcript)
        await asyncio.to_thread(write_json, path, verdict)
        return verdict

    jobs = [one(t, i) for t in tasks for i in range(attempts)]
    return [v for v in await asyncio.gather(*jobs) if v is not None]


def step_qa_judge(section: QAParams, ctx: RunContext, layout: Layout) -> list[QAVerdict]:
    install_scrubber(dict(ctx.logged))
    judge = QAJudge(ctx.logged, layout.root)
    suite = load_suite(layout)
    tasks = load_task_list(layout)
    return asyncio.run(_judge_all(tasks, layout, judge, suite.iterations, ctx.concurrency))


@dataclass
class Scored:
    metrics: dict[str, Any]
    verdicts: list[QAVerdict]
    planned: int  # attempts: tasks x k


def load_verdicts(layout: Layout, tasks: list[QATask], attempts: int) -> list[QAVerdict]:
    found = []
    for task in tasks:
        for attempt in range(attempts):
            stored = _stored(transcript_path(verdicts_dir(layout), task.id, attempt))
            if stored is not None and stored.task_digest == digest_of(task):
                found.append(stored)
    return found


def observations(
    tasks: list[QATask], verdicts: list[QAVerdict], attempts: int
) -> list[Observation]:
    """One observation per planned attempt; an attempt never judged is Unavailable."""
    by_key = {(v.task_id, v.attempt): v for v in verdicts}
    out = []
    for task in tasks:
        for attempt in range(attempts):
            verdict = by_key.get((task.id, attempt))
            status = verdict.status if verdict else "unavailable"
            correct = verdict.correct if verdict else None
            out.append(Observation(task.id, task.level, attempt, status, correct))
    return out


def step_qa_score(section: QAParams, ctx: RunContext, layout: Layout) -> Scored:
    """metrics.json, details/<task>.json and summary.md from the stored verdicts."""
    from agenteval.benchmarks.qa.report import write_details, write_summary

    suite = load_suite(layout)
    tasks = load_task_list(layout)
    verdicts = load_verdicts(layout, tasks, suite.iterations)
    classes: Counter[str] = Counter(
        str(v.verdict or ("deferred" if v.status == "unavailable" else v.status)) for v in verdicts
    )
    rules = Counter(v.rule for v in verdicts if v.rule)
    conf = ctx.stats.conf
    metrics = qa_metrics(
        observations(tasks, verdicts, suite.iterations), suite.iterations, conf, classes, rules
    )
    metrics["attempt_strategy"] = section.attempt_strategy
    metrics["seeds"] = suite.seeds()
    write_json(layout.metrics, metrics)
    write_details(layout, tasks, verdicts, suite)
    write_summary(layout, metrics, tasks, verdicts, suite.iterations)
    return Scored(metrics, verdicts, len(tasks) * suite.iterations)


def coverage(scored: Scored) -> Coverage:
    """Attempts not evaluated of all planned, with the first reason: an attempt whose agent
    or judge backend failed is unmeasured (status error), never a wrong answer."""
    evaluated = sum(v.status == "evaluated" for v in scored.verdicts)
    errors = (v.reason for v in scored.verdicts if v.status == "error")
    others = (v.reason for v in scored.verdicts if v.status != "evaluated")
    reason = first_reason(errors, "") or first_reason(others, "never judged")
    return Coverage(scored.planned - evaluated, scored.planned, reason, "attempts")


def run_qa(section: QAParams, ctx: RunContext, layout: Layout) -> Scored:
    """The whole benchmark into one layout, step by step."""
    step_tasks(section, ctx, layout)
    step_qa_infer(section, ctx, layout)
    step_qa_judge(section, ctx, layout)
    return step_qa_score(section, ctx, layout)


def run_config(params: Mapping[str, Any], layout: Layout) -> dict[str, Any]:
    """Who produced the numbers, in the scorecard's `config` shape (for provenance tags)."""
    suite = load_suite(layout)
    tasks = load_task_list(layout)
    config: dict[str, Any] = {
        "scenario_set_digest": suite.scenario_set_digest,
        "corpus_digest": suite.corpus_digest,
        "params_digest": section_digest(dict(params), "suite", "target", "simulator", "run", KIND),
    }
    for task in tasks[:1]:
        transcript = load_transcript(layout.transcripts, task.id, 0)
        if transcript is not None:
            config["target"] = transcript.target.model_dump(mode="json")
            config["simulator"] = transcript.simulator.model_dump(mode="json")
    config["judge"] = QAJudge(params, layout.root).participant.model_dump(mode="json")
    return config


def tracked(ctx: RunContext, layout: Layout) -> tuple[dict[str, Any], list[Path]]:
    """The MLflow run's config and the files logged beside the metrics."""
    artifacts = [layout.reports / "summary.md", layout.reports / "details"]
    return run_config(ctx.logged, layout), artifacts
