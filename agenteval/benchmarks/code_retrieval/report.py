"""summary.md of a code retrieval run: quality against the grep baseline, scale, incremental
replay, damaged indexes and hostile trees (pass / fail / not-run)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agenteval.benchmarks.tables import cell, table
from agenteval.fileio import write_text
from agenteval.layout import Layout

COLUMNS = ("file_recall@1", "file_recall@5", "file_recall@10", "function_recall@5",
           "function_recall@10", "mrr")  # fmt: skip


def write_summary(layout: Layout, results: Mapping[str, Any]) -> None:
    meta = results["meta"]
    lines = [
        "# Code retrieval benchmark",
        "",
        f"{meta['queries']} queries from fix commits pinned in {meta['commits_file']}; each "
        f"indexed at its base commit. Files and definitions rank by their first chunk among "
        f"the top {meta['depth']}. Measured on {meta['machine']}.",
        "",
        *table(
            "pipeline", COLUMNS, {n: [s[c] for c in COLUMNS] for n, s in results["metrics"].items()}
        ),
    ]
    lines += ["", "## Scale (shown, never gated)", ""]
    for name, repo in meta["repositories"].items():
        shown = "; ".join(f"{k}: {cell(v)}" for k, v in repo["scale"].items())
        lines.append(f"- {name}: {shown}")
    lines += ["", "## Incremental re-index", ""]
    for name, inc in results["incremental"].items():
        lines.append(
            f"- {name}: **{inc['status']}** — {inc['commits']} commits replayed; "
            f"{inc['stale_chunks']} stale and {inc['missing_chunks']} missing chunks against a "
            f"fresh index of the last; {inc['score_mismatches']} of "
            f"{inc['queries_compared']} rankings differ"
        )
    lines += ["", "## Robustness", "", "| case | kind | status | detail |", "|---|---|---|---|"]
    for case in results["robustness"]:
        detail = case.get("opened") or case.get("detail") or case.get("reason") or ""
        if "recovers" in case:
            detail += f"; recovers: {case['recovers']}"
        lines.append(f"| {case['case']} | {case['kind']} | {case['status']} | "
                     f"{str(detail).replace('|', '/')[:200]} |")  # fmt: skip
    sw = results["swebench"]
    lines += ["", f"SWE-bench Verified: {sw['status']} ({sw['reason']})."]
    misses = [(q, r) for q, r in results["per_query"].items() if r["bm25"]["file_rank"] != 1]
    if misses:
        lines += ["", "## Queries bm25 did not rank first", ""]
        for q, r in misses:
            lines.append(f"- {q}: bm25 rank {cell(r['bm25']['file_rank'])}, git grep rank "
                         f"{cell(r['git grep']['file_rank'])} — {r['query'][:100]}")  # fmt: skip
    write_text(layout.reports / "summary.md", "\n".join(lines).rstrip() + "\n")
