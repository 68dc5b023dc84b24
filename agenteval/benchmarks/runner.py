"""How a benchmark's step runs, one home for the stage runner and the CLI: the params loaded
once and validated with the benchmark's own section, the step run with its typed settings,
and every outcome said and mapped to the exit status in one place.

Statuses: 0 done; 1 a gate that fails, or the tracking store's fault; 2 input the step
refuses (each problem of a file on its own `path:line: message` line); 3 stopped by the
endpoint, nothing measured, or a baseline that is not comparable.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.base import (
    Benchmark,
    Failure,
    Outcome,
    RunContext,
    Step,
    benchmark,
    context,
    params_model,
    settings_of,
    step_of,
)
from agenteval.fileio import sha256_file, write_json
from agenteval.layout import Layout
from agenteval.measured import NOTHING_MEASURED_STATUS
from agenteval.params import ParamsError, load_params

TRACKED = "tracked.json"
INVALID, STOPPED = 2, 3


def load(
    bench: Benchmark[Any],
    params_file: Path,
    overrides: Iterable[str] = (),
    options: Mapping[str, tuple[str, Any]] | None = None,
) -> dict[str, Any]:
    """The params file with the benchmark's section typed by its Settings; ParamsError
    (every `path:line: key: ...`) when the models refuse it or it names another kind."""
    params = load_params(params_file, overrides, options, params_model((bench.name,)))
    kind = params["suite"]["kind"]
    if kind != bench.name:
        raise ParamsError(f"{params_file}:1: suite.kind is {kind!r}; this runs {bench.name!r}")
    return params


def run_stage_step(name: str, step_name: str, folder: Path, root: Path) -> int:
    """`python -m stages.benchmark NAME STEP`: pipelines/<name>/params.yaml loaded once, the
    step run on the pipeline's own data/ and reports/ (ParamsError is the caller's: 2)."""
    bench = benchmark(name)
    step = step_of(bench, step_name)
    params = load(bench, folder / "params.yaml")
    layout = Layout(root, folder / "data", folder / "reports")
    ctx = context(params, root, folder / "dvc.lock", progress=sys.stderr.isatty())
    return execute(step, settings_of(bench, params), ctx, layout, f"{step.name}: ")


def execute(
    step: Step[Any], settings: Any, ctx: RunContext, layout: Layout, prefix: str = ""
) -> int:
    """Run `step`; its lines on stdout under `prefix`, a failure it lists on stderr and the
    status that failure means; a step that measured nothing says why and exits 3."""
    try:
        outcome = step.run(settings, ctx, layout)
    except tuple(e for f in step.failures for e in _types(f.errors)) as exc:
        fail = next(f for f in step.failures if isinstance(exc, f.errors))
        said = f"{fail.label}: {exc}" if fail.label else str(exc)
        for line in getattr(exc, "problems", None) or [f"{prefix}{said}"]:
            print(line, file=sys.stderr)
        return fail.status
    for line in outcome.lines:  # a line that names its step already (a verdict's
        print(line if line.startswith(prefix) else f"{prefix}{line}")  # "gate: PASS") once
    coverage = outcome.coverage
    if coverage is not None and coverage.nothing:
        print(f"{prefix}{coverage.refusal()}", file=sys.stderr)
        return NOTHING_MEASURED_STATUS
    if coverage is not None and (line := coverage.line()):
        print(f"{prefix}{line}")
    return outcome.status


def _types(errors: type[Exception] | tuple[type[Exception], ...]) -> tuple[type[Exception], ...]:
    return errors if isinstance(errors, tuple) else (errors,)


def write_tracked(reports: Path, settings: Mapping[str, Any], result: object | None) -> Path:
    """<reports>/tracked.json, a track stage's DVC output: the experiment and the sha256 of
    the metrics logged, which follow from the stage's own inputs alone. Not the run id (each
    store has its own) nor the run key (it digests every stage's entry in dvc.lock, so it
    moves with code the track stage does not depend on). The root pipeline's is git-ignored,
    so the set-up's first `dvc repro` logs the evaluation into the new clone's store; a
    benchmark pipeline's is committed with its reports, so a fresh clone's `dvc status` is
    clean, and its store gets the benchmark's run when the pipeline reruns (or on
    `dvc repro --force --single-item pipelines/<kind>/dvc.yaml:track`)."""
    record: dict[str, Any] = {"enabled": result is not None}
    if result is not None:
        experiment = (settings.get("tracking") or {}).get("experiment")
        record |= {
            "experiment": experiment,
            "metrics_sha256": sha256_file(reports / "metrics.json"),
        }
    path = reports / TRACKED
    write_json(path, record)
    return path


def track(
    kind: str,
    config_of: Callable[[Any, RunContext, Layout], tuple[dict[str, Any], list[Path]]],
) -> Step[Any]:
    """A benchmark's `track` step: one MLflow run of its reports (`config_of` gives the run's
    config and the files logged beside the metrics) and reports/tracked.json; the store's
    fault is status 1, the results on disk untouched."""
    from agenteval.tracking.store import TrackingError

    def run(settings: Any, ctx: RunContext, layout: Layout) -> Outcome:
        from agenteval.benchmarks.tracking import log_benchmark

        config, artifacts = config_of(settings, ctx, layout)
        result = log_benchmark(layout, ctx.logged, config, kind=kind, lock=ctx.lock,
                               artifacts=artifacts)  # fmt: skip
        write_tracked(layout.reports, ctx.logged, result)
        if result is None:
            return Outcome(("tracking.enabled is false; nothing logged",))
        verb = "logged" if result.created else "already logged as"
        return Outcome((f"{verb} run {result.run_id} in {result.tracking_uri}",))

    return Step("track", run, (Failure(TrackingError, 1),))


def gate(kind: str, baseline: str) -> Step[Any]:
    """A benchmark's `gate` step: its reports/results.json against the committed `baseline`
    (a path from the root); 1 when the gate fails, 3 when the baseline is not comparable."""
    from agenteval.benchmarks import gate as gating

    def run(settings: Any, ctx: RunContext, layout: Layout) -> Outcome:
        current = gating.load_run(layout.reports / "results.json")
        result = gating.gate(current, gating.load_run(ctx.root / baseline))
        return Outcome(tuple(result.lines()), status=0 if result.passed else 1)

    refused = (Failure(gating.GateRefused, STOPPED, "not comparable"),)
    return Step("gate", run, (*refused, Failure(gating.GateInputError, INVALID)))


__all__ = ["RunContext", "execute", "gate", "load", "run_stage_step", "track", "write_tracked"]
