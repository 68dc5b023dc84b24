"""What every stage shares: the repository root, its params, its file layout, and how a
benchmark step's outcome is said (a summary on stdout, a failure on stderr with its status)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

from agenteval import heap, scratch
from agenteval.benchmarks.base import Failure, Outcome, Step
from agenteval.benchmarks.runner import execute
from agenteval.benchmarks.runner import write_tracked as write_tracked  # shared by track stages
from agenteval.layout import Layout
from agenteval.measured import NOTHING_MEASURED_STATUS, Coverage
from agenteval.params import ParamsError, load_params

if TYPE_CHECKING:
    from agenteval.tracking.run import TrackResult

T = TypeVar("T")


def run_stage(main: Callable[[], int]) -> NoReturn:
    """A stage's entry point: the collector settled for a batch process (agenteval.heap),
    then main's return value as the exit status. A params.yaml the typed models refuse is
    its `path:line: key: expected` lines and status 2, before any work (no traceback)."""
    heap.claim()
    heap.settle()
    scratch.end_on_signals()  # SIGTERM unwinds: temporary copies go, outputs stay resumable
    try:
        status = exit_status(main)
        sys.stdout.flush()  # a pipe's reader gone is found here, not at interpreter exit
    except BrokenPipeError:
        scratch.output_closed()
    sys.exit(status)


def exit_status(main: Callable[[], int]) -> int:
    """main's status; a params file the typed models refuse is said, and status 2."""
    try:
        return main()
    except ParamsError as exc:
        print(str(exc), file=sys.stderr)
        return 2


def root() -> Path:
    # DVC runs each stage with the working directory at the repository root of the workspace
    # being reproduced (a temporary copy for `dvc exp run --temp/--queue`). DVC_ROOT names the
    # *original* workspace in those runs, so it is right for the shared MLflow store only.
    return Path.cwd().resolve()


def params() -> dict[str, Any]:
    return load_params(root() / "params.yaml")


def layout() -> Layout:
    return Layout.repository(root())


def run_step(
    stage: str, step: Callable[[], T], summary: Callable[[T], Iterable[str]], *fails: Failure
) -> int:
    """Run `step` and print its summary, each line under the stage's name. A failure listed
    in `fails` goes to stderr, each problem of a file it read on its own line (the error's
    `problems`), else `<stage>: [<label>: ]<error>`, and its status is the stage's: the one
    mapping of agenteval.benchmarks.runner.execute."""

    def run(settings: object, ctx: object, layout: object) -> Outcome:
        return Outcome(tuple(summary(step())))

    return execute(Step(stage, run, fails), None, None, None, f"{stage}: ")  # type: ignore[arg-type]


def measured_step(
    step: Callable[[], T], coverage_of: Callable[[T], Coverage], summary: Callable[[T], list[str]]
) -> tuple[Callable[[], T], Callable[[T], list[str]]]:
    """`step` and its summary for run_step, where a run that measured nothing raises
    NothingMeasured after writing its outputs, and the summary ends with the unmeasured line
    (list Failure(NothingMeasured, 3) among the failures)."""

    def run() -> T:
        results = step()
        coverage_of(results).check()
        return results

    return run, lambda results: [*summary(results), *filter(None, [coverage_of(results).line()])]


def coverage_status(stage: str, coverage: Coverage) -> int:
    """The headline's unmeasured line under the stage's name and status 0, or, when nothing
    was measured, the reason on stderr and status 3 (agenteval.measured)."""
    if coverage.nothing:
        print(f"{stage}: {coverage.refusal()}", file=sys.stderr)
        return NOTHING_MEASURED_STATUS
    if line := coverage.line():
        print(f"{stage}: {line}")
    return 0


def track_step(
    log: Callable[[], TrackResult | None],
    *refusals: type[Exception],
    tracked: tuple[Path, dict[str, Any]] | None = None,
) -> int:
    """A track stage: `log` the run and say where it is; with `tracked` (reports folder,
    params), write its tracked.json. A fault of the store, or one of `refusals`, is one line
    on stderr and status 1 (the results on disk are untouched)."""
    from agenteval.tracking.store import TrackingError

    caught: tuple[type[Exception], ...] = (TrackingError, *refusals)
    try:
        result = log()
    except caught as exc:
        print(f"track: {exc}", file=sys.stderr)
        return 1
    if tracked is not None:
        write_tracked(*tracked, result)
    if result is None:
        print("track: tracking.enabled is false; nothing logged")
    else:
        verb = "logged" if result.created else "already logged as"
        print(f"track: {verb} run {result.run_id} in {result.tracking_uri}")
    return 0


def show_progress() -> bool:
    return sys.stderr.isatty()


# -- benchmark variants (pipelines/<name>/dvc.yaml, run with the repository root as wdir) --
def variant_dir(name: str) -> Path:
    return root() / "pipelines" / name


def variant_params(name: str) -> dict[str, Any]:
    return load_params(variant_dir(name) / "params.yaml")


def variant_layout(name: str) -> Layout:
    """data/ and reports/ of a variant live in its own folder beside its dvc.yaml."""
    folder = variant_dir(name)
    return Layout(root(), folder / "data", folder / "reports")
