"""A tasks run's summary.md, and the harness x model table from several runs.

Every cost is shown with its source, and a run that counted no tokens reads n/a, never
$0.00: `api_equivalent` cells are labelled as list prices, not money spent. The comparison
is written as markdown and as HTML with an SVG chart of pass rates (matplotlib).
"""

from __future__ import annotations

import html
import statistics
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from agenteval.fileio import write_text
from agenteval.schema.task_results import Draw, TaskScorecard
from agenteval.stamps import span_line

SOURCE_LABELS = {
    "metered": "metered",
    "api_equivalent": "API-equivalent list price",
    "harness_counts": "harness counts x rate card",
}


def fmt_cost(usd: float | None, sources: Sequence[str]) -> str:
    if usd is None:
        return "n/a"
    label = ", ".join(SOURCE_LABELS.get(s, s) for s in sources) or "unknown source"
    return f"${usd:.4f} ({label})"


def _fmt(value: object, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _draw_line(d: Draw) -> str:
    interval = d.pass_rate_interval
    rate = "n/a" if d.pass_rate is None else f"{d.pass_rate:.2f}"
    if interval:
        rate += f" [{interval[0]:.2f}, {interval[1]:.2f}]"
    return (
        f"| r{d.repeat} | {d.passed}/{d.tasks} | {rate} | {d.verified}/{d.coding} | "
        f"{d.misreported} | {_fmt(d.quality)} ({d.unjudged} unjudged) | {_fmt(d.total_tokens)} | "
        f"{fmt_cost(d.cost_usd, d.cost_sources)} | {d.steps} | {_fmt(d.wall_seconds, 1)} |"
    )


def _stamp_lines(card: TaskScorecard) -> list[str]:
    """Where the attempts ran, when that is not simply the commit scored at: several commits
    or code stamps (stored attempts reused across a commit), one earlier commit, or attempts
    that carry no stamp at all (unknown, never taken to be HEAD)."""
    units: Counter[str] = Counter()
    for row in card.tasks:
        if row.commit or row.code_stamp:
            units[row.commit or row.code_stamp or ""] += 1
    lines = []
    span = span_line(card.commits, card.code_stamps, units)
    scored = card.measured_on.get("commit")
    if span is not None:
        lines.append(span)
    elif card.commits and card.commits != [scored]:
        lines.append(f"- **Attempts ran at `{card.commits[0][:12]}`**, not the commit scored at")
    if card.unstamped:
        lines.append(
            f"- **{card.unstamped} attempt(s) carry no stamp** (recorded before per-attempt "
            "stamps, or outside git): the commit they ran at is unknown"
        )
    return ["", *lines] if lines else []


def summary(card: TaskScorecard) -> str:
    lines = [
        f"# Tasks: suite {card.suite}, {card.harness.kind} / {card.model}",
        "",
        f"Judge: {card.judge.kind} {card.judge.model or ''}".rstrip()
        + f"; {card.repeats} repeat(s); measured on {card.measured_on.get('commit', '?')[:12]} "
        f"({card.measured_on.get('machine', '?')}).",
        *_stamp_lines(card),
        "",
        f"Sandbox: {card.sandbox}.",
        "",
        "| draw | passed | pass rate [95% CI] | verified | misreported | quality | tokens | "
        "cost | steps | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *[_draw_line(d) for d in card.draws],
        "",
        "| task | r | result | verified | misreported | quality | steps | tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in card.tasks:
        verified = "-" if row.verified is None else ("yes" if row.verified else "no")
        lines.append(
            f"| {row.task_id} | {row.repeat} | {row.result} | {verified} | {len(row.misreported)} "
            f"| {_fmt(row.quality)} | {row.steps} | {_fmt(row.total_tokens)} | "
            f"{_fmt(row.wall_seconds, 1)} |"
        )
    failing = [r for r in card.tasks if r.reasons or r.misreported]
    if failing:
        lines += ["", "## Why", ""]
        for row in failing:
            for reason in [*row.reasons, *row.misreported]:
                lines.append(f"- {row.task_id} r{row.repeat}: {reason}")
    return "\n".join(lines) + "\n"


def _mean(values: Sequence[float | int | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return statistics.fmean(known) if known else None


def comparison_rows(cards: Sequence[TaskScorecard]) -> list[dict[str, object]]:
    """One row per (harness, model, suite): the mean over every draw of every run."""
    groups: dict[tuple[str, str, str], list[Draw]] = {}
    for card in cards:
        groups.setdefault((card.harness.kind, card.model, card.suite), []).extend(card.draws)
    rows = []
    for (harness, model, suite), found in sorted(groups.items()):
        costs = [d.cost_usd for d in found]
        rows.append(
            {
                "harness": harness,
                "model": model,
                "suite": suite,
                "draws": len(found),
                "tasks": found[0].tasks,
                "passed": _mean([d.passed for d in found]),
                "pass_rate": _mean([d.pass_rate for d in found]),
                "verified": _mean([d.verified for d in found]),
                "misreported": _mean([d.misreported for d in found]),
                "quality": _mean([d.quality for d in found]),
                "tokens": _mean([d.total_tokens for d in found]),
                "cost": None if any(c is None for c in costs) else _mean(costs),
                "cost_sources": sorted({s for d in found for s in d.cost_sources}),
                "steps": _mean([d.steps for d in found]),
                "wall": _mean([d.wall_seconds for d in found]),
            }
        )
    return rows


NOTE = (
    "Means over every draw (run x repeat). A cost reads n/a when a draw counted no tokens or "
    "had no price; API-equivalent cells are list prices, not money spent."
)
COLUMNS = ("harness", "model", "suite", "draws", "passed", "pass rate", "verified",
           "misreported", "quality", "tokens", "cost", "steps", "wall s")  # fmt: skip


def _cells(row: dict[str, object]) -> list[str]:
    def num(key: str, digits: int = 2) -> str:
        value = row[key]
        return _fmt(float(value), digits) if isinstance(value, int | float) else "n/a"

    cost = row["cost"]
    sources = row["cost_sources"]
    assert isinstance(sources, list)
    return [
        str(row["harness"]), str(row["model"]), str(row["suite"]), str(row["draws"]),
        f"{num('passed', 1)}/{row['tasks']}", num("pass_rate"), num("verified", 1),
        num("misreported", 1), num("quality"), num("tokens", 0),
        fmt_cost(cost if isinstance(cost, float) else None, sources), num("steps", 1),
        num("wall", 1),
    ]  # fmt: skip


def comparison_markdown(rows: list[dict[str, object]]) -> str:
    lines = [
        "# Harness x model",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    lines += ["| " + " | ".join(_cells(row)) + " |" for row in rows]
    lines += ["", NOTE]
    return "\n".join(lines) + "\n"


def comparison_chart(rows: list[dict[str, object]]) -> str:
    """Pass rate per harness / model as SVG text (matplotlib, imported only here)."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    labels = [f"{r['harness']} / {r['model']} ({r['suite']})" for r in rows]
    values = [float(r["pass_rate"]) if isinstance(r["pass_rate"], float) else 0.0 for r in rows]
    figure, axes = plt.subplots(figsize=(7, 0.5 + 0.4 * max(len(rows), 1)))
    axes.barh(labels, values)
    axes.set_xlim(0, 1)
    axes.set_xlabel("pass rate")
    axes.set_title("Tasks passed (share of measured)")
    figure.tight_layout()
    out = io.StringIO()
    figure.savefig(out, format="svg", metadata={"Date": None})  # same bytes for same rows
    plt.close(figure)
    return out.getvalue()


def comparison_html(rows: list[dict[str, object]], chart: str) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in _cells(row)) + "</tr>"
        for row in rows
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>Harness x model</title>"
        "<style>body{font-family:sans-serif}td,th{padding:4px 8px;border-bottom:1px solid #ddd}"
        "</style></head><body><h1>Harness x model</h1>"
        f"<table><tr>{head}</tr>{body}</table>{chart}"
        "<p>Means over every draw. n/a: no tokens counted or no price; API-equivalent costs are "
        "list prices, not money spent.</p></body></html>\n"
    )


def write_comparison(cards: Sequence[TaskScorecard], out: Path) -> list[Path]:
    rows = comparison_rows(cards)
    chart = comparison_chart(rows)
    written = {
        out / "report.md": comparison_markdown(rows),
        out / "report.html": comparison_html(rows, chart),
        out / "pass_rate.svg": chart,
    }
    for path, text in written.items():
        write_text(path, text)
    return list(written)
