"""What `agenteval compare` writes: compare.json, compare.md and the per-category delta plot.

Every "no difference" line carries the minimum detectable effect, so a reader can tell "no
change" from "too few scenarios to see one".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import write_json, write_text
from agenteval.gate.buckets import BUCKETS
from agenteval.gate.compare import EXIT_NOT_COMPARABLE, Comparison, Endpoint

PLOT_NAME = "category_delta"
LABELS = {"judged_pass_rate": "Judged pass rate", "avg_score": "Average score"}


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _delta(ep: Endpoint) -> str:
    if ep.delta is None:
        return "n/a"
    if ep.low is None or ep.high is None:
        return f"{ep.delta:+.3f}"
    return f"{ep.delta:+.3f} [{ep.low:+.3f}, {ep.high:+.3f}]"


def verdict_line(ep: Endpoint) -> str:
    """One sentence on an endpoint; a null result always states its MDE."""
    name = LABELS.get(ep.metric, ep.metric).lower()
    if ep.p_value is None:
        return f"- {LABELS.get(ep.metric, ep.metric)}: not tested ({'; '.join(ep.notes)})"
    if ep.regression or ep.improvement:
        way = "fell" if ep.regression else "rose"
        gate = "" if ep.gating or ep.improvement else " (reported; this metric does not gate)"
        return (
            f"- {name.capitalize()} {way} by {abs(ep.delta or 0):.3f} (p = {_p(ep.p_value)}){gate}."
        )
    power = (
        f"with {ep.n} paired scenarios it had 80% power to detect a change of "
        f"{ep.mde:.3f} or more ({ep.sd_source})"
        if ep.mde is not None
        else f"its MDE is unknown ({'; '.join(ep.notes) or 'no spread'})"
    )
    return f"- No significant change in {name} (p = {_p(ep.p_value)}); {power}."


def _head(result: Comparison) -> list[str]:
    b, c = result.baseline, result.current
    lines = [
        f"# agenteval compare: {result.verdict.upper()} (exit {result.exit_code})",
        "",
        "| | Baseline | Current |",
        "|---|---|---|",
        f"| Source | `{b['source']}` | `{c['source']}` |",
        f"| Agent | {b['agent']} | {c['agent']} |",
        f"| Iterations (seeds) | {b['iterations']} ({b['seeds']}) | "
        f"{c['iterations']} ({c['seeds']}) |",
        f"| Judged pass rate | {b['judged_pass_rate']} | {c['judged_pass_rate']} |",
        f"| Average score | {b['avg_score']} | {c['avg_score']} |",
        "",
        f"**Comparison:** {result.kind}"
        + (f" · **test:** {result.method}" if result.method else ""),
    ]
    if result.agent_differences:
        lines += ["", "Agent differences (A/B comparison):", ""]
        lines += [f"- `{d}`" for d in result.agent_differences]
    if result.reasons:
        lines += ["", "## Why", ""] + [f"- {r}" for r in result.reasons]
    return lines


def _endpoint_table(endpoints: list[Endpoint], holm: bool) -> list[str]:
    head = "| Scope | Metric | n | Baseline | Current | Δ [95% CI] | Test | p |"
    head += " Holm p |" if holm else ""
    head += " MDE (80%) | Verdict |"
    cols = head.count("|") - 1
    lines = [head, "|" + "---|" * cols]
    for ep in endpoints:
        verdict = "regression" if ep.regression else "improvement" if ep.improvement else "-"
        if ep.regression and not ep.gating:
            verdict = "decline (reported, not gating)"
        row = (
            f"| {ep.scope} | {LABELS.get(ep.metric, ep.metric)} | {ep.n} | {_num(ep.baseline)} "
            f"| {_num(ep.current)} | {_delta(ep)} | {ep.test or '-'} | {_p(ep.p_value)} |"
        )
        row += f" {_p(ep.p_holm)} |" if holm else ""
        lines.append(row + f" {_num(ep.mde)} | {verdict} |")
    return lines


def _scenarios(result: Comparison) -> list[str]:
    lines = ["", "## Scenarios", ""]
    for name in BUCKETS:
        rows = [r for r in result.scenarios if r.bucket == name]
        if not rows:
            continue
        lines.append(f"### {name} ({len(rows)})")
        lines.append("")
        if name == "unchanged":
            lines += [", ".join(r.id for r in rows), ""]
            continue
        lines += [f"- **{r.id}** ({r.category}): {r.reason}" for r in rows]
        lines.append("")
    return lines


def _noise(result: Comparison) -> list[str]:
    if result.noise is None:
        return ["", "_No noise floor given (`--noise FILE` from `agenteval noise`)._"]
    metrics = result.noise.get("run_metrics") or {}
    lines = ["", "## Noise floor", ""]
    lines.append(
        f"{result.noise.get('runs')} unchanged runs x {result.noise.get('iterations')} "
        f"iteration(s); {result.noise.get('scenarios_flipping')} scenario(s) flipped."
    )
    for name, spread in metrics.items():
        lines.append(
            f"- {LABELS.get(name, name)}: run-to-run min {_num(spread.get('min'))}, max "
            f"{_num(spread.get('max'))}, SD {_num(spread.get('sd'))}"
        )
    return lines


def markdown(result: Comparison) -> str:
    lines = _head(result)
    if result.exit_code == EXIT_NOT_COMPARABLE:
        # No test was run: the reasons above list every difference.
        lines += ["", "_Not comparable: no statistics were computed._"]
        return "\n".join(lines) + "\n"
    lines += ["", "## Overall", ""] + [verdict_line(ep) for ep in result.overall]
    lines += ["", *_endpoint_table(result.overall, holm=False)]
    if result.categories:
        lines += ["", "## By category (Holm-corrected across categories)", ""]
        lines += _endpoint_table(result.categories, holm=True)
    lines += _scenarios(result) + _noise(result)
    if result.incomplete or result.warnings:
        lines += ["", "## Completeness and warnings", ""]
        lines += [f"- {w}" for w in result.incomplete + result.warnings]
    return "\n".join(lines) + "\n"


def plot_rows(result: Comparison, metric: str = "judged_pass_rate") -> list[dict[str, Any]]:
    """Per-category delta with its 95% interval (plus the overall row), for `dvc plots`."""
    rows = []
    for ep in [*result.overall, *result.categories]:
        if ep.metric != metric or ep.delta is None:
            continue
        rows.append(
            {
                "category": "(overall)" if ep.scope == "overall" else ep.scope,
                "delta": round(ep.delta, 6),
                "low": None if ep.low is None else round(ep.low, 6),
                "high": None if ep.high is None else round(ep.high, 6),
                "p": ep.p_decision,
                "n": ep.n,
            }
        )
    return rows


def write_png(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 0.45 * len(rows) + 1.4))
    ys = list(range(len(rows)))[::-1]
    for y, row in zip(ys, rows, strict=True):
        low = row["low"] if row["low"] is not None else row["delta"]
        high = row["high"] if row["high"] is not None else row["delta"]
        colour = "#c0392b" if high < 0 else "#27ae60" if low > 0 else "#555555"
        ax.plot([low, high], [y, y], color=colour, linewidth=2)
        ax.plot([row["delta"]], [y], "o", color=colour)
    ax.axvline(0.0, color="#999999", linewidth=1, linestyle="--")
    ax.set_yticks(ys, [r["category"] for r in rows])
    ax.set_xlabel("Δ judged pass rate (current − baseline), 95% interval")
    ax.set_title("Per-category change")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def write_outputs(result: Comparison, out: Path, png: bool = True) -> list[Path]:
    """compare.json, compare.md, plots/category_delta.json (and .png when ``png``)."""
    paths = [out / "compare.json", out / "compare.md"]
    write_json(paths[0], result.to_dict())
    write_text(paths[1], markdown(result))
    rows = plot_rows(result)
    if rows:
        paths.append(out / "plots" / f"{PLOT_NAME}.json")
        write_json(paths[-1], rows)
        if png:
            paths.append(out / "plots" / f"{PLOT_NAME}.png")
            write_png(rows, paths[-1])
    return paths
