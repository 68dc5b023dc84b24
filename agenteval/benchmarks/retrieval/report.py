"""summary.md of a retrieval run: pipelines, paired tests, answers and misses, hard cases."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval.benchmarks.tables import cell, table
from agenteval.fileio import write_text
from agenteval.layout import Layout

COLUMNS = ("recall@1", "recall@3", "recall@5", "recall@10", "recall@20", "mrr", "doc_recall@5")


def write_summary(layout: Layout, results: Mapping[str, Any]) -> None:
    meta = results["meta"]
    lines = [
        "# Retrieval benchmark",
        "",
        f"{meta['questions']} labelled questions over {len(meta['library'])} pinned "
        f"documents; a chunk is a hit when it covers at least half of the quote.",
        "",
        "## Pipelines",
        "",
        *table(
            "pipeline", COLUMNS, {n: [s[c] for c in COLUMNS] for n, s in results["metrics"].items()}
        ),
    ]
    for name in meta["skipped_pipelines"]:
        lines.append(f"| {name} | " + " | ".join(["skipped"] + [""] * (len(COLUMNS) - 1)) + " |")
    lines += ["", *(f"{name} skipped: {why}" for name, why in meta["skipped_pipelines"].items())]
    lines += [
        "",
        "Pipelines: "
        + "; ".join(
            f"{n}: {', '.join(f'{k}={v}' for k, v in d.items())}"
            for n, d in meta["pipelines"].items()
        ),
    ]
    if results["paired_tests"]:
        lines += [
            "",
            "## Paired tests (ranx)",
            "",
            "| a | b | metric | a | b | p |",
            "|---|---|---|---:|---:|---:|",
        ]
        lines += [
            f"| {t['a']} | {t['b']} | {t['metric']} | {cell(t['a_value'])} | "
            f"{cell(t['b_value'])} | {cell(t['p_value'])} ({t['test']}) |"
            for t in results["paired_tests"]
        ]
    lines += [
        "",
        "## Recall@5 by tag",
        "",
        *table(
            "tag",
            list(results["metrics"]),
            {t: list(r.values()) for t, r in results["by_tag"].items()},
        ),
    ]
    lines += _answers(results) + _hard_cases(results) + _scale(results)
    write_text(layout.reports / "summary.md", "\n".join(lines).rstrip() + "\n")


def _answers(results: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    answers = results.get("answers")
    if answers:
        lines += [
            "",
            "## Answers",
            "",
            f"accuracy {cell(answers['accuracy'])} ({answers['correct']} correct, "
            f"{answers['wrong']} wrong, {answers['unscored']} unscored, {answers['error']} "
            f"error, of {answers['total']}); wrong answers: {answers['retrieval_miss']} "
            f"retrieval miss, {answers['generation_miss']} generation miss",
        ]
        wrong = [
            (q, r["answer"])
            for q, r in results["per_question"].items()
            if r.get("answer", {}).get("outcome") == "wrong"
        ]
        lines += [f"- {q}: {a['miss']} miss ({a['rule']})" for q, a in wrong]
    return lines


def _hard_cases(results: Mapping[str, Any]) -> list[str]:
    lines = [
        "",
        "## Hard cases",
        "",
        "| case | status | passes when | measured |",
        "|---|---|---|---|",
    ]
    for case in results["hard_cases"]:
        measured = case.get("measured") or {"reason": case.get("reason")}
        shown = "; ".join(f"{k}: {v}" for k, v in measured.items())
        lines.append(
            f"| {case['case']} | {case['status']} | {case['condition']} | "
            f"{shown.replace('|', '/')[:300]} |"
        )
    return lines


def _scale(results: Mapping[str, Any]) -> list[str]:
    from agenteval.benchmarks.retrieval.scale import table as scale_table

    rows = results.get("scale") or []
    if not rows:
        return []
    tiers = ",".join(str(r["documents"]) for r in rows)
    return ["", "## Scale tiers (bm25, each tier in its own process)", "", *scale_table(rows),
            "", f"rerun: python bench/retrieval_scale.py --tiers {tiers}"]  # fmt: skip
