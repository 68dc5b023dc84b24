"""The scenario lifecycle: `agenteval health`, `agenteval draft`, `agenteval promote`.

Exit codes: 0 done · 1 `promote` refused by its replay (not passable, or saturated) · 2 bad
input (unreadable runs, logs or drafts; a draft that would leak; an incomplete draft) · 3 not
comparable (`health` over runs of different instruments) or a replay stopped early (quota).
The library is agenteval.health.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.common import EXIT_INVALID, EXIT_STOPPED, fail, load_params

EXIT_REFUSED = 1
EXIT_NOT_COMPARABLE = 3
SHOWN_MOVES = 10  # the rest are in health.md

SetOption = Annotated[
    list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
]
ParamsOption = Annotated[Path, typer.Option("--params")]


def health(
    runs: Annotated[list[str], typer.Argument(help="Main model's runs (dirs, scorecards, ids).")],
    strong: Annotated[
        list[str] | None, typer.Option("--strong", help="Runs of a stronger model.")
    ] = None,
    weak: Annotated[
        list[str] | None, typer.Option("--weak", help="Runs of a weaker model.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for health.md and health.json.")] = Path(
        "reports"
    ),
    tiers: Annotated[Path, typer.Option(help="Tiers file (proposed moves).")] = Path(
        "eval/tiers.yaml"
    ),
    scenarios: Annotated[Path, typer.Option(help="Suite whose `source` fields are counted.")] = (
        Path("eval/scenarios")
    ),
    allow_instrument_drift: Annotated[
        bool, typer.Option(help="Pool runs whose judge, simulator or corpus differ (warned).")
    ] = False,
    track: Annotated[bool, typer.Option(help="Log the report to MLflow (tracking.*).")] = True,
    set_: SetOption = None,
    params_file: ParamsOption = Path("params.yaml"),
) -> None:
    """Saturated, always-fail, inverted and flaky scenarios; headroom per category; MDE."""
    from agenteval.gate.runs import InputError
    from agenteval.health.classify import HealthRules
    from agenteval.health.history import NotComparable, load_history
    from agenteval.health.report import build_report, write_health

    params = load_params(params_file, list(set_ or []))
    stats = params["stats"]
    rules = HealthRules(tau=float(stats["stability_tau"]), conf=float(stats["conf"]))
    try:
        history = load_history(runs, strong or [], weak or [], allow_instrument_drift)
    except InputError as exc:
        fail([str(exc)])
    except NotComparable as exc:
        fail([f"not comparable: {exc}"], EXIT_NOT_COMPARABLE)
    root = Path.cwd().resolve()
    report = build_report(history, rules, _tier_of(tiers), _sources(scenarios, root))
    json_path, md_path = write_health(report, out)
    _print_health(report, md_path)
    if track:
        _track_health(params, root, report, [json_path, md_path])


def _tier_of(path: Path) -> dict[str, str] | None:
    from agenteval.suite.tiers import load_tiers

    if not path.is_file():
        return None
    tiers, problems = load_tiers(path)
    if tiers is None:
        fail([str(p) for p in problems])
    return dict(tiers.tier)


def _sources(folder: Path, root: Path) -> list[str | None]:
    from agenteval.suite.validate import validate

    if not folder.exists():
        return []
    result = validate([folder], root=root)
    return [item.scenario.source for item in result.scenarios]


def _print_health(report: dict[str, Any], md_path: Path) -> None:
    counts = report["counts"]
    typer.echo(
        f"{counts['scenarios']} scenario(s): {counts['always_fail']} always-fail, "
        f"{counts['inverted']} inverted, {counts['flaky']} flaky, {counts['saturated']} saturated"
    )
    for name, row in report["categories"].items():
        rate = row["judged_pass_rate"].get("value")
        typer.echo(f"  headroom {name}: {row['headroom']} (strongest pass rate {rate})")
    moves = report["tier_moves"]
    for move in moves[:SHOWN_MOVES]:
        typer.echo(f"  propose {move['id']}: {move['from']} -> {move['to']} ({move['reason']})")
    if len(moves) > SHOWN_MOVES:
        typer.echo(f"  ... {len(moves) - SHOWN_MOVES} more proposed move(s) in {md_path}")
    for warning in report["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(f"report: {md_path} (tier moves are proposals: edit eval/tiers.yaml to apply)")


def _track_health(
    params: dict[str, Any], root: Path, report: dict[str, Any], files: list[Path]
) -> None:
    from agenteval.fileio import digest_of
    from agenteval.tracking.reports import log_report
    from agenteval.tracking.store import TrackingError

    metrics = {f"health.{k}": float(v) for k, v in report["counts"].items()}
    if report["sources"]["share"] is not None:
        metrics["health.source_session_or_issue_share"] = float(report["sources"]["share"])
    for name, row in report["categories"].items():
        if row["headroom"] is not None:
            metrics[f"health.category.{name}.headroom"] = float(row["headroom"])
    mde = report["mde"]["judged_pass_rate"].get("mde")
    if mde is not None:
        metrics["health.mde.judged_pass_rate"] = float(mde)
    try:
        logged = log_report(
            params, root, kind="health", key=digest_of(report), metrics=metrics, files=files
        )
    except TrackingError as exc:
        fail([f"MLflow logging failed: {exc}"], 1)
    if logged is not None:
        verb = "logged" if logged.created else "already logged as"
        typer.echo(f"MLflow: {verb} run {logged.run_id} ({logged.tracking_uri})")


def draft(
    from_transcript: Annotated[
        Path | None, typer.Option(help="An agenteval transcript JSON file.")
    ] = None,
    from_mlflow_trace: Annotated[
        str | None, typer.Option(help="An MLflow trace id (its whole session is read).")
    ] = None,
    from_chat_log: Annotated[
        Path | None, typer.Option(help="OpenAI-style chat messages, one JSON object a line.")
    ] = None,
    from_issue: Annotated[
        str | None,
        typer.Option(
            help="An issue number, read with `gh issue view` (the offline stub or GitHub's "
            "CLI), or an issue JSON file (`gh issue view N --json ...` output)."
        ),
    ] = None,
    gh: Annotated[str, typer.Option(help="The gh executable for --from-issue N.")] = "gh",
    repo: Annotated[str | None, typer.Option(help="OWNER/NAME for --from-issue N.")] = None,
    out: Annotated[Path, typer.Option(help="Drafts folder.")] = Path("eval/scenarios/drafts"),
    scenario_id: Annotated[str | None, typer.Option("--id", help="Draft id (snake_case).")] = None,
    category: Annotated[str, typer.Option(help="Category of the draft.")] = "real_world",
    persona: Annotated[str, typer.Option(help="Persona of the simulated user.")] = "casual_user",
    force: Annotated[bool, typer.Option(help="Replace a draft of the same id.")] = False,
    set_: SetOption = None,
    params_file: ParamsOption = Path("params.yaml"),
) -> None:
    """Draft a scenario from a real session, scrubbed of secrets, personal data and paths."""
    from agenteval.health.capture import CaptureError
    from agenteval.health.draft import DraftError, build_draft, render_draft, write_draft
    from agenteval.health.redact import DraftScrubber
    from agenteval.suite.validate import SNAKE_CASE

    sources = (from_transcript, from_mlflow_trace, from_chat_log, from_issue)
    if len([x for x in sources if x is not None]) != 1:
        fail(["give exactly one of --from-transcript, --from-mlflow-trace, --from-chat-log, "
              "--from-issue"])  # fmt: skip
    if scenario_id is not None and not SNAKE_CASE.match(scenario_id):
        fail([f"--id {scenario_id!r} is not snake_case"])
    root = Path.cwd().resolve()
    try:
        if from_issue is not None:
            captured = _issue(from_issue, gh, repo)
        else:
            captured = _capture(
                from_transcript, from_mlflow_trace, from_chat_log, set_, params_file
            )
    except CaptureError as exc:
        fail([str(p) for p in exc.problems])
    scrubber = DraftScrubber(root)
    try:
        scenario, turns = build_draft(
            captured,
            scrubber,
            taken_ids=_taken_ids(root, out),
            category=category,
            persona=persona,
            scenario_id=scenario_id,
        )
        path = write_draft(
            render_draft(scenario, turns), scrubber, out / f"{scenario['id']}.yaml", overwrite=force
        )
    except DraftError as exc:
        fail([str(exc)])
    typer.echo(f"draft: {path} ({len(turns)} turn(s); never run until promoted)")
    typer.echo(
        "next: fill each turn's ground_truth and the difficulty_rationale, then "
        f"`agenteval promote {path}`"
    )


def _capture(
    transcript: Path | None,
    trace: str | None,
    chat_log: Path | None,
    sets: list[str] | None,
    params_file: Path,
) -> Any:
    from agenteval.health import capture

    if transcript is not None:
        return capture.from_transcript(transcript)
    if chat_log is not None:
        return capture.from_chat_log(chat_log)
    from agenteval.tracking.store import repository_root, resolve_tracking_uri

    params = load_params(params_file, list(sets or []))
    uri = resolve_tracking_uri(params["tracking"].get("uri"), repository_root(Path.cwd()))
    return capture.from_mlflow_trace(str(trace), uri)


def _issue(value: str, gh: str, repo: str | None) -> Any:
    """--from-issue: a number goes through `gh`; anything else names an issue JSON file."""
    from agenteval.health import capture

    if value.lstrip("#").isdigit():
        return capture.from_issue(int(value.lstrip("#")), gh, repo)
    return capture.from_issue_json(Path(value))


def _taken_ids(root: Path, drafts: Path) -> set[str]:
    from agenteval.suite.validate import DEFAULT_SCENARIOS, validate

    folders = [p for p in (root / DEFAULT_SCENARIOS, drafts) if p.is_dir()]
    result = validate(folders, root=root) if folders else None
    taken = {item.scenario.id for item in result.scenarios} if result else set()
    return taken | ({p.stem for p in drafts.glob("*.yaml")} if drafts.is_dir() else set())


def promote(
    draft_file: Annotated[Path, typer.Argument(help="The reviewed draft.")],
    iterations: Annotated[int, typer.Option(min=1, help="Replays per configuration.")] = 3,
    weak_set: Annotated[
        list[str] | None,
        typer.Option("--weak-set", help="Also replay with this override (a weaker agent)."),
    ] = None,
    dest: Annotated[
        Path | None, typer.Option(help="Where it goes (default eval/scenarios/<category>/).")
    ] = None,
    dry_run: Annotated[bool, typer.Option(help="Check and replay; do not move it.")] = False,
    out: Annotated[Path | None, typer.Option(help="Replay run folder.")] = None,
    set_: SetOption = None,
    params_file: ParamsOption = Path("params.yaml"),
) -> None:
    """Adopt a draft: complete, valid, passable by the configured agent and not saturated."""
    from agenteval.health.promote import DraftInvalid
    from agenteval.health.promote import promote as run_promotion
    from agenteval.judging import JudgingStopped
    from agenteval.suite.build import SuiteError

    params = load_params(params_file, list(set_ or []))
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = out or Path("runs") / f"promote-{draft_file.stem}-{stamp}"
    root = Path.cwd().resolve()
    try:
        promotion = run_promotion(
            draft_file, params, root, out, iterations=iterations,
            weak_sets=list(weak_set or []), dest=dest, dry_run=dry_run,
        )  # fmt: skip
    except DraftInvalid as exc:
        fail([str(p) for p in exc.problems] + ["not promoted: fill the gaps above"])
    except SuiteError as exc:
        fail([str(p) for p in exc.problems])
    except JudgingStopped as exc:
        fail([str(exc)], EXIT_STOPPED)
    except (FileExistsError, ValueError, OSError, KeyError) as exc:
        fail([f"cannot promote: {type(exc).__name__}: {exc}"], EXIT_INVALID)
    for replay in promotion.replays:
        typer.echo(
            f"replay {replay.label}: {replay.k}/{replay.n} judged iteration(s) passed "
            f"({', '.join(replay.statuses)}) in {replay.run_dir}"
        )
    if not promotion.ok:
        fail([f"not promoted: {reason}" for reason in promotion.reasons], EXIT_REFUSED)
    if promotion.destination is None:
        typer.echo(f"{promotion.scenario_id}: promotable (dry run, not moved)")
        return
    typer.echo(f"promoted: {promotion.destination}")
    typer.echo("assign it a tier in eval/tiers.yaml (it runs in 'full' until then)")


def register(app: typer.Typer) -> None:
    app.command()(health)
    app.command()(draft)
    app.command()(promote)
