"""`agenteval judge align`: rubric edits for the LLM judge, kept by the climb's rule on controls."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agenteval.cli.common import fail, load_params

app = typer.Typer(help="The judge: align its prompt on the labelled controls.")


@app.command("align")
def align(
    proposer: Annotated[str, typer.Option(help="search (offline catalogue) | llm (climb.llm).")] = (
        "search"
    ),
    rounds: Annotated[int, typer.Option(help="Most edits tried.")] = 5,
    edit: Annotated[
        list[str] | None,
        typer.Option(help="search: try these rule sentences instead of the catalogue."),
    ] = None,
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="Override a params.yaml value: key=value.")
    ] = None,
    out: Annotated[Path, typer.Option(help="Folder for align.json and the aligned prompt.")] = (
        Path("reports/align")
    ),
    params_file: Annotated[Path, typer.Option("--params")] = Path("params.yaml"),
    track: Annotated[bool, typer.Option(help="A parent MLflow run, a child per round.")] = True,
    mlflow_align: Annotated[
        str,
        typer.Option(
            help="MLflow's own judge.align() (SIMBA) side by side: auto (when this "
            "MLflow and dspy can), on (required), off."
        ),
    ] = "auto",
    mlflow_steps: Annotated[int, typer.Option(help="SIMBA's max_steps.")] = 4,
    mlflow_candidates: Annotated[int, typer.Option(help="SIMBA's num_candidates.")] = 4,
) -> None:
    """Propose rules for the LLM judge's prompt; keep one only when dev agreement improves
    beyond noise, held stays non-inferior through Thresholdout with 0 false passes; read
    fresh once at the end. The aligned prompt is written to --out, never over eval/prompts."""
    if proposer not in ("search", "llm"):
        fail([f"--proposer: {proposer!r} is not search or llm"])
    if rounds < 1:
        fail([f"--rounds: {rounds} must be at least 1"])
    _check_mlflow_options(mlflow_align, mlflow_steps, mlflow_candidates)
    params = load_params(params_file, list(set_ or []))
    if params["judge"]["kind"] not in ("llm", "hybrid"):
        fail([f"judge.kind: {params['judge']['kind']!r} has no prompt to align (llm or hybrid)"])
    from agenteval.climb import mlflow_align as side
    from agenteval.climb.align import (
        CATALOGUE,
        llm_proposer,
        load_controls,
        run_align,
        search_proposer,
    )
    from agenteval.controls.load import ControlsError
    from agenteval.controls.people import PeopleError
    from agenteval.fileio import write_json, write_text

    root = Path.cwd().resolve()
    chosen = search_proposer(tuple(edit or CATALOGUE))
    if proposer == "llm":
        chosen = llm_proposer(params, root)
    # asked for where it cannot run: refused before any work, then once the dev split is known
    _refuse_mlflow_align(mlflow_align, side.unavailable(params, side.MIN_TRACES))
    try:
        controls = load_controls(params, root)
    except (ControlsError, PeopleError) as exc:
        fail([str(p) for p in exc.problems])
    _refuse_mlflow_align(mlflow_align, side.unavailable(params, controls.count("dev")))
    tracker = _tracker(params, root, proposer) if track else None
    report = run_align(params, root, chosen, rounds, typer.echo, tracker, None, controls)
    report["mlflow_align"] = {"ran": False, "why": "--mlflow-align off"}
    if mlflow_align != "off":
        report["mlflow_align"] = side.side_by_side(params, root, controls, report["end"],
                                                   mlflow_steps, mlflow_candidates,
                                                   typer.echo)  # fmt: skip
    write_json(out / "align.json", {k: v for k, v in report.items() if k != "prompt"})
    write_text(out / "judge_turn.md", report["prompt"])
    if tracker is not None:
        tracker.log_side_by_side(report["mlflow_align"])
        tracker.finish({"figures": {"held": report["end"]}, "kept": len(report["kept"])},
                       [out / "align.json", out / "judge_turn.md"])  # fmt: skip
    for line in summary_lines(report, out):
        typer.echo(line)
    if mlflow_align == "on" and not report["mlflow_align"]["ran"]:
        raise typer.Exit(3)  # asked for and unmeasured: never a quiet success


def summary_lines(report: dict[str, Any], out: Path) -> list[str]:
    end, fresh = report["end"], report["fresh"]
    lines = [f"kept {len(report['kept'])} rule(s); held agreement {report['start']['held']} "
             f"-> {end['held']}, held false passes {end['held_false_passes']}"]  # fmt: skip
    if fresh is not None:
        lines.append(f"fresh (read {fresh['reads']} time(s)): agreement {fresh['agreement']}, "
                     f"false passes {fresh['false_passes']}")  # fmt: skip
    lines += side_by_side_lines(report["mlflow_align"])
    lines.append(f"aligned prompt: {out / 'judge_turn.md'} (adopt by copying it to eval/prompts)")
    return lines


def _check_mlflow_options(asked: str, steps: int, candidates: int) -> None:
    if asked not in ("auto", "on", "off"):
        fail([f"--mlflow-align: {asked!r} is not auto, on or off"])
    if min(steps, candidates) < 1:
        fail(["--mlflow-steps, --mlflow-candidates: each must be at least 1"])


def _refuse_mlflow_align(asked: str, why: str | None) -> None:
    if asked == "on" and why is not None:
        fail([f"--mlflow-align on: {why}"])


def side_by_side_lines(found: dict[str, Any]) -> list[str]:
    """The held figures of MLflow's aligned judge beside agenteval's, one line each."""
    if not found["ran"]:
        return [f"MLflow judge.align(): not measured: {found['why']}"]
    lines = [f"MLflow judge.align(): {found['why']}; held agreement (false passes):"]
    for name in ("mlflow_before", "mlflow_aligned", "agenteval_aligned"):
        held = found[name]["held"]
        lines.append(f"  {name}: {held['agreement']} ({held['false_passes']})")
    return lines


def _tracker(params: dict[str, Any], root: Path, proposer: str) -> Any:
    from agenteval.tracking.climb import ClimbTracker

    tracker = ClimbTracker(params, root)
    tracker.start("judge-align", {"proposer": proposer}, {"agenteval.kind": "judge-align"})
    return tracker


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="judge")
