"""`agenteval tasks ...`: coding tasks graded by what the finished project does.

run, validate, judge, gate, propose, report, controls, gateway and swebench. Thin:
agenteval.benchmarks.tasks does the work. Exit codes: 0 done (or the gate holds, or nothing
to gate yet); 1 the gate or the judge controls fail, a secret survived scrubbing, or the
machine lacks the tasks' toolchain (SETUP_ERROR, the tool named); 2 invalid input or a
harness that cannot run here (refused before any work); 3 stopped early and resumable, or
expectations for another model, suite or judge (not comparable).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.common import (
    EXIT_FAILED,
    EXIT_INVALID,
    EXIT_STOPPED,
    fail,
    load_params,
    say_coverage,
    writable_folder,
)

EXIT_GATE_FAILED = 1
EXIT_NOT_COMPARABLE = 3
DEFAULT_PARAMS = Path("pipelines/tasks/params.yaml")
RUN_PARAMS = "params.yaml"  # the effective params, kept in every run folder

app = typer.Typer(help="Coding tasks in a fresh copy of a project, graded by what it does.")
SetOption = Annotated[list[str] | None, typer.Option("--set", help="Override: key=value.")]
ParamsOption = Annotated[Path, typer.Option("--params", help="params file")]


def _out(out: Path | None) -> Path:
    return out or Path("runs") / f"tasks-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}"


def _problems(exc: Exception) -> list[str]:
    return [str(p) for p in getattr(exc, "problems", [])] or [str(exc)]


def _options(
    suite: str | None,
    harness: str | None,
    model: str | None,
    tasks: str | None,
    repeats: int | None,
    run_timeout: float | None,
    gateway_url: str | None = None,
) -> dict[str, tuple[str, Any]]:
    """The options as typed params values ({key: (option, value)}), never pasted as text."""
    options: dict[str, tuple[str, Any]] = {}
    for key, option, value in (
        ("tasks.suite", "--suite", suite),
        ("tasks.harness", "--harness", harness),
        ("target.model", "--model", model),
        ("tasks.repeats", "--repeats", repeats),
        ("tasks.run_timeout_s", "--run-timeout", run_timeout),
        ("tasks.gateway_url", "--gateway-url", gateway_url),
    ):
        if value is not None:
            options[key] = (option, value)
    if tasks:
        options["tasks.ids"] = ("--tasks", [t.strip() for t in tasks.split(",") if t.strip()])
    return options


@app.command()
def run(
    suite: Annotated[
        str | None,
        typer.Option(help="core | adversarial | full | everyday | swebench | therock"),
    ] = None,
    harness: Annotated[str | None, typer.Option(help="scripted | chat | claude-code")] = None,
    model: Annotated[str | None, typer.Option(help="The model under test (target.model).")] = None,
    tasks: Annotated[str | None, typer.Option("--tasks", help="Only these ids: a,b.")] = None,
    repeats: Annotated[int | None, typer.Option(help="Runs of the suite (draws).")] = None,
    run_timeout: Annotated[float | None, typer.Option(help="Cap per task, seconds.")] = None,
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default runs/tasks-<time>).")
    ] = None,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Skip judging.")] = False,
    gateway_url: Annotated[
        str | None, typer.Option(help="A running model gateway; else the run starts its own.")
    ] = None,
    instances: Annotated[str | None, typer.Option(help="swebench: instance ids a,b.")] = None,
    therock_url: Annotated[
        str | None, typer.Option(help="therock: where TheRock is cloned from.")
    ] = None,
    no_evaluate: Annotated[
        bool, typer.Option("--no-evaluate", help="swebench: no grading.")
    ] = False,
    set_: SetOption = None,
    params_file: ParamsOption = DEFAULT_PARAMS,
    track: Annotated[bool, typer.Option("--track/--no-track", help="Log to MLflow.")] = True,
) -> None:
    """Run an agent on each task in a fresh copy; write scorecard.json, each attempt's
    record and diffs; then judge (unless --no-judge) and score."""
    options = _options(suite, harness, model, tasks, repeats, run_timeout, gateway_url)
    if therock_url is not None:
        options["tasks.therock_url"] = ("--therock-url", therock_url)
    params = load_params(params_file, list(set_ or []), options)
    params["suite"]["kind"] = "tasks"
    folder = _out(out)
    writable_folder("--out", folder)
    if params["tasks"]["suite"] == "swebench":
        _run_swebench(params, folder, instances, no_evaluate)
        return
    if params["tasks"]["suite"] == "therock":
        _run_therock(params, folder)
        return
    _run_toybox(params, folder, no_judge, track)


def _run_toybox(params: dict[str, Any], folder: Path, no_judge: bool, track: bool) -> None:
    import yaml

    from agenteval.benchmarks.tasks.definitions import TaskFileError
    from agenteval.benchmarks.tasks.harness import HarnessUnavailable
    from agenteval.benchmarks.tasks.sandbox import SandboxUnavailable
    from agenteval.benchmarks.tasks.score import coverage
    from agenteval.benchmarks.tasks.secrets import SecretSurvived
    from agenteval.benchmarks.tasks.steps import preflight, run_tasks
    from agenteval.fileio import write_text
    from agenteval.layout import Layout
    from agenteval.llm import QuotaExhausted

    layout = Layout.run_dir(Path.cwd().resolve(), folder)
    try:
        preflight(params, layout.root)
        write_text(folder / RUN_PARAMS, yaml.safe_dump(params, sort_keys=False))
        card = run_tasks(params, layout, judge=not no_judge)
    except TaskFileError as exc:
        fail(_problems(exc))
    except (HarnessUnavailable, SandboxUnavailable, ValueError) as exc:
        fail([f"refused: {exc}"])
    except SecretSurvived as exc:
        fail([str(exc)], EXIT_GATE_FAILED)
    except QuotaExhausted as exc:
        fail([f"stopped: {exc}", f"resume with: agenteval tasks run --out {folder}"], EXIT_STOPPED)
    for line in _headline(card):
        typer.echo(line)
    typer.echo(f"sandbox: {card.sandbox}")
    typer.echo(f"reports in {folder}/ (scorecard.json, summary.md, data/attempts/)")
    if track:
        _track(params, layout)
    say_coverage(coverage(card.tasks))  # nothing measured: exit 3 with the reason
    _refuse_setup_errors(card)


def _refuse_setup_errors(card: Any) -> None:
    """This machine, not the agent: a task that could not be set up is no score."""
    reasons = sorted({r.reasons[0] for r in card.tasks if r.result == "SETUP_ERROR" and r.reasons})
    if reasons:
        fail(
            ["some tasks were not measured (SETUP_ERROR): this machine, not the agent", *reasons],
            EXIT_FAILED,
        )


def _headline(card: Any) -> list[str]:
    from agenteval.benchmarks.tasks.report import fmt_cost

    lines = []
    for d in card.draws:
        quality = "n/a" if d.quality is None else f"{d.quality:.2f}"
        tokens = "n/a" if d.total_tokens is None else str(d.total_tokens)
        lines.append(
            f"r{d.repeat}: {d.passed}/{d.tasks} passed, {d.verified}/{d.coding} verified, "
            f"{d.misreported} misreported, quality {quality} ({d.unjudged} unjudged), "
            f"{d.unmeasured} unmeasured, {d.steps} steps, tokens {tokens}, "
            f"cost {fmt_cost(d.cost_usd, d.cost_sources)}"
        )
    return lines


def _track(params: dict[str, Any], layout: Any) -> None:
    from agenteval.benchmarks.tasks.secrets import SecretSurvived
    from agenteval.benchmarks.tasks.tracking import log_tasks_run
    from agenteval.tracking.store import TrackingError

    try:
        result = log_tasks_run(params, layout)
    except (TrackingError, SecretSurvived) as exc:
        fail([f"track: {exc}"], EXIT_GATE_FAILED)
    if result is not None:
        typer.echo(f"MLflow: run {result.run_id} ({result.tracking_uri})")


def _run_swebench(
    params: dict[str, Any], folder: Path, instances: str | None, no_evaluate: bool
) -> None:
    import asyncio

    from agenteval.benchmarks.tasks import swebench, swebench_run
    from agenteval.benchmarks.tasks.harness import HarnessUnavailable, make_harness
    from agenteval.benchmarks.tasks.sandbox import SandboxUnavailable
    from agenteval.benchmarks.tasks.sandbox import from_params as sandbox_from_params
    from agenteval.benchmarks.tasks.steps import guard_for

    ids = [i.strip() for i in (instances or "").split(",") if i.strip()] or list(swebench.PILOT)
    cache = Path(params["tasks"].get("work_root") or folder) / "swebench" / "instances"
    try:
        harness = make_harness(params["tasks"]["harness"], params, Path.cwd())
        harness.preflight()
        swebench.preflight(ids, cache, grading=not no_evaluate)
        # The instances (their fix included) and the clones (their history) stay hidden.
        cache.mkdir(parents=True, exist_ok=True)
        sealed = [folder, cache.parent]
        sandbox = sandbox_from_params(params, Path.cwd().resolve(), sealed).check()
    except (HarnessUnavailable, SandboxUnavailable, swebench.SwebenchUnavailable) as exc:
        fail([f"refused: {exc}"])
    except ValueError as exc:
        fail([f"refused: {exc}"])
    found = swebench.load_instances(ids, cache)
    options = {
        "run_timeout_s": float(params["tasks"]["run_timeout_s"]),
        "command_timeout_s": float(params["tasks"]["command_timeout_s"]),
        "max_steps": int(params["tasks"]["max_steps"]),
        "sandbox": sandbox,
    }
    rows = asyncio.run(
        swebench_run.capture(harness, found, folder, cache.parent, guard_for(params), **options)
    )
    typer.echo(f"{len(rows)} prediction(s) in {folder / 'predictions.jsonl'}")
    if not no_evaluate:
        for verdict in swebench_run.grade_predictions(folder, folder.name):
            typer.echo(f"{verdict['instance_id']}: resolved {verdict['resolved']}")


def _run_therock(params: dict[str, Any], folder: Path) -> None:
    import asyncio

    from agenteval.benchmarks.tasks import therock
    from agenteval.benchmarks.tasks.definitions import TaskFileError
    from agenteval.benchmarks.tasks.harness import HarnessUnavailable, make_harness
    from agenteval.benchmarks.tasks.judge import TaskJudge
    from agenteval.benchmarks.tasks.sandbox import SandboxUnavailable
    from agenteval.benchmarks.tasks.sandbox import from_params as sandbox_from_params
    from agenteval.benchmarks.tasks.steps import guard_for

    section = params["tasks"]
    url = section.get("therock_url")
    cache = Path(section.get("work_root") or folder) / "therock-cache"
    try:
        spec = therock.load(Path(therock.DEFAULT_FILE))
        ids = list(section.get("ids") or [])
        unknown = [i for i in ids if i not in {t.id for t in spec.tasks}]
        if unknown:
            raise ValueError(f"tasks.ids: not in suite 'therock': {', '.join(unknown)}")
        chosen = [t for t in spec.tasks if not ids or t.id in ids]
        harness = make_harness(section["harness"], params, Path.cwd())
        harness.preflight()
        judge = TaskJudge(params, Path.cwd())  # a judge that would be refused stops it first
        therock.preflight(url, chosen, cache)
        # The clones (their history) and the run folder (the reference diffs) stay hidden.
        cache.mkdir(parents=True, exist_ok=True)
        sandbox = sandbox_from_params(params, Path.cwd().resolve(), [folder, cache]).check()
    except TaskFileError as exc:
        fail(_problems(exc))
    except (HarnessUnavailable, SandboxUnavailable, therock.TheRockUnavailable) as exc:
        fail([f"refused: {exc}"])
    except ValueError as exc:
        fail([f"refused: {exc}"])
    options = {
        "run_timeout_s": float(section["run_timeout_s"]),
        "command_timeout_s": float(section["command_timeout_s"]),
        "max_steps": int(section["max_steps"]),
        "sandbox": sandbox,
    }
    guard = guard_for(params)
    found = asyncio.run(therock.capture(harness, chosen, str(url), folder, cache, guard,
                                        judge=judge, **options))  # fmt: skip
    for task_id, row in found.items():
        notes = [*row["reasons"], *(f"web use: {w}" for w in row["web_use"])]
        typer.echo(f"{task_id}: {row['result']}{': ' if notes else ''}{'; '.join(notes)}")
    typer.echo(f"records in {folder / 'therock.json'}; diffs in {folder / 'therock'}/")


@app.command()
def validate(
    suite: Annotated[str, typer.Option(help="core | adversarial | full | everyday")] = "full",
    tasks: Annotated[str | None, typer.Option("--tasks", help="Only these ids: a,b.")] = None,
    set_: SetOption = None,
    params_file: ParamsOption = DEFAULT_PARAMS,
) -> None:
    """Grade every coding task's reference solution (must pass) and its untouched project
    (must fail) through the same grader, and read every question's reference answer (must
    establish its points) and wrong answers (each must fail one) by code; exit 2 with
    `tasks.json:line` when one does not."""
    from agenteval.benchmarks.tasks.definitions import TaskFileError
    from agenteval.benchmarks.tasks.sandbox import SandboxUnavailable
    from agenteval.benchmarks.tasks.steps import step_validate

    options = _options(suite, None, None, tasks, None, None)
    params = load_params(params_file, list(set_ or []), options)
    try:
        found = step_validate(params, Path.cwd().resolve())
    except TaskFileError as exc:
        fail(_problems(exc))
    except (SandboxUnavailable, ValueError) as exc:
        fail([f"refused: {exc}"])
    if found:
        fail([str(p) for p in found])
    typer.echo(f"tasks of suite {suite!r}: every reference solution passes, every untouched "
               "project fails, every question's wrong answers fail")  # fmt: skip


@app.command()
def judge(
    run_dir: Annotated[Path, typer.Argument(help="A folder of `agenteval tasks run`.")],
    set_: SetOption = None,
) -> None:
    """Grade a finished run (a task with no usable grade is unjudged, never scored)."""
    from agenteval.benchmarks.tasks.secrets import SecretSurvived
    from agenteval.benchmarks.tasks.steps import step_judge, step_score
    from agenteval.layout import Layout
    from agenteval.llm import QuotaExhausted

    params = load_params(run_dir / RUN_PARAMS, list(set_ or []))
    layout = Layout.run_dir(Path.cwd().resolve(), run_dir)
    try:
        step_judge(params, layout)
        card = step_score(params, layout)
    except (OSError, ValueError) as exc:
        fail([f"cannot judge {run_dir}: {exc}"])
    except SecretSurvived as exc:
        fail([str(exc)], EXIT_GATE_FAILED)
    except QuotaExhausted as exc:
        fail([f"stopped: {exc}", f"resume with: agenteval tasks judge {run_dir}"], EXIT_STOPPED)
    for line in _headline(card):
        typer.echo(line)


@app.command()
def gate(
    run_dir: Annotated[Path, typer.Argument(help="A run folder (or its scorecard.json).")],
    expect: Annotated[Path | None, typer.Option("--expect", help="Expectations file.")] = None,
    enforce: Annotated[bool, typer.Option("--enforce", help="Exit 1 on a miss.")] = False,
    propose: Annotated[Path | None, typer.Option("--propose", help="Write expectations.")] = None,
) -> None:
    """Compare a run with its expectations (eval/tasks/expectations/<model>.<suite>.json)."""
    from agenteval.benchmarks.tasks import gate as gating
    from agenteval.fileio import write_json

    try:
        card = gating.load_scorecard(run_dir)
        path = expect or gating.expectations_path(Path.cwd(), card.model, card.suite)
        if expect is not None and not expect.is_file():
            fail([f"--expect {expect}: no such file"])
        expectations = gating.load_expectations(path) if path.is_file() else None
    except gating.ExpectationsError as exc:
        fail(_problems(exc))
    outcome = gating.check(card, expectations)
    for line in outcome.lines():
        typer.echo(line)
    if propose is not None:
        write_json(propose, gating.propose([(str(run_dir), card)]))
        typer.echo(f"proposed expectations written to {propose}")
    if outcome.status == "not_comparable":
        raise typer.Exit(EXIT_NOT_COMPARABLE)
    if enforce and outcome.status == "fail":
        raise typer.Exit(EXIT_GATE_FAILED)


@app.command("propose")
def propose_command(
    runs: Annotated[list[Path], typer.Argument(help="Run folders; each repeat is one draw.")],
    out: Annotated[Path, typer.Option("--out", help="Expectations file to write.")],
) -> None:
    """Expectations every draw of several runs met (worst floor, costliest ceiling, headroom)."""
    from agenteval.benchmarks.tasks import gate as gating
    from agenteval.fileio import write_json

    try:
        proposal = gating.propose([(str(r), gating.load_scorecard(r)) for r in runs])
    except gating.ExpectationsError as exc:
        fail(_problems(exc))
    write_json(out, proposal)
    typer.echo(
        f"{out}: min_passed {proposal.min_passed}, min_verified {proposal.min_verified}, "
        f"min_quality {proposal.min_quality}, max_misreported {proposal.max_misreported}, "
        f"max_total_tokens {proposal.max_total_tokens}, max_steps {proposal.max_steps}, "
        f"max_wall_seconds {proposal.max_wall_seconds} (from {len(proposal.runs)} draw(s))"
    )


@app.command()
def report(
    runs: Annotated[list[Path], typer.Argument(help="Run folders of any harness and model.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for report.md/.html.")],
) -> None:
    """The harness x model table from finished runs, as markdown and HTML with a chart."""
    from agenteval.benchmarks.tasks import gate as gating
    from agenteval.benchmarks.tasks.report import write_comparison

    try:
        cards = [gating.load_scorecard(r) for r in runs]
    except gating.ExpectationsError as exc:
        fail(_problems(exc))
    for path in write_comparison(cards, out):
        typer.echo(f"wrote {path}")


@app.command()
def controls(
    task: Annotated[
        str, typer.Option("--task", help="The coding task planted.")
    ] = "bugfix-durations",
    set_: SetOption = None,
    params_file: ParamsOption = DEFAULT_PARAMS,
    out: Annotated[Path | None, typer.Option(help="Write controls.json here.")] = None,
) -> None:
    """Check the judge on three planted attempts with known verdicts; exit 1 when it cannot
    score them apart."""
    from agenteval.benchmarks.tasks.controls import run_controls
    from agenteval.benchmarks.tasks.sandbox import SandboxUnavailable
    from agenteval.fileio import write_json
    from agenteval.llm import LLMError

    params = load_params(params_file, list(set_ or []))
    try:
        found = run_controls(params, Path.cwd().resolve(), task)
    except (ValueError, OSError, SandboxUnavailable) as exc:
        fail([f"refused: {exc}"], EXIT_INVALID)
    except LLMError as exc:
        fail([f"the judge's backend failed: {exc}"], EXIT_STOPPED)
    for line in found.lines():
        typer.echo(line)
    if out is not None:
        write_json(out, found.to_json())
    if not found.passed:
        raise typer.Exit(EXIT_GATE_FAILED)


@app.command()
def gateway(
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (1-65535).")],
    ledger: Annotated[
        Path | None, typer.Option(help="Append each call's token counts here (JSON lines).")
    ] = None,
    set_: SetOption = None,
    params_file: ParamsOption = DEFAULT_PARAMS,
) -> None:
    """Run the model gateway in the foreground (for several runs sharing one): agents reach
    target.base_url through it with a dummy key; it holds the key target.api_key_env names."""
    import threading

    from agenteval.benchmarks.tasks.gateway import (
        GatewayConfigError,
        Ledger,
        Upstream,
        running_gateway,
    )

    if not 1 <= port <= 65535:
        fail([f"--port must be between 1 and 65535, got {port}"])
    params = load_params(params_file, list(set_ or []))
    try:
        upstream = Upstream.from_params(params)
    except GatewayConfigError as exc:
        fail([f"refused: {exc}"])
    try:
        with running_gateway(upstream, Ledger(ledger), port) as running:
            typer.echo(f"gateway: {running.url} -> {upstream.root} (Ctrl-C stops it)")
            threading.Event().wait()
    except OSError as exc:
        fail([f"--port {port}: cannot listen on 127.0.0.1 ({exc.strerror or exc})"])
    except KeyboardInterrupt:
        typer.echo("gateway stopped")


@app.command("swebench")
def swebench_grade(
    run_dir: Annotated[Path, typer.Argument(help="A swebench run folder (predictions.jsonl).")],
) -> None:
    """Grade a swebench run's predictions with the official harness, in Docker."""
    from agenteval.benchmarks.tasks import swebench, swebench_run

    if not (run_dir / "predictions.jsonl").is_file():
        fail([f"{run_dir}: no predictions.jsonl"])
    try:
        verdicts = swebench_run.grade_predictions(run_dir, run_dir.name)
    except swebench.SwebenchUnavailable as exc:
        fail([f"refused: {exc}"])
    for verdict in verdicts:
        typer.echo(f"{verdict['instance_id']}: resolved {verdict['resolved']}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="tasks")
