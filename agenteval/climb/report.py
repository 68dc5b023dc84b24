"""reports/climb.json and the deltas-per-round plot (DVC plots JSON and a PNG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import write_json

CLIMB_JSON = "reports/climb.json"
PLOT_JSON = "reports/climb/deltas.json"
PLOT_PNG = "reports/climb/deltas.png"


def plot_rows(rounds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per round and split asked: the paired gain and its one-sided lower bound."""
    rows = []
    for record in rounds:
        train = record.get("train")
        if train:
            rows.append(
                {
                    "round": record["round"],
                    "split": "train",
                    "gain": train["mean"],
                    "low": train["low"],
                    "outcome": record["outcome"],
                }
            )
        held = record.get("held")
        if held:
            rows.append(
                {
                    "round": record["round"],
                    "split": "held",
                    "gain": held["delta"]["mean"],
                    "low": held["delta"]["low"],
                    "outcome": record["outcome"],
                }
            )
    return rows


def write_reports(root: Path, summary: dict[str, Any]) -> list[str]:
    """Write climb.json and the plot; returns the paths written (relative to root)."""
    write_json(root / CLIMB_JSON, summary)
    rows = plot_rows(summary["rounds"])
    write_json(root / PLOT_JSON, rows)
    _png(rows, root / PLOT_PNG)
    return [CLIMB_JSON, PLOT_JSON, PLOT_PNG]


def _png(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 3.6))
    for split, colour in (("train", "tab:blue"), ("held", "tab:orange")):
        mine = [r for r in rows if r["split"] == split]
        if not mine:
            continue
        xs = [r["round"] for r in mine]
        ax.scatter(xs, [r["gain"] for r in mine], color=colour, label=f"{split} gain", zorder=3)
        ax.vlines(xs, [r["low"] for r in mine], [r["gain"] for r in mine], color=colour, alpha=0.5)
        kept = [r for r in mine if r["outcome"] == "kept"]
        ax.scatter(
            [r["round"] for r in kept],
            [r["gain"] for r in kept],
            s=140,
            facecolors="none",
            edgecolors="green",
            zorder=4,
        )
    ax.axhline(0, color="grey", linewidth=0.8)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
    ax.set_xlabel("round (circled: kept)")
    ax.set_ylabel("paired gain in pass share (line: lower bound)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
