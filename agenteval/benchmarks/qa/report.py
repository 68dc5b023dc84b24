"""QA outputs people read: details/<task>.json per task and summary.md.

A task's file holds, per attempt, the binary observation (`metrics.correct`), the parsed
verdict with the answer under test and the ground truth (`meta.benchmark.scoring`), and
the full trajectory beside them. summary.md is the k=1 table, or at k > 1 the attempt plan
with the headline and auxiliary series, each with its own counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agenteval.benchmarks.qa.records import QAVerdict
from agenteval.benchmarks.questions import QATask
from agenteval.fileio import write_json, write_text
from agenteval.layout import Layout, load_transcript
from agenteval.schema.suite import Suite

COLUMNS = "| metric | value | 95% interval | Evaluated | Error | Unavailable | Total |"
RULE = "|---|---:|---|---:|---:|---:|---:|"


def details_dir(layout: Layout) -> Any:
    return layout.reports / "details"


def _scoring(task: QATask, verdict: QAVerdict | None) -> dict[str, Any]:
    if verdict is None:
        return {"verdict": None, "status": "unavailable", "reason": "not judged"}
    return {
        "verdict": verdict.verdict,
        "status": verdict.status,
        "source": verdict.source,
        "rule": verdict.rule,
        "answer": verdict.answer,
        "ground_truth": task.answer,
        "aliases": task.aliases,
        "judge": {"kind": verdict.judge.kind, "model": verdict.judge.model},
        "reason": verdict.reason,
        "judge_replies": verdict.judge_replies,
    }


def task_details(
    layout: Layout, task: QATask, verdicts: Mapping[int, QAVerdict], suite: Suite
) -> dict[str, Any]:
    seeds = suite.seeds()
    attempts: dict[str, Any] = {}
    for attempt in range(suite.iterations):
        verdict = verdicts.get(attempt)
        transcript = load_transcript(layout.transcripts, task.id, attempt)
        trajectory = None
        if transcript is not None:
            trajectory = transcript.model_dump(
                mode="json",
                include={
                    "status",
                    "error",
                    "duration_s",
                    "setup_calls",
                    "turns",
                    "target",
                    "cost_usd",
                },
            )
        attempts[str(attempt)] = {
            "seed": seeds[attempt],
            "metrics": {"correct": verdict.correct if verdict else None},
            "meta": {"benchmark": {"scoring": _scoring(task, verdict)}},
            "trajectory": trajectory,
        }
    return {
        "task_id": task.id,
        "question": task.question,
        "level": task.level,
        "files": task.files,
        "ground_truth": task.answer,
        "aliases": task.aliases,
        "attempts": attempts,
    }


def write_details(
    layout: Layout, tasks: Sequence[QATask], verdicts: Sequence[QAVerdict], suite: Suite
) -> None:
    folder = details_dir(layout)
    wanted = {f"{t.id}.json" for t in tasks}
    if folder.is_dir():
        for stale in folder.glob("*.json"):  # tasks no longer selected leave no stale file
            if stale.name not in wanted:
                stale.unlink()
    by_task: dict[str, dict[int, QAVerdict]] = {}
    for v in verdicts:
        by_task.setdefault(v.task_id, {})[v.attempt] = v
    for task in tasks:
        write_json(
            folder / f"{task.id}.json", task_details(layout, task, by_task.get(task.id, {}), suite)
        )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def _row(name: str, block: Mapping[str, Any]) -> str:
    low, high = block.get("low"), block.get("high")
    ci = f"{_fmt(low)} – {_fmt(high)}" if low is not None else "n/a"
    counts = " | ".join(str(block[k]) for k in ("evaluated", "error", "unavailable", "total"))
    return f"| `{name}` | {_fmt(block.get('value'))} | {ci} | {counts} |"


def _table(metrics: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    return [COLUMNS, RULE, *(_row(n, metrics[n]) for n in names if n in metrics)]


def _headline_names(k: int) -> list[str]:
    if k == 1:
        return ["correct.native@1"]
    return ["correct.native@1", f"correct.avg@{k}", f"correct.pass@{k}", f"correct.pass^{k}"]


def _cell(text: str | None, width: int = 70) -> str:
    clean = " ".join((text or "").split()).replace("|", "\\|")
    return clean if len(clean) <= width else clean[: width - 1] + "…"


def write_summary(
    layout: Layout,
    metrics: Mapping[str, Any],
    tasks: Sequence[QATask],
    verdicts: Sequence[QAVerdict],
    k: int,
) -> None:
    names = _headline_names(k)
    lines = ["# QA benchmark", ""]
    lines.append(f"{len(tasks)} tasks · k = {k} attempt(s) per task · only verdict A counts.")
    if k > 1:
        seeds = ", ".join(str(s) for s in metrics.get("seeds", []))
        lines += [
            "",
            "## Attempt plan",
            "",
            f"- attempts per task: {k} ({metrics.get('attempt_strategy')}: own seed and "
            "cache key per attempt)",
            f"- seeds: {seeds}",
        ]
    lines += ["", "## Headline", "", *_table(metrics, names)]
    if k > 1:
        series = metrics.get("series", {})
        lines += ["", "## Series", "", *_table(series, sorted(series, key=_series_order))]
    lines += ["", "## By level", ""]
    for level, block in metrics.get("by_level", {}).items():
        lines += [f"### Level {level}", "", *_table(block, names), ""]
    lines += ["## Verdicts", "", "| class | attempts |", "|---|---:|"]
    lines += [f"| {name} | {count} |" for name, count in metrics.get("verdicts", {}).items()]
    rules = ", ".join(f"{rule} {n}" for rule, n in metrics.get("rules", {}).items())
    lines += ["", f"Pre-check rules and deferrals: {rules or 'none'}"]
    lines += ["", "## Tasks", "", _task_header(k), _task_rule(k), *_task_rows(tasks, verdicts, k)]
    write_text(layout.reports / "summary.md", "\n".join(lines).rstrip() + "\n")


def _series_order(name: str) -> tuple[int, str]:
    return int(name.rsplit("@", 1)[-1].rsplit("^", 1)[-1]), name


def _task_header(k: int) -> str:
    return (
        "| task | level | " + ("verdict | rule | answer" if k == 1 else "verdicts") + " | truth |"
    )


def _task_rule(k: int) -> str:
    return "|---|---:|" + ("---|---|---|" if k == 1 else "---|") + "---|"


def _task_rows(tasks: Sequence[QATask], verdicts: Sequence[QAVerdict], k: int) -> list[str]:
    by_key = {(v.task_id, v.attempt): v for v in verdicts}
    rows = []
    for task in tasks:
        found = [by_key.get((task.id, a)) for a in range(k)]
        marks = [(v.verdict or v.status) if v else "-" for v in found]
        if k == 1:
            v = found[0]
            rule, answer = (v.rule, v.answer) if v else (None, None)
            cells = f"{marks[0]} | {_cell(rule, 30)} | {_cell(answer)}"
        else:
            cells = " ".join(marks)
        rows.append(f"| {task.id} | {task.level} | {cells} | {_cell(task.answer, 40)} |")
    return rows
