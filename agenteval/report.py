"""Human-readable outputs: summary.md and the plot data `dvc plots` draws."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from agenteval.costs import label, total
from agenteval.fileio import digest_of, read_json, write_json, write_text
from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.schema.status import JUDGED_STATUSES, Status
from agenteval.stamps import span_line

ICONS = {
    Status.PASS: "✅",
    Status.FAIL: "❌",
    Status.BLOCKED_BY_ARCHITECTURE: "🚫",
    Status.TIMEOUT: "⏱",
    Status.BUDGET_EXCEEDED: "💸",
    Status.INFRA_ERROR: "🔧",
    Status.SETUP_ERROR: "🔧",
    Status.SKIPPED_NO_DOCUMENT: "⏭",
    Status.NO_USER_MESSAGE: "💬",
    Status.SIMULATOR_ERROR: "🎭",
    Status.ERRORED: "⚠️",
    Status.NOT_RUN: "·",
    Status.NOT_JUDGED: "❔",
}


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _pm(block: dict[str, Any] | None, fmt: str) -> str | None:
    """'value [low, high]' from a noise.json interval block, or the value with the reason it
    has no interval ('too few scenarios'); None when there is no block."""
    if not block or block.get("value") is None:
        return None
    text = format(block["value"], fmt)
    if block.get("low") is not None and block.get("high") is not None:
        return f"{text} [{format(block['low'], fmt)}, {format(block['high'], fmt)}]"
    note = str(block.get("note") or "")
    if note.startswith("too few scenarios"):
        return f"{text} (too few scenarios)"
    if note.startswith("no spread"):
        return f"{text} (no spread observed)"
    return text


def load_noise(card: Scorecard, reports: Path) -> dict[str, Any] | None:
    """reports/noise.json if it was computed from this very scorecard, else None."""
    path = reports / "noise.json"
    if not path.is_file():
        return None
    noise = read_json(path)
    # A noise.json left over from another scorecard would attach foreign intervals.
    if not isinstance(noise, dict) or noise.get("scorecard_digest") != digest_of(card):
        return None
    return noise


def _headline(card: Scorecard, noise: dict[str, Any] | None) -> list[str]:
    s = card.summary
    overall = (noise or {}).get("overall") or {}
    rate = _pm(overall.get("judged_pass_rate"), ".1%") or _pct(s.judged_pass_rate)
    score = _pm(overall.get("avg_score"), ".2f") or _num(s.avg_score)
    lines = [
        f"- Pass rate (all): {_pct(s.pass_rate)} · pass rate (judged): {rate}",
        f"- Average score (judged, FAIL capped at 5.99): {score}/10",
    ]
    if noise is not None:
        conf = noise.get("conf", 0.95)
        mde = ((noise.get("mde") or {}).get("judged_pass_rate") or {}).get("mde")
        lines.append(
            f"- [low, high] is the {conf:.0%} interval, clustered by scenario and bounded to "
            "the metric's range (Wilson on the effective sample size for pass rates, t for "
            f"scores); groups of fewer than {noise.get('min_interval_scenarios')} scenarios "
            "get none. "
            "A paired comparison at this size detects a pass-rate change of "
            + ("n/a" if mde is None else f"{mde * 100:.0f} percentage points")
            + " with 80% power (conservative estimate)"
        )
    return lines


def _header(card: Scorecard, noise: dict[str, Any] | None = None) -> list[str]:
    s, cfg = card.summary, card.config
    target, judge = cfg.get("target", {}), cfg.get("judge", {})
    lines = [
        "# agenteval summary",
        "",
        f"- **Agent:** {target.get('kind')} / {target.get('model')}",
        f"- **Judge:** {judge.get('kind')} / {judge.get('model') or '-'}",
        f"- **Simulator:** {cfg.get('simulator', {}).get('kind')}",
        f"- **Iterations:** {cfg.get('iterations')} (seed {cfg.get('seed')})",
        f"- **Scenario set:** `{str(cfg.get('scenario_set_digest'))[:12]}` · "
        f"**corpus:** `{str(cfg.get('corpus_digest'))[:12]}`",
        "",
        "## Counts",
        "",
        f"- Total: {s.total} · passed {s.passed} · failed {s.failed} · blocked {s.blocked}",
    ]
    unmeasured = {
        "timeout": s.timeout, "budget exceeded": s.budget_exceeded, "infra error": s.infra_error,
        "setup error": s.setup_error, "skipped (no document)": s.skipped_no_document,
        "no user message": s.no_user_message, "simulator error": s.simulator_error,
        "errored": s.errored, "not run": s.not_run, "not judged": s.not_judged,
    }  # fmt: skip
    shown = [f"{name} {count}" for name, count in unmeasured.items() if count]
    lines.append("- Unmeasured: " + (" · ".join(shown) if shown else "none"))
    if s.fenced_reads:
        tried = sorted({r.id for r in card.scenarios if r.fenced_reads})
        lines.append(
            f"- Reads refused outside the corpus: {s.fenced_reads} "
            f"(the agent tried to read the answer key or run files; {', '.join(tried)})"
        )
    overlap = (cfg.get("split") or {}).get("overlap") or []
    if overlap:  # only pins can split scenarios that share an answer
        answers = ", ".join(repr(o["answer"]) for o in overlap)
        lines.append(f"- Split overlap: {len(overlap)} expected answer(s) pinned apart ({answers})")
    lines += _headline(card, noise)
    lines += _commits_line(card)
    return lines


def _commits_line(card: Scorecard) -> list[str]:
    """Said in the headline: numbers whose units ran on different commits (or, stamped by
    content, different code) are not one commit's measurement (a `--resume`, a retry or a
    partial rerun after a commit)."""
    count = Counter(r.commit or r.code_stamp for r in card.scenarios)
    line = span_line(card.commits, card.code_stamps, {k: v for k, v in count.items() if k})
    return [line] if line else []


def _costs(card: Scorecard) -> list[str]:
    """What the run cost, each figure with its kind of dollar; n/a where nothing counted."""
    cost = card.cost
    if cost is None:
        return []
    lines = ["", "## Cost", "", f"- Run: {label(cost.total)}"]
    if len(cost.by_source) > 1:
        lines += [f"  - {source}: ${usd:.4f}" for source, usd in sorted(cost.by_source.items())]
    if cost.metered is not None:
        lines.append(f"- Billing meter (metered): {label(cost.metered)}")
    lines.append(
        f"- Units priced: {cost.units_priced} · reached the model without a figure (n/a): "
        f"{cost.units_unpriced} · called no model: {cost.units_without_model}"
    )
    if cost.by_source or cost.units_unpriced:
        lines += ["", "| Category | Cost |", "|---|---|"]
        lines += [f"| {name} | {label(c)} |" for name, c in cost.by_category.items()]
    lines.append(
        "- Kinds of dollar: metered = the provider's billing meter; api_equivalent = the "
        "harness's own reported cost (list price, not a bill); harness_counts = token counts "
        "priced with the dated rate card"
    )
    return lines


def _categories(card: Scorecard, noise: dict[str, Any] | None = None) -> list[str]:
    lines = [
        "",
        "## By category",
        "",
        "| Category | Total | Pass | Fail | Blocked | Unmeasured | Judged pass rate | Avg score |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    intervals = (noise or {}).get("categories") or {}
    for name, c in card.summary.by_category.items():
        block = intervals.get(name) or {}
        rate = _pm(block.get("judged_pass_rate"), ".0%") or _pct(c.judged_pass_rate)
        score = _pm(block.get("avg_score"), ".2f") or _num(c.avg_score)
        lines.append(
            f"| {name} | {c.total} | {c.passed} | {c.failed} | {c.blocked} | {c.unmeasured} "
            f"| {rate} | {score} |"
        )
    return lines


def _scenario_line(rows: list[ScenarioResult], card: Scorecard) -> list[str]:
    first = rows[0]
    count = card.pass_counts.get(first.id)
    scores = [r.score for r in rows if r.score is not None and r.status in JUDGED_STATUSES]
    mean = sum(scores) / len(scores) if scores else None
    if len(rows) == 1:
        status = first.status
        text = f"- {ICONS.get(Status(status), '')} **{first.id}** — {status} ({_num(mean, 1)}/10)"
    else:
        k, n = (count.k, count.n) if count else (0, 0)
        statuses = ", ".join(sorted({r.status for r in rows}))
        text = f"- **{first.id}** — {k}/{n} passed ({statuses}; mean {_num(mean, 1)}/10)"
    cost = first.cost if len(rows) == 1 else total(r.cost for r in rows)[0]
    if any(r.cost is not None for r in rows):
        text += f" · cost {label(cost)}"
    lines = [text]
    causes = sorted({r.root_cause for r in rows if r.root_cause and r.status != Status.PASS})
    lines += [f"  - Root cause: {cause}" for cause in causes[:2]]
    return lines


def _est(e: Any, fmt: str = ".3f") -> str:
    if e is None or e.value is None:
        return "n/a"
    if e.low is None:
        return format(e.value, fmt)
    return f"{e.value:{fmt}} [{e.low:{fmt}}, {e.high:{fmt}}]"


def _judge_checks(card: Scorecard) -> list[str]:
    """Overrides, in-run calibration and self-consistency: how far to trust this judge."""
    s, cal, sc = card.summary, card.calibration, card.self_consistency
    if not (s.overrides or s.disagreements or cal or sc):
        return []
    rules = ", ".join(f"{r} {n}" for r, n in card.overrides_by_rule.items())
    lines = ["", "## Judge checks", "",
             f"- Scores overridden by certain code findings: {s.overrides}"
             + (f" ({rules})" if rules else "")
             + f" · judge-vs-code disagreements that stood: {s.disagreements}"]  # fmt: skip
    if cal is not None:
        gate = "meets the controls gate" if cal.passed else "MISSES the controls gate: "
        lines.append(
            f"- Calibration on {cal.controls} labelled {cal.split} controls judged inside this "
            f"run, unannounced: agreement {_est(cal.agreement)}, false-pass rate "
            f"{_est(cal.false_pass_rate, '.0%')} ({cal.false_passes} wrong replies passed), "
            f"coverage {_pct(cal.coverage)}; {gate}{'; '.join(cal.misses)}"
        )
    if cal is not None and cal.people is not None:
        p = cal.people
        lines.append(
            f"- Agreement with people on {p.controls} held turn(s) reviewers labelled in "
            f"MLflow, judged inside this run: agreement {_est(p.agreement)}, false-pass rate "
            f"{_est(p.false_pass_rate, '.0%')} ({p.false_passes} turn(s) people failed, passed)"
        )
    if sc is not None:
        kept = "majority" if sc.majority else "first"
        flips = _est_values(sc.flip_rate, sc.flip_rate_low, sc.flip_rate_high)
        lines.append(
            f"- Self-consistency over {sc.repeats} judgings of each transcript ({kept} verdict "
            f"kept): flip rate {flips} ({sc.flips} of {sc.items}), score SEM "
            f"{_num(sc.score_sem)}" + ("" if sc.passed else f"; {'; '.join(sc.misses)}")
        )
    return lines


def _est_values(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "n/a"
    if low is None or high is None:
        return f"{value:.0%}"
    return f"{value:.0%} [{low:.0%}, {high:.0%}]"


def _invalid(card: Scorecard) -> list[str]:
    if not card.invalid:
        return []
    lines = ["", f"## Invalid scenario files (skipped: {len(card.invalid)})", ""]
    for entry in card.invalid:
        lines.append(f"- **{entry.id or entry.path}** ({entry.path})")
        lines += [f"  - {error}" for error in entry.errors]
    return lines


def summary_markdown(card: Scorecard, noise: dict[str, Any] | None = None) -> str:
    lines = _header(card, noise) + _invalid(card) + _judge_checks(card)
    lines += _categories(card, noise) + _costs(card)
    lines += ["", "## Scenarios", ""]
    grouped: dict[str, list[ScenarioResult]] = {}
    for result in card.scenarios:
        grouped.setdefault(result.id, []).append(result)
    for rows in grouped.values():
        lines += _scenario_line(rows, card)
    return "\n".join(lines) + "\n"


def plot_data(card: Scorecard) -> dict[str, list[dict[str, Any]]]:
    categories = [
        {"category": name, "pass_rate": c.judged_pass_rate or 0.0, "avg_score": c.avg_score or 0.0}
        for name, c in card.summary.by_category.items()
    ]
    scores = [
        {"scenario": r.id, "iteration": r.iteration, "score": r.score}
        for r in card.scenarios
        if r.score is not None
    ]
    return {"category_pass_rate": categories, "score_distribution": scores}


def write_report(card: Scorecard, reports: Path) -> None:
    write_text(reports / "summary.md", summary_markdown(card, load_noise(card, reports)))
    # The charts are DVC's: dvc.yaml declares these files as plots (`dvc plots show`).
    for name, rows in plot_data(card).items():
        write_json(reports / "plots" / f"{name}.json", rows)
