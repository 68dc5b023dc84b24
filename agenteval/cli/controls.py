"""`agenteval controls`: measure the configured judge on the labelled controls."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval.cli.common import EXIT_INVALID, fail, load_params

SPLIT_CHOICES = ("dev", "held", "fresh", "all")
PROBES_HELP = (
    "Also re-judge every control under the bias probes: padding, a confident "
    "self-assessment, the ground truth after the reply."
)


app = typer.Typer(help="Measure a judge on labelled controls; import people's reviews.")


@app.callback(invoke_without_command=True)
def controls(
    ctx: typer.Context,
    split: Annotated[
        str, typer.Option(help="dev (tune on it), held (never tuned on), fresh, or all.")
    ] = "held",
    repeats: Annotated[
        int | None, typer.Option(help="Judgings per control (>= 2: self-consistency).")
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(help="Judge only N controls of the split (stable choice, both labels)."),
    ] = None,
    probes: Annotated[
        bool,
        typer.Option(help=PROBES_HELP),
    ] = False,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for controls.json and controls.md.")] = Path(
        "reports"
    ),
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
    track: Annotated[bool, typer.Option(help="Log to MLflow (tracking.enabled).")] = True,
) -> None:
    """Judge every control of a split; report agreement, kappa, AC1, false passes, coverage.

    Exits 2 when the split misses the thresholds in params `controls`. Reviews imported
    with `agenteval controls import` are judged too: agreement with people, beside.
    """
    if ctx.invoked_subcommand is not None:
        return
    if split not in SPLIT_CHOICES:
        fail([f"--split: {split!r} is not one of {', '.join(SPLIT_CHOICES)}"])
    if repeats is not None and repeats < 1:
        fail([f"--repeats: {repeats} must be at least 1"])
    if sample is not None and sample < 1:
        fail([f"--sample: {sample} must be at least 1"])
    params = load_params(params_file, list(set_ or []))
    from agenteval.controls.load import ControlsError
    from agenteval.controls.measure import measure_judge
    from agenteval.controls.report import settled_line, unseen_line

    root = Path.cwd().resolve()
    try:
        measured = measure_judge(
            params, root, out, split=split, repeats=repeats, n=sample, probes=probes
        )
    except ControlsError as exc:
        fail([str(p) for p in exc.problems])
        return
    except (ValueError, OSError, KeyError) as exc:
        fail([f"cannot measure the judge: {type(exc).__name__}: {exc}"])
        return
    report = measured.report
    for name, s in {**report["splits"], "all": report["overall"]}.items():
        agreement = s["agreement"]["value"]
        shown = "n/a" if agreement is None else f"{agreement:.3f}"
        typer.echo(
            f"{name}: {s['controls']} control(s), {s['judged']} judged "
            f"(coverage {s['coverage']}), agreement {shown}, "
            f"false passes {s['false_passes']}, false fails {s['false_fails']}"
        )
        if report["judge"]["kind"] != "code":
            typer.echo(f"{name}: {settled_line(s['code_settled'])}")
    typer.echo(unseen_line(report.get("leave_one_class_out")))
    for name, p in (report.get("probes") or {}).items():
        shift = p["mean_shift"]["value"]
        typer.echo(
            f"probe {name}: mean score shift {shift}, flips {p['flips']} of {p['judged_both']} "
            f"({p['flips_to_pass']} to pass)"
        )
    typer.echo(f"reports: {measured.json_path}, {measured.md_path}")
    if track and (params.get("tracking") or {}).get("enabled", True):
        _track(params, root, report)
    if not report["passed"]:
        for name, misses in report["misses"].items():
            typer.echo(f"{name}: below thresholds: {'; '.join(misses)}", err=True)
        raise typer.Exit(EXIT_INVALID)


def _track(params: dict[str, object], root: Path, report: dict[str, object]) -> None:
    from agenteval.tracking.controls import log_controls
    from agenteval.tracking.store import TrackingError

    try:
        run_id, created = log_controls(report, params, root)
    except TrackingError as exc:
        fail([f"MLflow logging failed: {exc}"], 1)
        return
    typer.echo(f"MLflow: {'logged' if created else 'already logged as'} run {run_id}")


@app.command("import")
def import_reviews(
    experiment: Annotated[
        str | None, typer.Option(help="MLflow experiment (default: tracking.experiment).")
    ] = None,
    run: Annotated[str | None, typer.Option(help="Only the traces of this MLflow run id.")] = None,
    suite: Annotated[
        Path, typer.Option(help="The suite the reviewed runs measured (their scenarios).")
    ] = Path("data/suite.json"),
    out: Annotated[Path | None, typer.Option(help="People controls file.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
) -> None:
    """Turn reviewers' HUMAN feedback on traced turns (MLflow UI or mlflow.log_feedback)
    into labelled people controls, dealt dev / held / fresh by a salted hash."""
    params = load_params(params_file, list(set_ or []))
    if not suite.is_file():
        fail([f"{suite}:1: no suite file (run `dvc repro suite`, or name one with --suite)"])
    from pydantic import ValidationError

    from agenteval.controls.people import (
        PeopleError,
        load_people,
        merge,
        people_file,
        write_people,
    )
    from agenteval.llm.scrub import Scrubber
    from agenteval.schema.suite import Suite
    from agenteval.tracking.feedback import read_reviews
    from agenteval.tracking.store import (
        DEFAULT_EXPERIMENT,
        TrackingError,
        repository_root,
        resolve_tracking_uri,
    )

    try:
        items = Suite.model_validate_json(suite.read_bytes()).items
    except ValidationError as exc:
        fail([f"{suite}:1: not a suite: {exc.errors()[0]['msg']}"])
    section = params.get("tracking") or {}
    root = Path.cwd().resolve()
    uri = resolve_tracking_uri(section.get("uri"), repository_root(root))
    name = experiment or section.get("experiment") or DEFAULT_EXPERIMENT
    target = out or people_file(params, root)
    try:
        stored = [p.control for p in load_people(target)]
        found = read_reviews(uri, name, run, items, Scrubber())
    except PeopleError as exc:
        fail([str(p) for p in exc.problems])
    except TrackingError as exc:
        fail([f"MLflow: {exc}"], 1)
    merged = merge(stored, found.controls)
    write_people(target, merged)
    for line in found.skipped:
        typer.echo(f"left out: {line}")
    typer.echo(
        f"{found.reviews} human review(s): {len(found.controls)} control(s) imported, "
        f"{len(found.skipped)} trace(s) left out; {len(merged)} in {target}"
    )


@app.command("pairwise")
def pairwise_controls(
    split: Annotated[str, typer.Option(help="dev, held, fresh or all.")] = "held",
    sample: Annotated[int | None, typer.Option(help="Judge only the first N pairs.")] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for pairwise_controls.json.")] = Path("reports"),
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
) -> None:
    """The judge endpoint as a pairwise judge on pass/fail pairs of controls: its position
    bias, and its right and wrong picks in one order beside the two-order rule's."""
    if split not in SPLIT_CHOICES:
        fail([f"--split: {split!r} is not one of {', '.join(SPLIT_CHOICES)}"])
    params = load_params(params_file, list(set_ or []))
    if not (params.get("judge") or {}).get("base_url"):
        fail(["judge.base_url: a pairwise judge asks a model endpoint; name one"])
    from agenteval.controls.load import ControlsError
    from agenteval.controls.pairs import measure_pairwise
    from agenteval.fileio import write_json

    try:
        report = measure_pairwise(params, Path.cwd().resolve(), split, sample)
    except ControlsError as exc:
        fail([str(p) for p in exc.problems])
    except (ValueError, OSError) as exc:
        fail([f"cannot measure the pairwise judge: {exc}"])
    write_json(out / "pairwise_controls.json", report)
    bias, two, one = report["position_bias"], report["two_orders"], report["one_order"]
    typer.echo(
        f"{report['pairs']} pair(s), {report['unmeasured']} unmeasured; first-shown reply "
        f"chosen {bias['first_rate']} [{bias['first_rate_low']}, {bias['first_rate_high']}]"
    )
    typer.echo(f"one order: right {one['right']['count']}, wrong {one['wrong']['count']}; "
               f"both orders: right {two['right']['count']}, wrong {two['wrong']['count']}, "
               f"ties {two['tie']['count']}")  # fmt: skip
    typer.echo(f"report: {out / 'pairwise_controls.json'}")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="controls")
