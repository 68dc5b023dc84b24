"""The memory benchmark behind the protocol (agenteval.benchmarks.base): `run` (every
scenario through the memory under test), `gate` (check by check against `memory.baseline`,
reports/gate.json), `track` (one MLflow run with a trace per chat) and `list` (what each
scenario stresses; the CLI's `memory list`, no DVC stage)."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from agenteval.benchmarks import runner
from agenteval.benchmarks.base import Definition, Failure, Outcome, RunContext, Step
from agenteval.benchmarks.memory import gate as gating
from agenteval.benchmarks.memory.records import MemoryResults, MemoryScenario
from agenteval.benchmarks.memory.run import Paths, coverage, load_results, run_suite, write_outputs
from agenteval.benchmarks.memory.scenarios import ScenarioError, load_scenarios
from agenteval.benchmarks.memory.settings import MemoryParams
from agenteval.benchmarks.verdict import GateRefused, GateResult
from agenteval.fileio import write_json
from agenteval.layout import Layout
from agenteval.llm import QuotaExhausted
from agenteval.memory.base import MemoryServerError
from agenteval.tracking.store import TrackingError

KIND = "memory"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def summary_lines(results: MemoryResults) -> list[str]:
    """Each scenario's checks and metric shares, then all of them and the wall time."""
    lines = []
    for s in results.scenarios:
        shares = ", ".join(
            f"{k.replace('_', ' ')} {_pct(v)}" for k, v in s.metrics.items() if v is not None
        )
        total = s.passed + s.failed + s.unmeasured
        lines.append(f"{s.id}: {s.passed}/{total} checks passed ({shares})")
    c = results.counts
    lines.append(
        f"all: {c['passed']}/{c['checks']} checks passed, {c['failed']} failed, "
        f"{c['unmeasured']} unmeasured over {c['probes']} probes and {c['chats']} chats"
    )
    return lines


def _run(settings: MemoryParams, ctx: RunContext, layout: Layout) -> Outcome:
    results = run_suite(settings, ctx.run, ctx.root)
    write_outputs(results, layout.reports)
    return Outcome(tuple(summary_lines(results)), coverage(results))


def _gate(settings: MemoryParams, ctx: RunContext, layout: Layout) -> Outcome:
    """reports/results.json against memory.baseline, check by check -> reports/gate.json;
    status 1 when a check that passed in the baseline fails now."""
    path = layout.reports / "gate.json"
    if settings.baseline is None:
        write_json(path, {"gated": False})
        return Outcome(("memory.baseline is null; nothing gated",))
    current = load_results(layout.reports / "results.json")
    verdict = gating.gate(current, load_results(ctx.root / settings.baseline))
    write_json(path, {"gated": True, "baseline": settings.baseline, **verdict.record()})
    return Outcome(tuple(verdict.lines(current)), status=0 if verdict.passed else 1)


def _track(settings: MemoryParams, ctx: RunContext, layout: Layout) -> Outcome:
    from agenteval.benchmarks.memory.tracking import log_memory

    paths = Paths(layout.reports)
    tracked = log_memory(settings.scenarios, ctx.logged, ctx.root, paths)
    runner.write_tracked(layout.reports, ctx.logged, tracked)
    if tracked is None:
        write_json(layout.reports / "mlflow_run.json", {"enabled": False})
        return Outcome(("tracking.enabled is false; nothing logged",))
    verb = "logged" if tracked.created else "already logged as"
    return Outcome((f"{verb} run {tracked.run_id} in {tracked.tracking_uri} "
                    f"({tracked.traces} traces, {tracked.feedback} feedback)",))  # fmt: skip


def _list(settings: MemoryParams, ctx: RunContext, layout: Layout) -> Outcome:
    lines = []
    for item in load_scenarios(ctx.root / settings.scenarios, ctx.root):
        s = item.scenario
        last = max([c.at for c in s.chats] + [p.at for p in s.probes])
        span = f"{s.chats[0].at:%Y-%m-%d} to {last:%Y-%m-%d}"
        lines.append(f"{s.id}: {s.title} ({len(s.chats)} chats, {len(s.probes)} probes, {span})")
        lines += [f"  - {stress}" for stress in s.stresses]
    return Outcome(tuple(lines))


def rule(
    current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None
) -> GateResult:
    """The check-by-check gate as every benchmark's result (`agenteval gate`): a regressed
    check fails, a fixed one is listed; the tolerance does not apply (a check holds or not)."""
    now, then = MemoryResults.model_validate(current), MemoryResults.model_validate(baseline)
    try:
        verdict = gating.gate(now, then)
    except gating.GateRefused as exc:
        raise GateRefused(str(exc)) from exc
    result = GateResult(verdict.passed, 0.0)
    held_then = sum(ok is True for ok in then.checks.values())
    result.checks.append(
        {"name": "checks held", "baseline": held_then, "current": verdict.held,
         "ok": verdict.passed}
    )  # fmt: skip
    for check in verdict.regressed:
        now_ok = now.checks.get(check)
        result.checks.append({"name": check, "baseline": True, "current": now_ok, "ok": False})
    for check in verdict.fixed:
        was = then.checks.get(check)
        result.flipped.append({"question": check, "what": "check", "from": was, "to": True})
    return result


# A scenario file's problems are its `path:line: message` lines; the quota stops the run
# resumable; a memory server that fails is the memory's fault (1), nothing written.
REFUSED = (
    Failure(ScenarioError, runner.INVALID),
    Failure(QuotaExhausted, runner.STOPPED, "stopped"),
    Failure(MemoryServerError, 1, "the memory server failed, nothing was written"),
    Failure((ValueError, OSError), runner.INVALID),
)


GATE = Step(
    "gate",
    _gate,
    (Failure(gating.GateRefused, runner.INVALID, "refused"), Failure(ValueError, runner.INVALID)),
)
TRACK = Step("track", _track, (Failure(TrackingError, 1), Failure(ValueError, runner.INVALID)))


BENCHMARK = Definition(
    name=KIND,
    Settings=MemoryParams,
    steps=(
        Step("run", _run, REFUSED),
        GATE,
        TRACK,
        Step("list", _list, (Failure(ScenarioError, runner.INVALID),)),
    ),
    schemas=MappingProxyType({"memory_scenario": MemoryScenario, "memory_results": MemoryResults}),
    rule=rule,
)
