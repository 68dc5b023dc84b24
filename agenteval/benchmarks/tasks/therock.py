"""Suite `therock`: real merged fixes in TheRock, each attempted from the commit before it.

Nothing of TheRock is committed here, only what eval/tasks/therock.json pins per task (the
fix commit, its parent, the files it changes) and the prompt in this project's words.

* Checkout rules (001), the same as SWE-bench's (`swebench.checkout`): a bare cache fetched by
  commit to a limited depth (never the fix, never a branch), a single-branch `file://` clone of
  it, detached, remote and branch removed, `git fsck --unreachable --no-reflogs` empty; and
  here also: the fix commit must not be reachable from the checkout (`CheckoutLeak`).
* The reference diff (`reference_diff`) is fetched into a cache of its own only after every
  agent has exited, as `fix^..fix`; where the fix's parent is not the pinned base commit the
  grade is refused (`PinMismatch`), never computed against the wrong base.
* Where TheRock cannot be reached (the network off, a URL nothing answers) and the cache does
  not already hold every base commit, the suite is refused before any work, naming what is
  missing (`preflight`). No default URL: `tasks.therock_url` names where it is cloned from.
* Tasks whose prompt forbids the internet are not cut off from it: web use is read from the
  tool record (`web_use`), the same way for every harness, and reported as a finding.
* Graded as the other tasks' judge axes are (`grade_attempts`, after every agent exited):
  the tasks judge gets the record, the agent's diff and the upstream fix, gives its four
  axes and decides `UPSTREAM_POINTS` on the diff. Code settles first (an empty diff, or one
  that touches none of the fix's files, FAILs whatever the judge says); a wrong pin is
  NOT_JUDGED, no judge configured leaves the points NOT_JUDGED, a judge backend that failed
  is INFRA_ERROR: never a pass by default.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agenteval.benchmarks.tasks import swebench
from agenteval.benchmarks.tasks.definitions import TaskFileError
from agenteval.benchmarks.tasks.harness import Harness
from agenteval.benchmarks.tasks.judge import TaskJudge
from agenteval.benchmarks.tasks.score import points_result
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.fileio import digest_of
from agenteval.schema.located import load_located
from agenteval.schema.problems import Problem
from agenteval.schema.status import Status
from agenteval.schema.task_records import Answer, TaskAttempt, TaskGrade, TaskToolCall
from agenteval.schema.tasks import Point, Reference, Task
from agenteval.schema.therock import TheRockFile, TheRockTask
from agenteval.schema.transcript import Participant

DEFAULT_FILE = "eval/tasks/therock.json"
URL_KEY = "tasks.therock_url"
REACH_TIMEOUT_S = 20.0
PROMPT_PARAGRAPH = (
    "Work only in this checkout and make the smallest change that fixes the problem above. "
    "The project's builds and tests cannot be run here."
)
NO_INTERNET = "Do not use the internet for this task."
# What the judge decides on the agent's diff, beside its four axes.
UPSTREAM_POINTS = (
    "the agent's diff fixes the problem the upstream fix fixes: the same behaviour, whatever "
    "code or wording it uses",
    "the agent's diff changes nothing the problem does not need",
)
NOT_SHOWN = "(TheRock at the base commit: too large to show; the diffs are the change)"
# Tools and commands that reach the web: Claude Code's own web tools, and shell commands
# that fetch a URL or a package.
WEB_TOOLS = frozenset({"WebFetch", "WebSearch", "web_fetch", "web_search"})
WEB_COMMAND = re.compile(
    r"\b(curl|wget|lynx|links|w3m|aria2c|http(ie)?)\b|https?://|\bpip3?\s+(install|download)\b"
    r"|\bgit\s+(clone|fetch|pull|ls-remote)\b"
)


class TheRockUnavailable(Exception):
    """The suite cannot run here; the message names everything that is missing."""


class PinMismatch(RuntimeError):
    """The fix's parent upstream is not the pinned base commit: no grade."""


def load(path: Path, display: str | None = None) -> TheRockFile:
    """The suite's file; TaskFileError (`path:line: message`, exit 2) when it is bad."""
    from pydantic import ValidationError

    shown = display or str(path)
    located = load_located(path, shown)
    if isinstance(located, Problem):
        raise TaskFileError([located])
    try:
        spec = TheRockFile.model_validate(located.data)
    except ValidationError as exc:
        raise TaskFileError(
            [located.problem(tuple(e["loc"]), e["msg"]) for e in exc.errors()]
        ) from None
    seen: set[str] = set()
    for index, task in enumerate(spec.tasks):
        if task.id in seen:
            raise TaskFileError([located.problem(("tasks", index, "id"), f"{task.id!r} repeated")])
        seen.add(task.id)
    return spec


def prompt_for(task: TheRockTask) -> str:
    extra = f" {NO_INTERNET}" if task.no_internet else ""
    return f"{task.prompt.strip()}\n\n{PROMPT_PARAGRAPH}{extra}"


def as_task(task: TheRockTask) -> Task:
    """The task as a harness takes it (no checks here: graded against the upstream fix)."""
    return Task.model_construct(
        id=task.id,
        kind="coding",
        title=task.title,
        prompt=prompt_for(task),
        setup=None,
        expect=None,
        must_establish=[],
        reference=Reference(steps=[], answer="(graded against the upstream fix)"),
        wrong_answers=[],
    )


def _cached(cache_root: Path, url: str, commit: str) -> bool:
    bare = swebench.bare_path(cache_root, url)
    if not bare.is_dir():
        return False
    done = subprocess.run(
        ["git", "-C", str(bare), "cat-file", "-e", f"{commit}^{{commit}}"],
        capture_output=True,
        timeout=30,
    )
    return done.returncode == 0


def missing(url: str | None, tasks: Sequence[TheRockTask], cache_root: Path) -> list[str]:
    """Everything the suite needs that this machine lacks; [] when it can run."""
    if not url:
        return [f"{URL_KEY}: where TheRock is cloned from (e.g. https://github.com/ROCm/TheRock)"]
    if shutil.which("git") is None:
        return ["git on PATH"]
    uncached = [t.id for t in tasks if not _cached(cache_root, url, t.base_commit)]
    if not uncached:
        return []
    try:
        done = subprocess.run(
            ["git", "ls-remote", "--exit-code", url, "HEAD"],
            capture_output=True,
            text=True,
            timeout=REACH_TIMEOUT_S,
            env={"GIT_TERMINAL_PROMPT": "0", "PATH": _path()},
        )
        why = (done.stderr or done.stdout).strip().splitlines()
        reached, reason = done.returncode == 0, why[-1] if why else f"exit {done.returncode}"
    except subprocess.TimeoutExpired:
        reached, reason = False, f"no answer in {REACH_TIMEOUT_S:g} s"
    if reached:
        return []
    return [
        f"the TheRock repository at {url} ({reason[:200]}): the network is needed to fetch the "
        f"base commits of {', '.join(uncached)}, which the cache under {cache_root} lacks"
    ]


def _path() -> str:
    return os.environ.get("PATH", "/usr/bin:/bin")


def preflight(url: str | None, tasks: Sequence[TheRockTask], cache_root: Path) -> None:
    gaps = missing(url, tasks, cache_root)
    if gaps:
        raise TheRockUnavailable("suite therock cannot run here; missing: " + "; ".join(gaps))


def checkout(cache_root: Path, url: str, task: TheRockTask, dest: Path) -> Path:
    """The agent's checkout at the base commit, with no path to the fix (checked)."""
    done = swebench.checkout(cache_root, url, task.base_commit, dest)
    swebench.verify_isolated(done, task.base_commit, forbidden=[task.fix_commit])
    return done


def reference_diff(cache_root: Path, url: str, task: TheRockTask) -> str:
    """`fix^..fix` from a cache apart from the agents' (the judge step only, after every
    agent exited); PinMismatch when the fix's parent is not the pinned base commit."""
    bare = cache_root / "reference" / swebench.bare_path(cache_root, url).name
    if not bare.is_dir():
        bare.parent.mkdir(parents=True, exist_ok=True)
        _git(bare.parent, "init", "-q", "--bare", bare.name)
    _git(bare, "fetch", "-q", "--no-tags", "--depth", "2", url, task.fix_commit)
    parent = _git(bare, "rev-parse", f"{task.fix_commit}^").strip()
    if parent != task.base_commit:
        raise PinMismatch(
            f"{task.id}: the fix {task.fix_commit[:12]}'s parent is {parent[:12]}, not the pinned "
            f"base {task.base_commit[:12]}: no grade against the wrong base"
        )
    return _git(bare, "diff", f"{task.fix_commit}^", task.fix_commit)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr.strip()[:500]}")
    return done.stdout


def web_use(calls: Iterable[TaskToolCall]) -> list[str]:
    """Each call that reached (or tried to reach) the web: a web tool, or a command that
    fetches a URL or a package. Read from the record, the same for every harness."""
    found = []
    for call in calls:
        command = call.arguments.get("command")
        if call.name in WEB_TOOLS:
            found.append(f"call {call.index}: {call.name}")
        elif isinstance(command, str) and WEB_COMMAND.search(command):
            found.append(f"call {call.index}: {command[:120]}")
    return found


def scope_problems(diff_files: Iterable[str], task: TheRockTask) -> list[str]:
    """The task's own checks on the agent's diff: not empty, and touching at least one of the
    files the upstream fix changes (the judge grades the rest against the upstream diff)."""
    files = set(diff_files)
    if not files:
        return ["empty diff: nothing changed"]
    if not files & set(task.files):
        return [f"the diff touches none of the files the fix changes ({', '.join(task.files)})"]
    return []


async def capture(
    harness: Harness,
    tasks: Sequence[TheRockTask],
    url: str,
    out: Path,
    cache_root: Path,
    guard: SecretGuard,
    judge: TaskJudge | None = None,
    **options: Any,
) -> dict[str, dict[str, Any]]:
    """Attempt every task in its own checkout; only then (every agent has exited) fetch each
    upstream fix and grade against it (`grade_attempts`). Writes `therock.json` (per task: the
    record, the task's own checks, web use, the reference's pin check, the grade and the
    result) and `<out>/therock/<id>/{agent,reference}.diff`."""
    from agenteval.benchmarks.tasks.swebench_run import attempt_checkout

    attempts = {}
    for task in tasks:

        def make(dest: Path, task: TheRockTask = task) -> Path:
            return checkout(cache_root, url, task, dest)

        attempts[task.id] = await attempt_checkout(harness, as_task(task), make, **options)
    results: dict[str, dict[str, Any]] = {}
    for task in tasks:
        record, patch, capped = attempts[task.id]
        folder = out / "therock" / task.id
        guard.write_text(folder / "agent.diff", patch)
        try:
            reference = await asyncio.to_thread(reference_diff, cache_root, url, task)
            guard.write_text(folder / "reference.diff", reference)
            pin = None
        except (PinMismatch, RuntimeError) as exc:
            pin = str(exc)
        results[task.id] = {
            "calls": [c.model_dump(mode="json") for c in record.calls],
            "answers": [a.model_dump(mode="json") for a in record.answers],
            "capped": capped,
            "problems": scope_problems(_diff_files(patch), task),
            "web_use": web_use(record.calls),
            "no_internet": task.no_internet,
            "reference_refused": pin,
        }
    if judge is not None:
        await grade_attempts(judge, harness.participant, tasks, results, out)
    guard.write_json(out / "therock.json", results)
    return results


def judged_task(task: TheRockTask) -> Task:
    """The task as the judge grades it: the upstream fix's points, which only it decides."""
    points = [Point(point=p) for p in UPSTREAM_POINTS]
    return as_task(task).model_copy(update={"must_establish": points})


async def grade_attempts(
    judge: TaskJudge,
    harness: Participant,
    tasks: Sequence[TheRockTask],
    results: dict[str, dict[str, Any]],
    out: Path,
) -> None:
    """Each attempt's grade (`grade`) and result (`result`, `reasons`) added to its row."""
    for task in tasks:
        row, judged = results[task.id], judged_task(task)
        folder = out / "therock" / task.id
        attempt = TaskAttempt(
            task_id=task.id, task_digest=digest_of(task.model_dump(mode="json")),
            harness=harness, status="TIMEOUT" if row["capped"] else "COMPLETED",
            prompt=judged.prompt,
            calls=[TaskToolCall.model_validate(c) for c in row["calls"]],
            answers=[Answer.model_validate(a) for a in row["answers"]],
        )  # fmt: skip
        grade = None
        if row["reference_refused"] is None:
            diff = (folder / "agent.diff").read_text(encoding="utf-8")
            key = digest_of({"attempt": attempt.model_dump(mode="json"), "diff": diff})
            grade = judge.blank(judged, attempt, key)  # no judge configured: not asked
            if judge.config is not None:
                upstream = (folder / "reference.diff").read_text(encoding="utf-8")
                case = judge.case(judged, attempt, diff, "", NOT_SHOWN, upstream=upstream)
                grade = await judge.grade(judged, attempt, key, case)
        row["grade"] = grade.model_dump(mode="json") if grade is not None else None
        row["result"], row["reasons"] = result_of(row, judged, attempt, grade)


def result_of(
    row: dict[str, Any], judged: Task, attempt: TaskAttempt, grade: TaskGrade | None
) -> tuple[str, list[str]]:
    """Code first: a wrong pin is no grade, an attempt cut off keeps its status, the task's
    own checks FAIL whatever the judge says; then the judge decides the upstream points."""
    if row["reference_refused"]:
        return Status.NOT_JUDGED, [f"no grade: {row['reference_refused']}"]
    if attempt.status != "COMPLETED":
        return attempt.status, [f"{attempt.status}: cut off at the cap"]
    if row["problems"]:
        return Status.FAIL, list(row["problems"])
    return points_result(judged, attempt.final_answer, grade)


def _diff_files(patch: str) -> list[str]:
    return sorted({m.group(1) for m in re.finditer(r"^diff --git a/(\S+) b/", patch, re.M)})
