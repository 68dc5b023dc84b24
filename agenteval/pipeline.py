"""The evaluation as a chain of steps over files; `agenteval run` and the DVC stages share it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from agenteval import fileio
from agenteval.engine import Inference
from agenteval.executors import ExecutionReport
from agenteval.fileio import read_json, write_json
from agenteval.judges.base import make_judge
from agenteval.judging import StreamJudging, run_judging
from agenteval.layout import Layout, load_suite
from agenteval.pending import retry_summary
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.suite import Suite
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict
from agenteval.scorecard import build_scorecard, metrics_of
from agenteval.simulators.base import make_simulator
from agenteval.suite.build import build_suite
from agenteval.targets.base import check_agent_files, make_target


@contextmanager
def progress_bar(label: str, total: int, enabled: bool) -> Iterator[Callable[[Any], None]]:
    """A rich progress bar on stderr; a no-op callback when disabled (tests, CI logs)."""
    if not enabled:
        yield lambda _item: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    columns = (BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(
        "[progress.description]{task.description}", *columns, console=Console(stderr=True)
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda _item: bar.advance(task)


def step_suite(params: dict[str, Any], layout: Layout) -> Suite:
    suite = build_suite(params, layout.root)
    write_json(layout.suite, suite)
    return suite


@dataclass
class InferResult:
    transcripts: list[Transcript]
    stop_reason: str | None  # why the run stopped early (quota, credentials, run budget)
    execution: ExecutionReport | None = None  # where the units ran, which ran again
    writes: dict[tuple[str, int, int], int] | None = None  # transcripts written, per unit
    retry: str | None = None  # what a retry would send again (pending.retry_summary)


def install_scrubber(params: dict[str, Any]) -> None:
    """Every file written from here on passes the scrubber: known key values and shapes."""
    from agenteval.llm.scrub import Scrubber

    names = [
        str(params.get(role, {}).get("api_key_env"))
        for role in ("target", "simulator", "judge")
        if params.get(role, {}).get("api_key_env")
    ]
    # Variables handed to an MCP agent's process may hold keys too.
    names += [str(n) for n in params.get("target", {}).get("env") or []]
    fileio.install_scrubber(Scrubber.from_environment(names))


def _optional_float(value: Any) -> float | None:
    return None if value in (None, "", "null") else float(value)


def step_infer(
    params: dict[str, Any],
    layout: Layout,
    progress: bool = False,
    judge_too: bool = False,
    graded: Callable[[Verdict], None] | None = None,
) -> InferResult:
    """Run the agent on every unit, holding its backend's lock (see agenteval.runlock), on
    the executor `run.executor` names. `judge_too` also grades each transcript as soon as it
    is written, in the same event loop (what step_judge would write; for `overlaps_judging`),
    and tells `graded` of each new verdict once written."""
    from agenteval.executors import open_executor
    from agenteval.runlock import endpoint_key, eval_lock

    install_scrubber(params)
    check_agent_files(params, layout.root)  # named before the suite is even read
    suite = load_suite(layout)
    target = make_target(params, layout.root)
    simulator = make_simulator(params, layout.root)
    run = params["run"]
    total = len(suite.items) * suite.iterations
    options: dict[str, Any] = {
        "timeout_s": float(run.get("timeout_s", 900)),
        "budget_usd_per_scenario": _optional_float(run.get("budget_usd_per_scenario")),
        "budget_usd_total": _optional_float(run.get("budget_usd_total")),
        "agent_model": run.get("agent_model") or None,
    }
    lock = eval_lock(endpoint_key(params["target"]), str(layout.transcripts))
    with (
        lock,
        progress_bar("agent", total, progress) as tick,
        open_executor(params, layout.root, options) as executor,
    ):
        grading = _stream_judging(params, layout, suite, graded) if judge_too else None
        engine = Inference(
            suite,
            target,
            simulator,
            layout.transcripts,
            layout.root,
            concurrency=executor.slots,
            retry_statuses=frozenset(run.get("retry_statuses") or ()),
            on_done=tick,
            dispatch=executor.dispatch,
            on_stored=grading.add if grading else None,
            **options,
        )

        def go() -> list[Transcript]:
            return asyncio.run(grading.around(engine.run()) if grading else engine.run())

        transcripts = _metered(run.get("meter"), layout, go)
        report = executor.report()
    again = retry_summary(transcripts, engine.retry_statuses)
    return InferResult(transcripts, engine.stop_reason, report, dict(engine.writes), again)


def _metered(
    section: dict[str, Any] | None, layout: Layout, go: Callable[[], list[Transcript]]
) -> list[Transcript]:
    """Inference between two billing-meter snapshots (run.meter), the delta added to
    data/meter.json: a resumed run's legs add up."""
    if not section:
        return go()
    from dataclasses import asdict

    from agenteval.llm.billing import metered, open_meter
    from agenteval.scorecard import METER_FILE

    meter = open_meter(section)
    transcripts: list[Transcript]
    transcripts, reading = metered(meter, go, float(section.get("lag_s", 90)))
    path = layout.transcripts.parent / METER_FILE
    legs = list(read_json(path)) if path.is_file() else []
    write_json(path, [*legs, asdict(reading) | {"usd": reading.usd}])
    return transcripts


def overlaps_judging(params: dict[str, Any]) -> bool:
    """Whether `agenteval run` judges during inference (a judge that calls no endpoint)."""
    from agenteval.judges.base import OVERLAPS_INFERENCE

    return str((params.get("judge") or {}).get("kind", "code")) in OVERLAPS_INFERENCE


def _stream_judging(
    params: dict[str, Any],
    layout: Layout,
    suite: Suite,
    graded: Callable[[Verdict], None] | None,
) -> StreamJudging:
    """This run's judge, with its judge.controls_per_run controls, ready to run alongside."""
    from agenteval.controls.inrun import mix

    controls = mix(params, layout.root, layout.controls)
    judge = make_judge(params, layout.root)
    concurrency = int(params["run"].get("concurrency", 4))
    return StreamJudging(suite, layout.verdicts, judge, concurrency=concurrency, extra=controls,
                         on_fresh=graded)  # fmt: skip


def step_judge(
    params: dict[str, Any],
    layout: Layout,
    progress: bool = False,
    graded: Callable[[Verdict], None] | None = None,
) -> int:
    """Grade the stored transcripts, with judge.controls_per_run labelled controls mixed in;
    `graded` hears of each new verdict of a transcript once written."""
    install_scrubber(params)
    suite = load_suite(layout)
    judge = make_judge(params, layout.root)
    from agenteval.controls.inrun import mix

    controls = mix(params, layout.root, layout.controls)
    total = len(suite.items) * suite.iterations + len(controls)
    with progress_bar("judge", total, progress) as tick, _quota_stops_judging():
        verdicts = asyncio.run(
            run_judging(
                suite,
                layout.transcripts,
                layout.verdicts,
                judge,
                concurrency=int(params["run"].get("concurrency", 4)),
                on_done=tick,
                extra=controls,
                on_fresh=graded,
                root=layout.root,
            )
        )
    return len(verdicts)


def step_score(params: dict[str, Any], layout: Layout) -> Scorecard:
    card = build_scorecard(
        load_suite(layout), layout.transcripts, layout.verdicts, params, layout.controls
    )
    write_json(layout.scorecard, card)
    write_json(layout.metrics, metrics_of(card))
    return card


def step_stats(params: dict[str, Any], layout: Layout) -> dict[str, Any]:
    """Every headline number with its uncertainty -> reports/noise.json."""
    from agenteval.uncertainty import noise_report

    section = params["stats"]
    card = Scorecard.model_validate(read_json(layout.scorecard))
    report = noise_report(
        card,
        conf=float(section.get("conf", 0.95)),
        tau=float(section.get("stability_tau", 0.2)),
        resamples=int(section.get("bootstrap_resamples", 2000)),
        seed=int(section.get("seed", 0)),
    )
    write_json(layout.reports / "noise.json", report)
    return report


def step_report(layout: Layout) -> None:
    from agenteval.report import write_report

    write_report(Scorecard.model_validate(read_json(layout.scorecard)), layout.reports)


@contextmanager
def _quota_stops_judging() -> Iterator[None]:
    """A judge out of quota stops judging; finished verdicts stay and a rerun resumes."""
    try:
        yield
    except Exception as exc:
        from agenteval.engine import is_quota
        from agenteval.judging import JudgingStopped

        if is_quota(exc):
            raise JudgingStopped(f"judge quota or credential failure: {exc}") from exc
        raise


@dataclass
class RunResult:
    scorecard: Scorecard
    stop_reason: str | None
    execution: ExecutionReport | None = None
    retry: str | None = None  # what `agenteval run --resume` would send again


def run_all(params: dict[str, Any], layout: Layout, progress: bool = False) -> Scorecard:
    """The whole evaluation, returning its scorecard (see `run_evaluation` for early stops)."""
    return run_evaluation(params, layout, progress).scorecard


def run_evaluation(
    params: dict[str, Any],
    layout: Layout,
    progress: bool = False,
    *,
    graded: Callable[[Verdict], None] | None = None,
    judged: Callable[[], None] | None = None,
    scored: Callable[[], None] | None = None,
) -> RunResult:
    """The whole evaluation; a stopped inference is still judged and reported as it stands.

    `graded` is called with each new verdict once its file is written, `judged` once the
    transcripts and verdicts are final, `scored` once the scorecard is written (tracking
    can write traces while the agent runs, and the rest while the intervals and reports
    are computed)."""
    from agenteval.controls.inrun import check

    check(params, layout.root)  # mixed-in controls' files, before the agent runs
    check_agent_files(params, layout.root)  # the agent's own files, before any work
    step_suite(params, layout)
    overlapped = overlaps_judging(params)
    inferred = step_infer(params, layout, progress, judge_too=overlapped, graded=graded)
    if not overlapped:
        step_judge(params, layout, progress, graded)
    if judged is not None:
        judged()
    card = step_score(params, layout)
    if scored is not None:
        scored()
    step_stats(params, layout)
    step_report(layout)
    return RunResult(card, inferred.stop_reason, inferred.execution, inferred.retry)
