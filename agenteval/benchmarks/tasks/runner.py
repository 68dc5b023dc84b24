"""Running a harness on tasks: one fresh copy per attempt, the cap, the diff, the checks.

For each (task, repeat): copy the project and apply the setup, keep the snapshot apart, run
the harness under the wall-clock cap with the tool record filling as it goes (its commands,
and the checks after it, in the run's sandbox), then measure the copy against the snapshot
(the diff) and run the task's checks. A task cut off at the cap is TIMEOUT and keeps every
call it made; a backend that cannot be reached is INFRA_ERROR (not the agent getting worse);
a backend out of quota stops the run, the rest NOT_RUN and resumable. Each attempt records
the commit and time it ran (agenteval.stamps; an in-process harness is stamped by its code
instead) and is written (scrubbed, checked for secrets) to
`<data>/attempts/<task>/r<repeat>/`: attempt.json, workspace.diff, setup.diff. A stored
COMPLETED attempt of the same task definition, project, harness and sandbox is reused, never
rerun, and keeps its stamp: a scorecard of reused attempts says which commits it holds.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval import stamps
from agenteval.benchmarks.tasks.boundary import agent_env
from agenteval.benchmarks.tasks.checks import missing_toolchain, run_checks
from agenteval.benchmarks.tasks.definitions import task_digest
from agenteval.benchmarks.tasks.graded import TreeTooLarge
from agenteval.benchmarks.tasks.harness import AttemptContext, Harness, UsageMeter
from agenteval.benchmarks.tasks.offline_gh import GhRecord, GhService
from agenteval.benchmarks.tasks.recorder import recording
from agenteval.benchmarks.tasks.sandbox import Sandbox, default_sandbox
from agenteval.benchmarks.tasks.sandbox import from_params as sandbox_from_params
from agenteval.benchmarks.tasks.secrets import SecretGuard
from agenteval.benchmarks.tasks.setups import SetupError
from agenteval.benchmarks.tasks.tools import ToolRecord, WorkspaceTools
from agenteval.benchmarks.tasks.workspace import SnapshotTampered, Workspace, prepare, tree_files
from agenteval.fileio import digest_of, sha256_bytes, sha256_text
from agenteval.llm.cost import PriceTable
from agenteval.llm.retry import LLMError, QuotaExhausted
from agenteval.schema.task_records import AttemptStatus, TaskAttempt
from agenteval.schema.tasks import Task

RETRIED = frozenset({"TIMEOUT", "INFRA_ERROR", "ERRORED", "NOT_RUN", "SETUP_ERROR"})


@dataclass(frozen=True)
class RunSettings:
    toybox: Path
    run_timeout_s: float = 1800.0
    command_timeout_s: float = 120.0
    check_timeout_s: float = 300.0
    max_steps: int = 40
    concurrency: int = 1
    work_root: Path | None = None
    prices: PriceTable | None = None
    seed: int = 0
    models: tuple[str, ...] = ()
    sandbox: Sandbox = field(default_factory=default_sandbox)
    agent_env: tuple[str, ...] = ()  # allowed besides boundary.AGENT_ENV_NAMES
    github: Path | None = None  # the offline gh's fixture; None: no gh on PATH
    # Stop grading an attempt at its first failed check (validate's untouched projects,
    # which only have to fail); an agent's attempt always gets every check.
    first_failure: bool = False

    @classmethod
    def from_params(
        cls,
        params: Mapping[str, Any],
        root: Path,
        toybox: str,
        sealed: Iterable[Path] = (),
        github: str | None = None,
    ) -> RunSettings:
        """The settings of a run; its sandbox proven to start here (SandboxUnavailable);
        a github fixture that is not there refused (ValueError) before any work."""
        section = params.get("tasks") or {}
        work_root = section.get("work_root")
        fixture = root / github if github else None
        if fixture is not None and not fixture.is_file():
            raise ValueError(f"github: the offline gh's fixture {github} is not a file")
        return cls(
            github=fixture,
            sandbox=sandbox_from_params(params, root, sealed).check(),
            toybox=root / toybox,
            run_timeout_s=float(section.get("run_timeout_s", 1800)),
            command_timeout_s=float(section.get("command_timeout_s", 120)),
            check_timeout_s=float(section.get("check_timeout_s", 300)),
            max_steps=int(section.get("max_steps", 40)),
            concurrency=int(section.get("concurrency", 1)),
            work_root=Path(work_root) if work_root else None,
            prices=PriceTable((params.get("run") or {}).get("prices") or {}),
            seed=int((params.get("suite") or {}).get("seed", 0)),
            models=tuple(m for m in [str((params.get("target") or {}).get("model") or "")] if m),
            agent_env=tuple(str(n) for n in section.get("agent_env") or ()),
        )


def toybox_digest(toybox: Path, github: Path | None = None) -> str:
    """The project's files and, when gh serves one, the fixture: a changed issue is a
    changed task."""
    files = {rel: sha256_bytes(data) for rel, data in tree_files(toybox).items()}
    if github is None:
        return digest_of(files)
    return digest_of({"toybox": files, "github": sha256_bytes(github.read_bytes())})


def attempt_dir(data: Path, task_id: str, repeat: int) -> Path:
    return data / "attempts" / task_id / f"r{repeat}"


def load_attempt(folder: Path) -> TaskAttempt | None:
    try:
        return TaskAttempt.model_validate_json((folder / "attempt.json").read_bytes())
    except (OSError, ValueError, ValidationError):
        return None  # missing or corrupt: run again, never trust


@dataclass
class Outcome:
    status: AttemptStatus = "COMPLETED"
    error: str | None = None
    resumable: bool = False


class TaskRunner:
    def __init__(
        self,
        harness: Harness,
        settings: RunSettings,
        data: Path,
        guard: SecretGuard,
        on_done: Callable[[TaskAttempt], None] | None = None,
        key_names: Iterable[str] = (),
        root: Path | None = None,
    ) -> None:
        self.harness, self.settings, self.data, self.guard = harness, settings, data, guard
        self.project_digest = toybox_digest(settings.toybox, settings.github)
        # Every configured key variable (the judge's too), and the harness's own.
        self.env = agent_env([*harness.key_env_names(), *key_names], allow=settings.agent_env)
        # Claude Code runs whole inside the sandbox and needs the network for its own API.
        agent_network = bool(getattr(harness, "needs_network", False))
        self.sandbox_label = settings.sandbox.label_for(agent_network)
        self.stop_reason: str | None = None
        self.toolchain_problem: str | None = None  # set by run(): coding tasks cannot run
        self.on_done = on_done or (lambda _a: None)
        # Where and when each attempt ran (agenteval.stamps), once per run; a stored attempt
        # reused later keeps its own. An in-process harness (the scripted replay) records
        # neither: its output is a function of its code, which its participant names.
        # `root`: the project's checkout (by default the one holding the toybox).
        self.commit = None if harness.in_process else stamps.head(root or settings.toybox)

    def digest(self, task: Task) -> str:
        return task_digest(task, self.project_digest)

    def stored(self, task: Task, repeat: int) -> TaskAttempt | None:
        found = load_attempt(attempt_dir(self.data, task.id, repeat))
        if found is None or found.status in RETRIED or found.resumable:
            return None
        same = (
            found.task_digest == self.digest(task)
            and found.harness.same_as(self.harness.participant)
            and found.sandbox == self.sandbox_label  # a sealed run reuses no other
        )
        return found if same else None

    async def run(self, tasks: list[Task], repeats: int) -> list[TaskAttempt]:
        semaphore = asyncio.Semaphore(max(1, self.settings.concurrency))
        if any(t.kind == "coding" for t in tasks):
            self.toolchain_problem = await missing_toolchain(
                self.env, self.settings.command_timeout_s, self.settings.sandbox
            )

        async def one(task: Task, repeat: int) -> TaskAttempt:
            done = self.stored(task, repeat)
            if done is None:
                async with semaphore:
                    done = await self.attempt(task, repeat)
            self.on_done(done)
            return done

        return list(await asyncio.gather(*(one(t, r) for r in range(repeats) for t in tasks)))

    def blank(self, task: Task, repeat: int) -> TaskAttempt:
        return TaskAttempt(
            task_id=task.id,
            repeat=repeat,
            task_digest=self.digest(task),
            harness=self.harness.participant,
            status="COMPLETED",
            prompt=task.prompt,
            started_at=None if self.harness.in_process else stamps.now(),
            commit=self.commit,
            sandbox=self.sandbox_label,
        )

    async def attempt(self, task: Task, repeat: int) -> TaskAttempt:
        record = self.blank(task, repeat)
        if self.stop_reason is not None:
            record.status, record.resumable = "NOT_RUN", True
            record.error = f"run stopped before this task: {self.stop_reason}"
            return self._write(record, "", "")
        if self.toolchain_problem is not None and task.kind == "coding":
            record.status, record.error = "SETUP_ERROR", self.toolchain_problem
            return self._write(record, "", "")
        try:
            ws = await asyncio.to_thread(
                prepare, self.settings.toybox, task.setup, self.settings.work_root
            )
        except (SetupError, OSError) as exc:
            record.status, record.error = "SETUP_ERROR", str(exc)
            return self._write(record, "", "")
        github = self.settings.github
        gh = GhService(github, self.settings.work_root) if github is not None else None
        try:
            return await self._measure(task, repeat, ws, record, gh)
        finally:
            ws.close()  # not in a thread: a cancelled run still removes it
            if gh is not None:
                gh.close()

    async def _measure(
        self, task: Task, repeat: int, ws: Workspace, record: TaskAttempt, gh: GhService | None
    ) -> TaskAttempt:
        """The agent under the cap, then the grading. Every harness gets the same conditions:
        this cap, this environment (the toolchain's PATH, the offline gh first on it), this
        sandbox (gh's client and socket shown), and the model route its harness was given."""
        tools_record = ToolRecord()
        meter = UsageMeter()
        sandbox = gh.sandbox(self.settings.sandbox) if gh else self.settings.sandbox
        env = gh.environ(self.env) if gh else dict(self.env)
        timeout = self.settings.command_timeout_s
        tests_pass = task.expect.tests_pass if task.expect is not None else None
        suite = tests_pass.args if tests_pass is not None else []
        with recording(ws.work, env, sandbox, timeout, self.settings.work_root, suite) as observed:
            recorder, env, sandbox = observed
            ctx = AttemptContext(
                workdir=ws.work,
                env=env,
                tools=WorkspaceTools(ws.work, env, timeout, tools_record, sandbox, recorder),
                record=tools_record,
                meter=meter,
                repeat=repeat,
                seed=self.settings.seed * 1000 + repeat,
                command_timeout_s=timeout,
                max_steps=self.settings.max_steps,
                sandbox=sandbox,
                recorder=recorder,
            )
            start = time.perf_counter()
            outcome = await self._drive(task, ctx)
            wall = time.perf_counter() - start
        record.status, record.error, record.resumable = (
            outcome.status,
            outcome.error,
            outcome.resumable,
        )
        record.calls, record.answers = tools_record.calls, tools_record.answers
        record.usage = meter.total(self.settings.prices, self.settings.models)
        github = gh.record() if gh is not None else None
        record.gh_calls = github.calls if github is not None else []
        if self.harness.in_process:  # its times measure this machine, not an agent
            for call in record.calls:
                call.latency_ms = None
        else:
            record.wall_seconds = round(wall, 3)
        try:
            return await self._grade(task, ws, record, github)
        except (SnapshotTampered, TreeTooLarge, OSError, ValueError) as exc:
            # This task's grading broke: its own status, never the whole run's.
            record.status, record.error = "ERRORED", f"grading failed: {exc}"
            record.checks = []
            return self._write(record, "", "")

    async def _grade(
        self, task: Task, ws: Workspace, record: TaskAttempt, github: GhRecord | None = None
    ) -> TaskAttempt:
        """The graded tree (never the agent's copy), its diff and findings, the checks."""
        tests_pass = task.expect.tests_pass if task.expect is not None else None
        editable = list(tests_pass.editable) if tests_pass is not None else None
        grading = await asyncio.to_thread(ws.grade, editable)
        setup_diff = await asyncio.to_thread(ws.setup_diff) if task.setup else ""
        record.changed_files, record.findings = grading.changed, grading.findings
        for call in record.calls:  # a run on another tree than the one left verifies nothing
            if call.pytest_report is not None:
                call.pytest_report["stale"] = int(call.pytest_report.get("tree") != grading.tree)
        diff = self.guard.text(grading.diff, "workspace.diff")
        setup_diff = self.guard.text(setup_diff, "setup.diff")
        record.diff_sha256 = sha256_text(diff)
        record.setup_diff_sha256 = sha256_text(setup_diff) if task.setup else None
        if task.expect is not None:
            record.grading_seed = self._grading_seed(record.repeat)
            record.checks = await run_checks(
                task.expect,
                ws,
                self.env,
                self.settings.check_timeout_s,
                self.settings.sandbox,
                grading,
                seed=record.grading_seed,
                github=github,
                first_failure=self.settings.first_failure,
            )
        return self._write(record, diff, setup_diff)

    def _grading_seed(self, repeat: int) -> int:
        """The hidden inputs' seed. The run's seed is in params.yaml and the generators are
        public code, so an agent could make the very inputs and hard-code them: an agent
        that can act (anything but an in-process, pre-written script) gets a seed drawn now,
        after it stopped, that nothing it could read holds."""
        if self.harness.in_process:
            return self.settings.seed * 1000 + repeat
        return secrets.randbits(48)

    async def _drive(self, task: Task, ctx: AttemptContext) -> Outcome:
        cap = self.settings.run_timeout_s
        try:
            await asyncio.wait_for(self.harness.attempt(task, ctx), timeout=cap)
        except TimeoutError:
            return Outcome("TIMEOUT", f"cut off at the {cap:g} s cap; the record keeps what it did")
        except QuotaExhausted as exc:
            self.stop_reason = self.stop_reason or f"quota or credential failure: {exc}"
            return Outcome("INFRA_ERROR", self.stop_reason, resumable=True)
        except LLMError as exc:
            return Outcome("INFRA_ERROR", f"the model backend failed: {exc}")
        except Exception as exc:
            return Outcome("ERRORED", f"{type(exc).__name__}: {exc}")
        return Outcome()

    def _write(self, record: TaskAttempt, diff: str, setup_diff: str) -> TaskAttempt:
        folder = attempt_dir(self.data, record.task_id, record.repeat)
        # Diffs first, the record last: a record on disk always has its diffs beside it.
        self.guard.write_text(folder / "workspace.diff", diff)
        self.guard.write_text(folder / "setup.diff", setup_diff)
        clean = TaskAttempt.model_validate(self.guard.value(record, str(folder / "attempt.json")))
        self.guard.write_json(folder / "attempt.json", clean)
        return clean
