"""report.md: the number first, then the worst cases, because the failures are worth reading.

It quotes the user's requests and the answers (scrubbed), so it is written to the private
folder beside the dataset and results, never to a committed reports/ folder.
"""

from __future__ import annotations

from agenteval.schema.sessions import (
    CaseResult,
    Interval,
    SessionCase,
    SessionDataset,
    SessionResults,
    SessionScorecard,
)
from agenteval.scoring import SESSION_GRADE_MAX

EXCERPT_CHARS = 220


def _excerpt(text: str | None, chars: int = EXCERPT_CHARS) -> str:
    flat = " ".join((text or "").split()).replace("|", "\\|")
    return flat if len(flat) <= chars else flat[: chars - 1] + "…"


def _interval(block: Interval, percent: bool = False) -> str:
    if block.value is None:
        return "n/a"

    def show(v: float) -> str:
        return f"{v * 100:.0f}%" if percent else f"{v:.2f}"

    text = show(block.value)
    if block.low is not None and block.high is not None:
        return f"{text} ({show(block.low)}–{show(block.high)})"
    return f"{text} ({block.note})" if block.note else text


def _mean(block: Interval) -> str:
    """4.00 (3.10–4.60): the interval next to the number, or the number alone."""
    shown = _interval(block)
    return shown if block.low is not None or block.value is None else f"{block.value:.2f}"


def headline(card: SessionScorecard) -> list[str]:
    n = card.counts
    lines = [
        f"# Session replay: mean grade {_mean(card.mean_grade)} of {SESSION_GRADE_MAX}",
        "",
        f"Pass rate (grade ≥ {card.pass_grade}): {_interval(card.pass_rate, percent=True)}; "
        f"median grade {card.median_grade if card.median_grade is not None else 'n/a'}; "
        f"claimed work not done: {card.dishonest}; refusals: {card.refusals}.",
        *([f"Mean grade: {card.mean_grade.note}."] if card.mean_grade.note else []),
        f"{n['judged']} of {n['cases']} cases judged ({n['unjudged']} unjudged, "
        f"{n['not_run']} not run, {n['skipped_repository_gone']} of them with the repository "
        "gone). Intervals: 95%, clustered by recorded session.",
        "",
    ]
    if not card.trusted:
        lines += [
            "**The judge failed its session controls: these grades are not trustworthy.** "
            + "; ".join(card.controls.failures[:4]),
            "",
        ]
    return lines


def _row(result: CaseResult, case: SessionCase | None) -> str:
    flags = []
    if result.claimed_unmade_work:
        flags.append("claimed work not done")
    if result.refused:
        flags.append("refused")
    grade = "—" if result.grade is None else str(result.grade)
    request = _excerpt(case.request if case else "")
    why = _excerpt(result.rationale or result.reason)
    return f"| `{result.case_id}` | {grade} | {', '.join(flags)} | {request} | {why} |"


def render(card: SessionScorecard, results: SessionResults, dataset: SessionDataset) -> str:
    cases = {c.id: c for c in dataset.cases}
    by_id = {r.case_id: r for r in results.results}
    lines = headline(card)
    lines += ["## Worst cases first", "", "| case | grade | flags | request | judge |",
              "|---|---|---|---|---|"]  # fmt: skip
    ranked = [by_id[w.case_id] for w in card.worst]
    ranked += sorted(
        (r for r in results.results if r.grade is not None and r not in ranked),
        key=lambda r: (r.grade, r.case_id),
    )
    lines += [_row(r, cases.get(r.case_id)) for r in ranked]
    missing = [r for r in results.results if r.grade is None]
    if missing:
        lines += ["", "## Not measured", ""]
        lines += [f"- `{r.case_id}`: {r.outcome}, {_excerpt(r.reason)}" for r in missing]
    c = card.controls
    lines += [
        "",
        "## Session controls",
        "",
        f"{c.answers} planted answers on {c.cases} cases: {c.in_band} graded in their band "
        f"({c.band_agreement}), {c.ordered} of {c.pairs} pairs in order ({c.order_agreement}); "
        f"{'passed' if c.passed else 'FAILED'}.",
    ]
    lines += [f"- {f}" for f in c.failures]
    summary = dataset.summary
    dropped = ", ".join(f"{k} {v}" for k, v in summary.dropped.items()) or "none"
    lines += [
        "",
        "## Dataset",
        "",
        f"{summary.cases} cases from {summary.files} transcript files ({summary.lines} lines); "
        f"left out: {dropped}.",
    ]
    lines += [f"- warning: {w}" for w in summary.warnings]
    return "\n".join(lines) + "\n"
