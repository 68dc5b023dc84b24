"""Inference: drive every (scenario, iteration) through the target and store its transcript.

Each unit of work is independent. A finished unit is written atomically as soon as it ends,
so an interrupted run resumes by skipping units whose transcript already exists for the same
scenario content and the same agent configuration.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agenteval import stamps
from agenteval.fileio import GroupCommitWriter, file_sha, group_commit, inside
from agenteval.layout import transcript_path
from agenteval.pending import is_retryable
from agenteval.schema.status import Status
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Attempt, Transcript, TranscriptTurn
from agenteval.simulators.base import Simulator
from agenteval.targets.base import SessionContext, SetupFailed, Target

IN_PROCESS = "in-process"  # the protocol of an agent that runs inside this process

# Per-scenario time limit scales with the work it involves (documents to index, turns).
TIMEOUT_STARTUP_S = 120
TIMEOUT_PER_DOC_S = 90
TIMEOUT_PER_TURN_S = 200
TIMEOUT_CAP_S = 7200


def effective_timeout(base_s: float, documents: int, turns: int) -> float:
    scaled = TIMEOUT_STARTUP_S + TIMEOUT_PER_DOC_S * documents + TIMEOUT_PER_TURN_S * turns
    return float(min(max(base_s, scaled), TIMEOUT_CAP_S))


@dataclass
class Unit:
    item: SuiteItem
    iteration: int
    seed: int


# How an executor runs a unit elsewhere: its transcript and the reason the run must stop,
# if the unit found one (quota, credentials, run budget).
Dispatch = Callable[[Unit], Awaitable[tuple[Transcript, str | None]]]


class BudgetExceeded(Exception):
    """A scenario or the whole run reached its spending limit."""

    def __init__(self, message: str, *, run_wide: bool = False) -> None:
        super().__init__(message)
        self.run_wide = run_wide  # the run's budget, not the scenario's: a resume finishes it


class ModelPinMismatch(Exception):
    """The agent answered with another model than the run pins (run.agent_model)."""


def pin_mismatch(models: list[str | None] | None, pin: str) -> str | None:
    """Why a reply's reported models break the pin; None when every one is the pinned model.
    A reply that names no model cannot be checked, so it breaks the pin too."""
    if models is None:
        return f"this agent does not report the model it ran, so the pin {pin} cannot be checked"
    others = sorted({m for m in models if m is not None and m != pin})
    if others:
        return f"the agent ran {', '.join(others)}, not the pinned {pin}"
    if None in models:
        return f"a reply named no model, so the pin {pin} cannot be checked"
    return None


def untimed(transcript: Transcript) -> None:
    """Drop every wall-clock measurement from a transcript."""
    transcript.started_at, transcript.duration_s = None, None
    # Its output is a function of the code digest it records: a commit stamp would only
    # make the same outputs differ between commits (and from the committed dvc.lock).
    transcript.commit = None
    for call in transcript.setup_calls:
        call.latency_ms = None
    for turn in transcript.turns:
        turn.latency_ms = None
        for call in turn.tool_calls:
            call.latency_ms = None


def record_retry(transcript: Transcript, before: Transcript) -> None:
    """Carry the history of earlier attempts at the same unit into its new transcript."""
    if before.status == Status.NOT_RUN:  # never started: not an attempt
        transcript.earlier_attempts, transcript.attempts = before.earlier_attempts, before.attempts
        return
    earlier = Attempt(status=before.status, error=before.error, started_at=before.started_at)
    transcript.earlier_attempts = [*before.earlier_attempts, earlier]
    transcript.attempts = before.attempts + 1


def is_quota(exc: BaseException) -> bool:
    # Imported lazily: the offline default never loads the LLM clients.
    from agenteval.llm.retry import QuotaExhausted

    return isinstance(exc, QuotaExhausted)


def is_backend_failure(exc: BaseException) -> bool:
    """A model endpoint that stayed unreachable, 5xx or unreadable through every attempt: the
    unit is INFRA_ERROR (unmeasured, agenteval.measured), never the agent's ERRORED."""
    from agenteval.llm.retry import TransientError

    return isinstance(exc, TransientError)


class UnitRunner:
    """Runs one unit of work: the conversation under its time limit and budgets. It writes
    no file, so any process holding the same target and simulator can run a unit (an
    executor's worker); `Inference` decides which units run and stores what they return."""

    def __init__(
        self,
        target: Target,
        simulator: Simulator,
        root: Path,
        *,
        timeout_s: float = 900,
        budget_usd_per_scenario: float | None = None,
        budget_usd_total: float | None = None,
        agent_model: str | None = None,
    ) -> None:
        self.target, self.simulator, self.root = target, simulator, root
        # Not a choice of model: what every reply must report having run (run.agent_model).
        self.agent_model = agent_model
        self.timeout_s = timeout_s
        self.budget_scenario = budget_usd_per_scenario
        self.budget_total = budget_usd_total
        # Wall-clock times of an in-process agent (the builtin) measure this machine, not an
        # agent, and are the one thing that would make the offline pipeline's outputs differ
        # between two runs (or a fresh clone and the committed dvc.lock): not recorded.
        self.timed = target.participant.protocol != IN_PROCESS
        self.commit = stamps.head(root)  # once per run: every unit it runs records it
        self.spent_usd = 0.0
        # Set when the run must stop (quota, credentials, run budget): later units are NOT_RUN.
        self.stop_reason: str | None = None

    def new_transcript(self, unit: Unit) -> Transcript:
        return Transcript(
            scenario_id=unit.item.scenario.id,
            iteration=unit.iteration,
            seed=unit.seed,
            scenario_digest=unit.item.digest,
            status="COMPLETED",
            target=self.target.participant,
            simulator=self.simulator.participant,
            started_at=stamps.now(),
            commit=self.commit,
        )

    def not_run(self, unit: Unit) -> Transcript:
        transcript = self.new_transcript(unit)
        transcript.status, transcript.resumable = Status.NOT_RUN, True
        transcript.error = f"run stopped before this scenario: {self.stop_reason}"
        return transcript

    async def run_unit(self, unit: Unit) -> Transcript:
        scenario = unit.item.scenario
        transcript = self.new_transcript(unit)
        start = time.perf_counter()
        if unit.item.missing_documents:
            transcript.status = Status.SKIPPED_NO_DOCUMENT
            transcript.error = "missing on disk: " + ", ".join(unit.item.missing_documents)
            return transcript
        unwritten = [t.turn for t in scenario.turns if not t.user_message]
        if unwritten and not self.simulator.writes_messages:
            transcript.status = Status.NO_USER_MESSAGE
            transcript.error = (
                f"turn(s) {unwritten} have no user_message and the "
                f"{self.simulator.participant.kind} simulator cannot write one; configure "
                "simulator.kind: llm (e.g. the local model of `agenteval serve-local`)"
            )
            return transcript
        limit = effective_timeout(
            self.timeout_s, len(scenario.setup.index_documents), len(scenario.turns)
        )
        try:
            await asyncio.wait_for(self._converse(unit, transcript), timeout=limit)
        except TimeoutError:
            transcript.status, transcript.error = Status.TIMEOUT, f"exceeded {limit:.0f} s"
        except SetupFailed as exc:
            transcript.status, transcript.error = exc.status, str(exc)
            transcript.setup_calls = exc.calls
        except BudgetExceeded as exc:
            transcript.status, transcript.error = Status.BUDGET_EXCEEDED, str(exc)
            transcript.resumable = exc.run_wide
        except ModelPinMismatch as exc:
            transcript.status, transcript.error = Status.INFRA_ERROR, f"model pin: {exc}"
        except Exception as exc:
            self._record_crash(transcript, exc)
        transcript.duration_s = round(time.perf_counter() - start, 4)
        transcript.documents = self.read_documents(unit.item, transcript)
        return transcript

    def read_documents(self, item: SuiteItem, transcript: Transcript) -> dict[str, str | None]:
        """The scenario's documents plus every file the agent indexed, with their sha256."""
        found = dict(item.documents)
        calls = transcript.setup_calls + [c for t in transcript.turns for c in t.tool_calls]
        for call in calls:
            path = call.arguments.get("path") or call.arguments.get("filepath")
            if call.name == "index_document" and call.ok and isinstance(path, str):
                rel = inside(self.root, path)
                if rel is not None and rel not in found:
                    found[rel] = file_sha(self.root, rel)
        return found

    def _record_crash(self, transcript: Transcript, exc: Exception) -> None:
        if is_quota(exc):
            # Out of quota or credit, or a rejected key: nothing later can succeed; stop the
            # run now and let a resume retry this scenario.
            transcript.status, transcript.resumable = Status.INFRA_ERROR, True
            transcript.error = f"quota or credential failure: {exc}"
            self.stop_reason = self.stop_reason or transcript.error
        elif is_backend_failure(exc):
            transcript.status = Status.INFRA_ERROR
            transcript.error = f"model backend failed: {type(exc).__name__}: {exc}"
        else:
            transcript.status = Status.ERRORED
            transcript.error = f"{type(exc).__name__}: {exc}"

    def charge(self, transcript: Transcript, cost: float | None) -> None:
        """Add a reply's known cost; cut the scenario or the run when a budget is reached."""
        if cost is None:
            return
        transcript.cost_usd = round((transcript.cost_usd or 0.0) + cost, 8)
        spent = self.add_spent(cost)
        if self.budget_total is not None and spent >= self.budget_total:
            reason = (
                f"run budget ${self.budget_total:g} reached (spent ${spent:.4f} by this "
                "invocation; a resume may spend up to the budget again)"
            )
            self.stop_reason = self.stop_reason or reason
            raise BudgetExceeded(reason, run_wide=True)
        if self.budget_scenario is not None and transcript.cost_usd >= self.budget_scenario:
            raise BudgetExceeded(
                f"scenario budget ${self.budget_scenario:g} reached (${transcript.cost_usd:.4f})"
            )

    def check_pin(self, turn: int, models: list[str | None] | None) -> None:
        """Stop the conversation at the first reply from another model than the pin: the
        unit is discarded (INFRA_ERROR with the reason), and no more is spent on it."""
        if self.agent_model is None:
            return
        why = pin_mismatch(models, self.agent_model)
        if why is not None:
            raise ModelPinMismatch(f"turn {turn}: {why} (run.agent_model)")

    def add_spent(self, cost: float) -> float:
        """Add a reply's cost to the run's spending; the run's total so far. (A runner in an
        executor's worker keeps that total where every worker adds to it.)"""
        self.spent_usd += cost
        return self.spent_usd

    async def _converse(self, unit: Unit, transcript: Transcript) -> None:
        scenario = unit.item.scenario
        ctx = SessionContext(root=self.root, seed=unit.seed, iteration=unit.iteration)
        session = await self.target.open_session(scenario, ctx)
        try:
            transcript.setup_calls = await session.setup(scenario.setup.index_documents)
            for turn in scenario.turns:
                message = await self.simulator.message(
                    scenario, turn, transcript.turns, unit.iteration, unit.seed
                )
                started = time.perf_counter()
                reply = await session.send(message.text)
                transcript.turns.append(
                    TranscriptTurn(
                        turn=turn.turn,
                        user_message=message.text,
                        response=reply.response,
                        tool_calls=reply.tool_calls,
                        latency_ms=round((time.perf_counter() - started) * 1000, 3),
                        usage=reply.usage,
                        models=reply.models,
                        simulator_fault=message.fault,
                    )
                )
                self.charge(transcript, reply.usage.cost_usd if reply.usage else None)
                self.check_pin(turn.turn, reply.models)
        finally:
            await session.close()


class Inference:
    """Every unit of a suite: stored results reused, the rest run (by this process, or by
    `dispatch`: an executor's workers) and each written once, in groups, to `out`."""

    def __init__(
        self,
        suite: Suite,
        target: Target,
        simulator: Simulator,
        out: Path,
        root: Path,
        *,
        concurrency: int = 4,
        timeout_s: float = 900,
        budget_usd_per_scenario: float | None = None,
        budget_usd_total: float | None = None,
        agent_model: str | None = None,
        retry_statuses: frozenset[str] = frozenset(),
        on_done: Callable[[Transcript], None] | None = None,
        dispatch: Dispatch | None = None,
        on_stored: Callable[[Transcript], None] | None = None,
    ) -> None:
        self.suite, self.target, self.simulator = suite, target, simulator
        self.out, self.root = out, root
        self.concurrency = max(1, concurrency)
        self.runner = UnitRunner(
            target,
            simulator,
            root,
            timeout_s=timeout_s,
            budget_usd_per_scenario=budget_usd_per_scenario,
            budget_usd_total=budget_usd_total,
            agent_model=agent_model,
        )
        # Stored units that ended with one of these are run once more by this invocation
        # (`agenteval retry`, a resume, or a repro whose inputs changed): the failure may
        # have been transient.
        self.retry_statuses = retry_statuses
        self.on_done = on_done or (lambda _t: None)
        # Called with each unit's transcript exactly as its file holds it (scrubbed, parsed
        # back), e.g. to judge it while other units are still running.
        self.on_stored = on_stored
        self.dispatch = dispatch
        # Transcripts written by this invocation, per (scenario, iteration, seed): every
        # count is 1, whatever an executor retried (tests and executors read it).
        self.writes: Counter[tuple[str, int, int]] = Counter()

    @property
    def stop_reason(self) -> str | None:
        return self.runner.stop_reason

    @stop_reason.setter
    def stop_reason(self, reason: str | None) -> None:
        self.runner.stop_reason = reason

    def units(self) -> list[Unit]:
        seeds = self.suite.seeds()
        return [
            Unit(item, i, seeds[i])
            for item in self.suite.items
            for i in range(self.suite.iterations)
        ]

    def stored(self, unit: Unit) -> Transcript | None:
        """The stored transcript of this exact unit, scenario content, agent configuration and
        documents, whatever its status; None when there is none or it is stale."""
        path = transcript_path(self.out, unit.item.scenario.id, unit.iteration)
        if not path.is_file():
            return None
        try:
            stored = Transcript.model_validate_json(path.read_bytes())
        except (ValueError, ValidationError, OSError):
            return None  # a corrupt file is re-run, never trusted
        same = self.mismatch(unit, stored) is None and self.same_documents(stored, unit.item)
        return stored if same else None

    def mismatch(self, unit: Unit, transcript: Transcript) -> str | None:
        """Why `transcript` is not this unit's conversation with this run's agent and
        simulator (scenario content, seed, configuration and code digests); None if it is."""
        key = (transcript.scenario_id, transcript.iteration, transcript.seed)
        if key != (unit.item.scenario.id, unit.iteration, unit.seed):
            return f"it is the conversation of {key}"
        if transcript.scenario_digest != unit.item.digest:
            return "it ran other scenario content"
        for role, mine, theirs in (
            ("agent", self.target.participant, transcript.target),
            ("simulator", self.simulator.participant, transcript.simulator),
        ):
            if not theirs.same_as(mine):
                return (
                    f"its {role} has another configuration or code "
                    f"(digest {theirs.config_digest}, here {mine.config_digest})"
                )
        return None

    def retryable(self, stored: Transcript) -> bool:
        return is_retryable(stored, self.retry_statuses)

    def same_documents(self, stored: Transcript, item: SuiteItem) -> bool:
        """Every document the stored conversation read still has the bytes it had."""
        if any(stored.documents.get(path, "?") != sha for path, sha in item.documents.items()):
            return False
        return all(
            item.documents[path] == sha
            if path in item.documents
            else file_sha(self.root, path) == sha
            for path, sha in stored.documents.items()
        )

    def journal(self) -> Path:
        """Where finished units wait for their batch's fsync (data/.transcripts.journal)."""
        return self.out.parent / f".{self.out.name}.journal"

    async def run(self) -> list[Transcript]:
        # Finished transcripts are committed in groups: one journal fsync per batch instead
        # of one per file, and a journal left by a crash is replayed before anything is read.
        async with group_commit(self.journal()) as writer:
            return await self._run_all(writer)

    async def _run_all(self, writer: GroupCommitWriter) -> list[Transcript]:
        semaphore = asyncio.Semaphore(self.concurrency)

        async def guarded(unit: Unit) -> Transcript:
            before = self.stored(unit)
            done = None if before is None or self.retryable(before) else before
            if done is None:
                async with semaphore:
                    done = (
                        self.runner.not_run(unit) if self.stop_reason else await self.execute(unit)
                    )
                if not self.runner.timed:
                    untimed(done)
                if before is not None:
                    record_retry(done, before)
                path = transcript_path(self.out, unit.item.scenario.id, unit.iteration)
                # Scrubbing, the journal fsync and the rename happen off the event loop, a
                # batch at a time, so other conversations keep their requests in flight.
                text = await writer.write(path, done)
                self.writes[unit.item.scenario.id, unit.iteration, unit.seed] += 1
                if self.on_stored is not None:
                    self.on_stored(Transcript.model_validate_json(text))
            elif self.on_stored is not None:
                self.on_stored(done)  # read from its file: already as stored
            self.on_done(done)
            return done

        return list(await asyncio.gather(*(guarded(u) for u in self.units())))

    async def execute(self, unit: Unit) -> Transcript:
        """Run one unit here, or through `dispatch`; a dispatched result is stored only when
        it is this unit's, by this run's agent and simulator (a worker on another machine
        may run other code)."""
        if self.dispatch is None:
            return await self.runner.run_unit(unit)
        try:
            done, stop = await self.dispatch(unit)
        except Exception as exc:  # the executor lost the unit for good (retries exhausted)
            done = self.runner.new_transcript(unit)
            done.status, done.error = Status.INFRA_ERROR, f"executor: {exc}"
            return done
        refused = self.mismatch(unit, done)
        if refused is not None:
            done = self.runner.new_transcript(unit)
            done.status, done.resumable = Status.INFRA_ERROR, True
            done.error = f"refused a worker's result: {refused}"
            stop = f"a worker runs another agent or code than this run: {refused}"
        self.stop_reason = self.stop_reason or stop
        return done
