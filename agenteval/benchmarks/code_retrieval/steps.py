"""The code retrieval benchmark as one step: queries from pinned fixes, BM25 over the code
index against the `git grep` baseline, incremental replay, damaged indexes, hostile trees ->
results.json, metrics.json, summary.md."""

from __future__ import annotations

import platform
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.code_retrieval import robustness, scoring, swebench
from agenteval.benchmarks.code_retrieval.grep import GrepFailed, grep_rank
from agenteval.benchmarks.code_retrieval.history import (
    HistoryError,
    WorkTree,
    oldest_first,
    pinned_queries,
    resolve,
)
from agenteval.benchmarks.code_retrieval.index import CodeIndex, IndexConfig
from agenteval.benchmarks.code_retrieval.records import PinnedCommits
from agenteval.benchmarks.code_retrieval.settings import CodeRetrievalParams
from agenteval.fileio import write_json
from agenteval.layout import Layout
from agenteval.measured import Coverage, first_reason
from agenteval.schema.input_error import InputError
from agenteval.schema.located import Located, load_located
from agenteval.schema.problems import Problem
from agenteval.stats import percentile

KIND = "code_retrieval"
PIPELINES = ("bm25", "git grep")


class PinsError(InputError, ValueError):
    """Problems of the pinned commits file."""

    separator = "; "


def results_path(layout: Layout) -> Path:
    return layout.reports / "results.json"


def load_pins(root: Path, name: str) -> PinnedCommits:
    located = load_located(root / name, name)
    if not isinstance(located, Located):
        raise PinsError([located])
    try:
        return PinnedCommits.model_validate(located.data)
    except ValueError as exc:
        errors: list[Any] = getattr(exc, "errors", lambda: [])()
        raise PinsError(
            [Problem(name, located.line(e["loc"]), f"{'.'.join(map(str, e['loc']))}: {e['msg']}")
             for e in errors] or [Problem(name, 1, str(exc))]
        ) from None  # fmt: skip


def _rank_queries(
    repo: Path, queries: list[Any], config: IndexConfig, work: Path, depth: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each query at its base commit, oldest first, in one working tree and one index."""
    tree = WorkTree(repo, work / "tree", config.selection)
    index = CodeIndex(tree.folder, work / "store", config)
    rows: dict[str, Any] = {}
    failed: dict[str, str] = {}  # query id -> why it is unmeasured
    syncs: list[dict[str, float]] = []
    order = oldest_first(repo, sorted({q.base for q in queries}))
    for base in order:
        tree.move_to(base)
        start = time.perf_counter()
        report = index.sync()
        syncs.append({"seconds": time.perf_counter() - start, "rechunked": len(report.rechunked)})
        for q in (q for q in queries if q.base == base):
            start = time.perf_counter()
            hits = index.search(q.query, depth)
            bm25 = scoring.ranked_from_chunks(q.id, [h.chunk for h in hits],
                                              (time.perf_counter() - start) * 1000)  # fmt: skip
            start = time.perf_counter()
            try:
                files, symbols = grep_rank(repo, base, config.selection, q.query)
            except GrepFailed as exc:  # out of both pipelines' figures: they stay paired
                failed[q.id] = str(exc)
                continue
            grep = scoring.Ranking(q.id, tuple(files), tuple(symbols),
                                   round((time.perf_counter() - start) * 1000, 3))  # fmt: skip
            rows[q.id] = {"query": q, "bm25": bm25, "git grep": grep}
    first = syncs[0] if syncs else {"seconds": 0.0, "rechunked": 0}
    later = syncs[1:]
    scale = {
        "files": len(index.files), "chunks": sum(len(c) for c in index.chunks.values()),
        "first_index_s": round(first["seconds"], 3), "first_index_files": first["rechunked"],
        "resync_s_mean": round(sum(s["seconds"] for s in later) / len(later), 4) if later else None,
        "rechunked_per_resync_mean": round(sum(s["rechunked"] for s in later) / len(later), 2)
        if later else None,
        "store_bytes": sum(p.stat().st_size for p in index.store.glob("*") if p.is_file()),
        "bases": len(order),
    }  # fmt: skip
    return rows, {"scale": scale, "index": index, "unmeasured": failed}


def _per_query(rows: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for qid, row in rows.items():
        q = row["query"]
        entry: dict[str, Any] = {"commit": q.commit, "base": q.base,
                                 "query": q.query.splitlines()[0][:200], "files": q.files,
                                 "symbols": q.symbols, "created": q.created}  # fmt: skip
        for name in PIPELINES:
            r = row[name]
            entry[name] = {"file_rank": scoring.first_rank(r.files, q.files),
                           "function_rank": scoring.first_rank(r.symbols, q.symbols),
                           "top_files": list(r.files[:5]), "latency_ms": r.latency_ms}  # fmt: skip
        out[qid] = entry
    return out


def step_evaluate(section: CodeRetrievalParams, layout: Layout) -> dict[str, Any]:
    from agenteval.benchmarks.code_retrieval.report import write_summary

    pins = load_pins(layout.root, section.commits)
    work = layout.data / "work"
    shutil.rmtree(work, ignore_errors=True)
    depth = section.depth
    rows: dict[str, Any] = {}
    unmeasured: dict[str, str] = {}
    repos: dict[str, Any] = {}
    incremental: dict[str, Any] = {}
    cases: list[dict[str, Any]] = []
    for spec in pins.repositories:
        repo, selection, queries = pinned_queries(layout.root, spec)
        config = IndexConfig(selection, section.max_lines, section.max_bytes)
        mine, built = _rank_queries(repo, queries, config, work / spec.name, depth)
        rows.update(mine)
        unmeasured.update(built["unmeasured"])
        repos[spec.name] = {"path": spec.path, "queries": len(queries),
                            "config": config.describe(), "scale": built["scale"]}  # fmt: skip
        texts = [q.query for q in queries][: section.compare_queries]
        if spec.replay and section.incremental:
            replay = oldest_first(repo, [resolve(repo, c) for c in spec.replay])
            incremental[spec.name] = robustness.incremental(repo, replay, work / spec.name,
                                                            config, texts)  # fmt: skip
        if section.robustness:
            cases += robustness.damaged_index_cases(built["index"], work / spec.name, texts)
    if section.robustness:
        cases += robustness.hostile_tree_cases(work / "hostile", section.max_bytes)
    results = _results(section, rows, repos, incremental, cases)
    results["meta"]["unmeasured"] = unmeasured
    write_json(results_path(layout), results)
    write_json(layout.metrics, flat_metrics(results))
    write_summary(layout, results)
    return results


def _results(
    section: CodeRetrievalParams,
    rows: Mapping[str, Any],
    repos: dict[str, Any],
    incremental: dict[str, Any],
    cases: list[dict[str, Any]],
) -> dict[str, Any]:
    files = {qid: row["query"].files for qid, row in rows.items()}
    symbols = {qid: row["query"].symbols for qid, row in rows.items()}
    scores = {name: scoring.metrics([r[name] for r in rows.values()], files, symbols)
              for name in PIPELINES if rows}  # fmt: skip
    latencies = {name: [r[name].latency_ms for r in rows.values()] for name in PIPELINES}
    for name, values in latencies.items():
        for repo in repos.values():
            repo["scale"][f"{name} query ms p50"] = percentile(values, 50)
            repo["scale"][f"{name} query ms p95"] = percentile(values, 95)
    sw = section.swebench
    return {
        "kind": KIND,
        "meta": {"machine": f"{platform.node()} ({platform.machine()}, {platform.system()})",
                 "commits_file": section.commits, "depth": section.depth,
                 "queries": len(rows), "repositories": repos},
        "metrics": scores,
        "incremental": incremental,
        "robustness": cases,
        "swebench": swebench.status(sw.enabled, list(sw.instances)),
        "per_query": _per_query(rows),
    }  # fmt: skip


def flat_metrics(results: Mapping[str, Any]) -> dict[str, Any]:
    flat: dict[str, Any] = {"kind": KIND, "queries": results["meta"]["queries"]}
    flat["pipelines"] = results["metrics"]
    flat["incremental_drift"] = {n: r["drift"] for n, r in results["incremental"].items()}
    flat["robustness"] = {c["case"]: c["status"] for c in results["robustness"]}
    flat["scale"] = {n: r["scale"] for n, r in results["meta"]["repositories"].items()}
    return flat


def coverage(results: Mapping[str, Any]) -> Coverage:
    """Queries a tool failed on (git grep) of all pinned: out of every figure, said in the
    headline; none measured: the run exits 3 (agenteval.measured)."""
    failed = results["meta"].get("unmeasured") or {}
    total = results["meta"]["queries"] + len(failed)
    return Coverage(len(failed), total, first_reason(failed.values(), "unknown"), "queries")


def summary_lines(results: Mapping[str, Any]) -> list[str]:
    lines = []
    for name, m in results["metrics"].items():
        shown = ", ".join(f"{k} {v:.3f}" for k, v in m.items() if v is not None)
        lines.append(f"{name}: {shown}")
    for repo, inc in results["incremental"].items():
        lines.append(f"incremental {repo}: {inc['status']} ({inc['stale_chunks']} stale, "
                     f"{inc['missing_chunks']} missing, {inc['score_mismatches']} "
                     "score mismatches)")  # fmt: skip
    for case in results["robustness"]:
        lines.append(f"{case['kind']} {case['case']!r}: {case['status']}")
    lines.append(f"swebench: {results['swebench']['status']} ({results['swebench']['reason']})")
    return lines


TRACKED_CONFIG = {"target": {"kind": "code-index", "model": "bm25"}}


def tracked(layout: Layout) -> tuple[dict[str, Any], list[Path]]:
    """The MLflow run's config and the files logged beside the metrics."""
    return dict(TRACKED_CONFIG), [results_path(layout), layout.reports / "summary.md"]


__all__ = ["HistoryError", "PinsError", "step_evaluate", "summary_lines", "tracked"]
