"""`agenteval simulator controls`: the simulated user's checks measured on labelled messages."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from agenteval.cli.common import EXIT_INVALID, fail

app = typer.Typer(help="The simulated user: its checks measured on labelled messages.")


@app.command("controls")
def simulator_controls(
    folder: Annotated[Path, typer.Option(help="Folder of labelled messages (*.yaml).")] = Path(
        "eval/simulator_controls"
    ),
    out: Annotated[Path, typer.Option(help="Folder for simulator_controls.json.")] = Path(
        "reports"
    ),
) -> None:
    """Run the simulator checks on every labelled message; agreement per split, missed
    faults and false flags. Exits 2 when a bad message on held gets through."""
    from agenteval.controls.load import ControlsError
    from agenteval.controls.simulator import (
        check_controls,
        load_simulator_controls,
        simulator_report,
    )
    from agenteval.fileio import write_json

    root = Path.cwd().resolve()
    try:
        controls = load_simulator_controls(folder, root)
    except ControlsError as exc:
        fail([str(p) for p in exc.problems])
    report = simulator_report(check_controls(controls))
    write_json(out / "simulator_controls.json", report)
    for name, s in {**report["splits"], "all": report["overall"]}.items():
        a = s["agreement"]
        typer.echo(f"{name}: {s['controls']} message(s), agreement {a['value']} "
                   f"[{a['low']}, {a['high']}], missed faults {len(s['missed_faults'])}, "
                   f"false flags {len(s['false_flags'])}")  # fmt: skip
    typer.echo(f"report: {out / 'simulator_controls.json'}")
    if not report["passed"]:
        missed = ", ".join(report["splits"]["held"]["missed_faults"])
        typer.echo(f"held: bad message(s) the checks let through: {missed}", err=True)
        raise typer.Exit(EXIT_INVALID)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="simulator")
