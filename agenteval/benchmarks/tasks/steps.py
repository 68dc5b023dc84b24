"""The tasks benchmark as steps over files: run -> judge -> score (-> track).

`run` leaves `data/run.json` (which tasks, harness, repeats) and one folder per attempt;
`judge` reads only those files (a new judge re-grades without running the agent again) and
writes `data/grades/<task>/r<k>.json`; `score` writes `scorecard.json`, `metrics.json` and
`summary.md`. `agenteval tasks` and the stages of pipelines/tasks/dvc.yaml share these.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agenteval import scratch
from agenteval.benchmarks.tasks.definitions import (
    DEFAULT_FILE,
    TaskFileError,
    load_task_file,
    select,
)
from agenteval.benchmarks.tasks.harness import Harness, make_harness
from agenteval.benchmarks.tasks.judge import TaskJudge
from agenteval.benchmarks.tasks.runner import RunSettings, TaskRunner, attempt_dir, load_attempt
from agenteval.benchmarks.tasks.sandbox import from_params as sandbox_from_params
from agenteval.benchmarks.tasks.score import draws, machine, results, unit_stamps
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.benchmarks.tasks.setups import SetupError
from agenteval.benchmarks.tasks.workspace import prepare
from agenteval.fileio import digest_of, read_json, sha256_text, write_json
from agenteval.layout import Layout
from agenteval.schema.problems import Problem
from agenteval.schema.task_records import TaskAttempt, TaskGrade
from agenteval.schema.task_results import TaskScorecard
from agenteval.schema.tasks import Task, TaskFile
from agenteval.stamps import head
from agenteval.tracking.provenance import key_env_names

KIND = "tasks"
GATEWAY_LEDGER = "gateway.jsonl"  # each model call's token counts, in the sealed data folder
PROJECT_FILE_CHARS = 6_000


def check_kind(params: Mapping[str, Any]) -> None:
    found = (params.get("suite") or {}).get("kind", "scenarios")
    if found != KIND:
        raise TaskFileError(
            [Problem("params.yaml", 1, f"suite.kind is {found!r}; this step runs 'tasks'")]
        )


def run_file(layout: Layout) -> Path:
    return layout.data / "run.json"


def grade_path(layout: Layout, task_id: str, repeat: int) -> Path:
    return layout.data / "grades" / task_id / f"r{repeat}.json"


def guard_for(params: Mapping[str, Any]) -> SecretGuard:
    return SecretGuard(key_env_names(params))


# Suites `agenteval tasks run` sends to a runner of their own: no toybox task, so no
# reference solution to validate and no step of pipelines/tasks to run them.
OWN_RUNNER_SUITES = ("swebench", "therock")


def chosen_tasks(params: Mapping[str, Any], root: Path) -> tuple[TaskFile, list[Task]]:
    section = params.get("tasks") or {}
    if section.get("suite") in OWN_RUNNER_SUITES:
        raise ValueError(
            f"tasks.suite {section['suite']!r}: not a suite of the toybox's tasks; it has no "
            f"reference solution here (graded against upstream fixes): agenteval tasks run "
            f"--suite {section['suite']}"
        )
    spec = load_task_file(
        root / str(section.get("file", DEFAULT_FILE)), str(section.get("file", DEFAULT_FILE))
    )
    return spec, select(spec, str(section.get("suite", "core")), list(section.get("ids") or []))


def preflight(params: Mapping[str, Any], root: Path) -> tuple[TaskFile, list[Task], Harness]:
    """The task file, the tasks chosen, a harness and a sandbox that can run here; raises
    before any work (TaskFileError, HarnessUnavailable, SandboxUnavailable, ValueError) when
    one of them cannot be had."""
    check_kind(params)
    spec, tasks = chosen_tasks(params, root)
    if spec.github is not None and not (root / spec.github).is_file():
        raise ValueError(f"github: the offline gh's fixture {spec.github} is not a file")
    sandbox_from_params(params, root).check()
    harness = make_harness(
        str((params.get("tasks") or {}).get("harness", "scripted")), params, root
    )
    harness.preflight()
    TaskJudge(params, root)  # a judge that would be refused stops the run first
    return spec, tasks, harness


def task_file_of(params: Mapping[str, Any], root: Path) -> tuple[Path, str]:
    name = str((params.get("tasks") or {}).get("file", DEFAULT_FILE))
    return root / name, name


def step_validate(params: Mapping[str, Any], root: Path) -> list[Problem]:
    """The chosen coding tasks graded with their reference solution (must pass) and the
    untouched project (must fail), the questions' answers read by code: problems at their
    lines of the task file."""
    from agenteval.benchmarks.tasks.validate import problems

    spec, tasks = chosen_tasks(params, root)
    settings = RunSettings.from_params(params, root, spec.toybox, github=spec.github)
    return problems(tasks, settings, *task_file_of(params, root))


def step_run(
    params: dict[str, Any], layout: Layout, on_done: Callable[[TaskAttempt], None] | None = None
) -> list[TaskAttempt]:
    """Every chosen task x repeat through the harness; refused before any work when the
    harness or the judge cannot run here, or (a harness other than the scripted one) when
    a chosen coding task is broken (validate: TaskFileError). The agents reach their model
    through the model gateway (one started for the run unless tasks.gateway_url names one)."""
    from agenteval.benchmarks.tasks.gateway import gateway_for_run

    # The ledger's folder is made at its first call: a refused run leaves nothing behind.
    with gateway_for_run(params, layout.data / GATEWAY_LEDGER) as routed:
        return _run_all(routed, layout, on_done)


def _run_all(
    params: dict[str, Any], layout: Layout, on_done: Callable[[TaskAttempt], None] | None
) -> list[TaskAttempt]:
    spec, tasks, harness = preflight(params, layout.root)
    toybox = spec.toybox
    section = params.get("tasks") or {}
    repeats = int(section.get("repeats", 1))
    if harness.participant.kind != "scripted":
        found = step_validate(params, layout.root)
        if found:
            raise TaskFileError(found)
    scratch.end_on_signals()  # copies and snapshots go on SIGTERM too
    layout.data.mkdir(parents=True, exist_ok=True)  # sealed: hidden from the agent
    sealed = [layout.data, layout.reports]
    settings = RunSettings.from_params(params, layout.root, toybox, sealed, spec.github)
    keys, guard = key_env_names(params), guard_for(params)
    runner = TaskRunner(harness, settings, layout.data, guard, on_done, keys, layout.root)
    write_json(
        run_file(layout),
        {
            "suite": section.get("suite", "core"),
            "toybox": toybox,
            "tasks": [t.model_dump(mode="json", by_alias=True) for t in tasks],
            "repeats": repeats,
            "harness": harness.participant.model_dump(mode="json"),
            "model": harness.participant.model,
            "sandbox": runner.sandbox_label,
            "measured_on": {"commit": head(layout.root) or "unknown", "machine": machine()},
        },
    )
    return asyncio.run(runner.run(tasks, repeats))


def load_run(layout: Layout) -> tuple[dict[str, Any], list[Task], list[TaskAttempt]]:
    info = read_json(run_file(layout))
    tasks = [Task.model_validate(t) for t in info["tasks"]]
    attempts = []
    for task in tasks:
        for repeat in range(int(info["repeats"])):
            found = load_attempt(attempt_dir(layout.data, task.id, repeat))
            if found is not None:
                attempts.append(found)
    return info, tasks, attempts


def _read(folder: Path, name: str) -> str:
    path = folder / name
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def attempt_digest(layout: Layout, attempt: TaskAttempt) -> str:
    folder = attempt_dir(layout.data, attempt.task_id, attempt.repeat)
    return digest_of(
        {
            "attempt": attempt.model_dump(mode="json"),
            "diff": sha256_text(_read(folder, "workspace.diff")),
        }
    )


def project_view(root: Path, toybox: str, task: Task, attempt: TaskAttempt) -> str:
    """The project as given to the agent: its files, and the ones the task is about in full."""
    from agenteval.benchmarks.tasks.rules import PATH_TOKEN
    from agenteval.benchmarks.tasks.workspace import tree_files

    try:
        ws = prepare(root / toybox, task.setup)
    except (SetupError, OSError) as exc:
        return f"(the project could not be rebuilt: {exc})"
    try:
        files = tree_files(ws.work)
    finally:
        ws.close()
    named = set(PATH_TOKEN.findall(task.prompt)) | set(attempt.changed_files)
    parts = ["Files: " + ", ".join(f"{rel} ({len(data)} bytes)" for rel, data in files.items())]
    for rel in sorted(named & set(files)):
        text = files[rel].decode("utf-8", errors="replace")
        parts.append(f"--- {rel}\n{text[:PROJECT_FILE_CHARS]}")
    return "\n\n".join(parts)


def _stored_grade(path: Path) -> TaskGrade | None:
    try:
        return TaskGrade.model_validate(read_json(path))
    except (OSError, ValueError):
        return None


async def _judge_all(
    params: Mapping[str, Any], layout: Layout, judge: TaskJudge, guard: SecretGuard
) -> list[TaskGrade]:
    info, tasks, attempts = load_run(layout)
    by_id = {t.id: t for t in tasks}
    semaphore = asyncio.Semaphore(int((params.get("run") or {}).get("concurrency", 4)))

    async def one(attempt: TaskAttempt) -> TaskGrade:
        task = by_id[attempt.task_id]
        path = grade_path(layout, attempt.task_id, attempt.repeat)
        digest = attempt_digest(layout, attempt)
        stored = _stored_grade(path)
        if (
            stored is not None
            and stored.attempt_digest == digest
            and stored.judge.same_as(judge.participant)
            and stored.status != "error"
        ):
            return stored  # the same grade of the same attempt: never pay twice
        if judge.config is None or attempt.status != "COMPLETED":
            grade = judge.blank(task, attempt, digest)
            if attempt.status != "COMPLETED":
                grade.reason = f"attempt {attempt.status}: nothing to grade"
        else:
            folder = attempt_dir(layout.data, attempt.task_id, attempt.repeat)
            view = await asyncio.to_thread(project_view, layout.root, info["toybox"], task, attempt)
            case = judge.case(
                task, attempt, _read(folder, "workspace.diff"), _read(folder, "setup.diff"), view
            )
            async with semaphore:
                grade = await judge.grade(task, attempt, digest, case)
        guard.write_json(path, grade)
        return grade

    return list(await asyncio.gather(*(one(a) for a in attempts)))


def step_judge(params: dict[str, Any], layout: Layout) -> list[TaskGrade]:
    check_kind(params)
    judge = TaskJudge(params, layout.root)
    return asyncio.run(_judge_all(params, layout, judge, guard_for(params)))


def load_grades(
    layout: Layout, attempts: list[TaskAttempt], judge: TaskJudge
) -> dict[tuple[str, int], TaskGrade]:
    """Stored grades of these very attempts by this judge (another judge's are not used)."""
    found = {}
    for attempt in attempts:
        grade = _stored_grade(grade_path(layout, attempt.task_id, attempt.repeat))
        if (
            grade is not None
            and grade.attempt_digest == attempt_digest(layout, attempt)
            and grade.judge.same_as(judge.participant)
        ):
            found[attempt.task_id, attempt.repeat] = grade
    return found


def step_score(params: dict[str, Any], layout: Layout) -> TaskScorecard:
    from agenteval.benchmarks.tasks.report import summary

    check_kind(params)
    info, tasks, attempts = load_run(layout)
    judge = TaskJudge(params, layout.root)
    grades = load_grades(layout, attempts, judge)
    rows = results(tasks, attempts, grades)
    conf = float((params.get("stats") or {}).get("conf", 0.95))
    stamped = unit_stamps(attempts)
    card = TaskScorecard(
        suite=info["suite"],
        task_ids=[t.id for t in tasks],
        harness=info["harness"],
        model=str(info.get("model") or "unknown"),
        judge=judge.participant,
        judge_model=judge.participant.model,
        repeats=int(info["repeats"]),
        measured_on=dict(info.get("measured_on") or {}),
        sandbox=str(info.get("sandbox") or "unknown"),
        draws=draws(rows, int(info["repeats"]), conf),
        tasks=rows,
        commits=stamped.commits,
        code_stamps=stamped.code_stamps,
        unstamped=stamped.unstamped,
    )
    guard = guard_for(params)  # reasons quote command output: scrubbed like the records
    guard.write_json(layout.reports / "scorecard.json", card)
    guard.write_json(layout.metrics, metrics_of(card))
    guard.write_text(layout.reports / "summary.md", summary(card))
    return card


def metrics_of(card: TaskScorecard) -> dict[str, Any]:
    """The headline numbers DVC and MLflow show: the first draw's, and the mean of all."""
    first = card.draws[0].model_dump(mode="json") if card.draws else {}
    keep = ("passed", "failed", "unmeasured", "verified", "misreported", "quality", "unjudged",
            "total_tokens", "cost_usd", "steps", "wall_seconds", "pass_rate")  # fmt: skip
    out: dict[str, Any] = {"kind": KIND, "suite": card.suite, "repeats": card.repeats}
    out |= {name: first.get(name) for name in keep}
    if len(card.draws) > 1:
        rates = [d.pass_rate for d in card.draws if d.pass_rate is not None]
        out["pass_rate_mean"] = round(sum(rates) / len(rates), 4) if rates else None
    return out


def run_tasks(params: dict[str, Any], layout: Layout, judge: bool = True) -> TaskScorecard:
    """The whole benchmark into one layout (`agenteval tasks run`)."""
    step_run(params, layout)
    if judge:
        step_judge(params, layout)
    return step_score(params, layout)
