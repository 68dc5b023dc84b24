"""reports/health.md: the health report for a person — what to review first, then the detail."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _rate(value: Any) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def _interval(rate: Mapping[str, Any]) -> str:
    value = rate.get("value")
    if value is None:
        return "n/a"
    if rate.get("low") is None:
        return f"{value:.2f} (no interval: {rate.get('n_scenarios', '?')} scenario)"
    return f"{value:.2f} [{rate['low']:.2f}, {rate['high']:.2f}]"


def _header(report: Mapping[str, Any]) -> list[str]:
    rules, counts = report["rules"], report["counts"]
    lines = ["# Scenario health", "", "| model (weakest first) | agent | runs | iterations |"]
    lines.append("|---|---|---|---|")
    for name, model in report["models"].items():
        runs, iterations = len(model["runs"]), model["iterations"]
        lines.append(f"| {name} | {model['agent']} | {runs} | {iterations} |")
    lines += [
        "",
        f"{counts['scenarios']} scenario(s): **{counts['always_fail']} always-fail**, "
        f"**{counts['inverted']} inverted**, {counts['flaky']} flaky, "
        f"{counts['saturated']} saturated.",
        "",
        f"Stability classes need {rules['min_iterations_for_stable']} judged iterations per "
        f"model (tau {rules['stability_tau']}); with fewer a scenario stays `uncertain`. "
        f"Inverted: one-sided Fisher exact, Holm-adjusted, alpha {rules['alpha']}.",
    ]
    return lines


def _categories(report: Mapping[str, Any]) -> list[str]:
    rows = report["categories"]
    strongest = next(iter(rows.values()))["model"] if rows else "-"
    lines = ["", f"## Headroom per category (strongest model: {strongest})", ""]
    lines += ["| category | scenarios | judged pass rate [95% CI] | headroom |"]
    lines.append("|---|---|---|---|")
    for name, row in rows.items():
        flag = " (no headroom)" if row["no_headroom"] else ""
        rate = _interval(row["judged_pass_rate"])
        lines.append(f"| {name} | {row['scenarios']} | {rate} | {_rate(row['headroom'])}{flag} |")
    mde = report["mde"]["judged_pass_rate"]
    snr = report["suite_snr"]
    src = report["sources"]
    lines += [
        "",
        f"Minimum detectable effect of this suite (main model, paired, 80% power): judged "
        f"pass rate {_rate(mde.get('mde'))}, average score "
        f"{_rate(report['mde']['avg_score'].get('mde'))}.",
        f"Suite signal-to-noise: {_rate(snr.get('snr'))}"
        + (f" ({snr['note']})" if snr.get("note") else "")
        + ".",
        f"Scenarios from real use (`source: session` or `issue`): {src['session_or_issue']} "
        f"of {src['scenarios']} ({_rate(src['share'])}); by source: {src['kinds']}.",
    ]
    return lines


def _review(report: Mapping[str, Any]) -> list[str]:
    lines = ["", "## For review: always-fail and inverted", ""]
    if not report["review"]:
        return [*lines, "None."]
    for item in report["review"]:
        lines.append(f"### {item['id']} ({', '.join(item['flags'])})")
        lines += [f"- {flag}: {why}" for flag, why in item["why"].items()]
        for read in item["read"]:
            where = read.get("transcript") or read.get("mlflow")
            lines.append(f"- {read['model']} {read['status']}: `{where}`")
            turn = read.get("turn")
            if turn:
                lines.append(f"  - turn {turn['turn']} user: {_one_line(turn['user'])}")
                lines.append(f"  - agent: {_one_line(turn['agent'])}")
                lines.append(f"  - tools: {', '.join(turn['tools']) or 'none'}")
        lines.append("")
    return lines


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _moves(report: Mapping[str, Any]) -> list[str]:
    lines = ["", "## Proposed tier moves (not applied; edit eval/tiers.yaml)", ""]
    if not report["tier_moves"]:
        return [*lines, "None."]
    lines += ["| scenario | from | to | why |", "|---|---|---|---|"]
    for move in report["tier_moves"]:
        lines.append(f"| {move['id']} | {move['from']} | {move['to']} | {move['reason']} |")
    return lines


def _table(report: Mapping[str, Any]) -> list[str]:
    names = list(report["models"])
    head = " | ".join(f"{n} passed" for n in names)
    lines = ["", "## Every scenario", ""]
    lines += [f"| scenario | category | tier | flags | {head} | flip rate | SNR |"]
    lines.append("|" + "---|" * (6 + len(names)))
    for sid, row in report["scenarios"].items():
        cells = " | ".join(
            f"{m['k']}/{m['n']} {m['stability']}" for m in (row["models"][n] for n in names)
        )
        lines.append(
            f"| {sid} | {row['category']} | {row.get('tier') or '-'} | "
            f"{', '.join(row['flags']) or '-'} | {cells} | {_rate(row['flip_rate'])} | "
            f"{_rate(row.get('snr'))} |"
        )
    return lines


def render_markdown(report: Mapping[str, Any]) -> str:
    lines = _header(report) + _categories(report) + _review(report) + _moves(report)
    lines += _table(report)
    if report["warnings"]:
        lines += ["", "## Warnings", ""] + [f"- {w}" for w in report["warnings"]]
    return "\n".join(lines) + "\n"
