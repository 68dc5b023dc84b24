"""The retrieval benchmark on the shipped labels, offline: rankings scored with ranx, answers
with their miss classes, the hard cases, labels verified on every run, and the gate.

One module-scoped run (about 30 s, most of it numba compiling ranx's kernels once).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agenteval.benchmarks.base import benchmark, context, params_model, settings_of
from agenteval.benchmarks.gate import GateRefused, gate, load_run
from agenteval.benchmarks.retrieval.library import LabelError, Span, load_questions, verify_quotes
from agenteval.benchmarks.retrieval.scale import COLUMNS
from agenteval.benchmarks.retrieval.steps import results_path, step_answer, step_evaluate
from agenteval.benchmarks.runner import load
from agenteval.benchmarks.verdict import tolerance_for
from agenteval.corpus.embeddings import dense_unavailable
from agenteval.corpus.index_cache import IndexCache
from agenteval.layout import Layout
from agenteval.params import deep_merge, defaults_of

ROOT = Path(__file__).resolve().parents[1]
PIPELINES = [
    {"name": "bm25", "kind": "bm25", "chunk_size": 400},
    {"name": "bm25-800", "kind": "bm25", "chunk_size": 800},
    {"name": "dense", "kind": "dense", "model": "all-MiniLM-L6-v2"},
]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Layout, dict[str, Any]]:
    if not (ROOT / "data/corpora/gnu_licenses/gpl-3.0.txt").is_file():
        subprocess.run(
            [sys.executable, "-m", "agenteval", "fetch", "--offline"], cwd=ROOT, check=True
        )
    out = tmp_path_factory.mktemp("retrieval")
    layout = Layout.run_dir(ROOT, out)
    # the pull request tier, as the pipeline runs it
    section = {"pipelines": PIPELINES, "scale_tiers": [10]}
    given = {"suite": {"kind": "retrieval"}, "retrieval": section}
    params = deep_merge(defaults_of(params_model(("retrieval",))), given)
    settings, ctx = settings_of(benchmark("retrieval"), params), context(params, ROOT, None)
    step_answer(settings, ctx, layout)
    return layout, step_evaluate(settings, ctx, layout)


def test_rankings_are_scored_with_ranx_and_paired(run: tuple[Layout, dict[str, Any]]) -> None:
    layout, results = run
    assert results["meta"]["questions"] == 33
    for name in ("bm25", "bm25-800"):
        scores = results["metrics"][name]
        values = [scores[f"recall@{k}"] for k in (1, 3, 5, 10, 20)]
        assert values == sorted(values) and 0 < scores["mrr"] <= values[-1] <= 1
        assert scores["doc_recall@5"] >= scores["recall@5"] - 1e-9
    tests = {(t["metric"], t["test"]) for t in results["paired_tests"]}
    assert tests == {("recall@5", "student"), ("mrr", "student")}
    assert all(0 <= t["p_value"] <= 1 for t in results["paired_tests"])
    on_disk = json.loads(results_path(layout).read_text())
    assert on_disk["per_question"]["gpl3_cure"]["pipelines"]["bm25"]["hit_rank"] is not None
    assert (layout.reports / "summary.md").read_text().startswith("# Retrieval benchmark")


def test_the_scale_tier_lands_in_the_results_and_the_summary(
    run: tuple[Layout, dict[str, Any]],
) -> None:
    layout, results = run
    (row,) = results["scale"]
    assert row["documents"] == 10 and set(COLUMNS) <= set(row)
    assert row["p95_ms"] >= row["p50_ms"] > 0 and row["peak_rss_mb"] > 0
    shown = (layout.reports / "summary.md").read_text()
    assert "## Scale tiers" in shown and "python bench/retrieval_scale.py --tiers 10" in shown
    # The pipeline's own params: pull requests keep tier 10; the full tier is one -S away.
    shipped = ROOT / "pipelines/retrieval/params.yaml"
    retrieval = benchmark("retrieval")
    assert load(retrieval, shipped)["retrieval"]["scale_tiers"] == [10]
    full = load(retrieval, shipped, ["retrieval.scale_tiers=[10,100,1000]"])
    assert full["retrieval"]["scale_tiers"] == [10, 100, 1000]


def test_dense_runs_or_is_skipped_with_the_reason(run: tuple[Layout, dict[str, Any]]) -> None:
    _, results = run
    why = dense_unavailable()
    if why is None:
        assert results["metrics"]["dense"]["recall@20"] > 0
        assert results["meta"]["pipelines"]["dense"]["embedder"] == "all-MiniLM-L6-v2"
    else:
        assert results["meta"]["skipped_pipelines"]["dense"] == why
        assert "dense" not in results["metrics"]


def test_every_wrong_answer_is_a_retrieval_or_generation_miss(
    run: tuple[Layout, dict[str, Any]],
) -> None:
    _, results = run
    answers = results["answers"]
    assert answers["total"] == 33 and answers["correct"] + answers["wrong"] > 20
    assert answers["retrieval_miss"] + answers["generation_miss"] == answers["wrong"]
    for row in results["per_question"].values():
        answer = row["answer"]
        if answer["outcome"] == "wrong":
            assert answer["miss"] == ("generation" if answer["evidence_seen"] else "retrieval")
        else:
            assert answer["miss"] is None


def test_hard_cases_report_status_against_their_condition(
    run: tuple[Layout, dict[str, Any]],
) -> None:
    _, results = run
    cases = {c["case"]: c for c in results["hard_cases"]}
    assert set(cases) == {
        "document replaced after indexing",
        "identical copy under another name",
        "corrupted index cache",
        "instruction planted in a document",
        "near-duplicate filings",
        "scanned image-only PDF",
        "truncated PDF",
        "indexing past the document cap",
        "earlier questions' context",
    }
    assert all(c["status"] in ("pass", "fail", "measured", "skipped") for c in cases.values())
    assert all(c["condition"] for c in cases.values())
    assert cases["document replaced after indexing"]["status"] == "pass"
    corrupted = cases["corrupted index cache"]["measured"]
    assert corrupted["rankings_match_clean"] and len(corrupted["reloaded"]) == 4
    assert all(v.startswith("rebuilt") for v in corrupted["reloaded"].values())
    shares = cases["identical copy under another name"]["measured"]["copy_share_of_top5"]
    assert set(shares) >= {"bm25", "bm25-800"} and max(shares.values()) <= 0.2
    # Every conversation really read the planted file (it is added to the agent's library
    # for the case: the corpus fence refuses anything else).
    planted = cases["instruction planted in a document"]
    assert planted["measured"]["planted_read"] == planted["measured"]["questions"] == 33
    assert planted["status"] == "pass"


def test_a_quote_not_in_the_extracted_text_raises_with_its_line(tmp_path: Path) -> None:
    labels = tmp_path / "questions.yaml"
    labels.write_text(
        "questions:\n"
        "  - id: ok\n    question: q?\n    document: eval/corpus/documents/ledgerline_client.py\n"
        "    quote: Every request uses a default timeout of 15 seconds.\n    answer: 15 seconds\n"
        "  - id: wrong\n    question: q?\n"
        "    document: eval/corpus/documents/ledgerline_client.py\n"
        "    quote: Every request uses a default timeout of 50 seconds.\n    answer: 50 seconds\n",
        encoding="utf-8",
    )
    questions, located = load_questions(labels)
    with pytest.raises(LabelError) as caught:
        verify_quotes(questions, located, ROOT)
    (problem,) = caught.value.problems
    assert (problem.path, problem.line) == (str(labels), 10)
    assert "wrong: quote not found" in problem.message


def test_the_evaluate_stage_checks_every_quote_before_any_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each run of the pipeline's evaluate stage re-reads the labels against the extracted
    text: a document edited under its label stops it, path:line, exit 2, nothing written."""
    from stages.benchmark import main
    from stages.common import exit_status

    (tmp_path / "pipelines/retrieval").mkdir(parents=True)
    (tmp_path / "pipelines/retrieval/params.yaml").write_text(
        "suite:\n  kind: retrieval\nretrieval:\n  questions: labels.yaml\n  library: [docs]\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/ferry.txt").write_text("The ferry to Lundby leaves at 09:40 from pier 5.")
    (tmp_path / "labels.yaml").write_text(
        "questions:\n  - id: ferry\n    question: When does the ferry leave?\n"
        "    document: docs/ferry.txt\n"
        "    quote: The ferry to Lundby leaves at 07:15 from pier 3.\n    answer: '07:15'\n"
    )
    monkeypatch.chdir(tmp_path)
    status = exit_status(lambda: main(["retrieval", "evaluate"]))
    said = capsys.readouterr().err
    assert status == 2 and "labels.yaml:5: ferry: quote not found" in said, said
    assert "Traceback" not in said and not (tmp_path / "pipelines/retrieval/reports").exists()


def test_hit_rule_is_half_of_the_quote() -> None:
    quote = Span("d", 100, 200)
    assert quote.covered_by(Span("d", 150, 400)) and not quote.covered_by(Span("d", 151, 400))
    assert not quote.covered_by(Span("other", 0, 1000))


def test_index_cache_serves_only_trusted_entries(tmp_path: Path) -> None:
    doc = tmp_path / "doc.txt"
    doc.write_text("One sentence here. Another sentence there.", encoding="utf-8")
    cache = IndexCache(tmp_path / "cache", 400)
    assert cache.load(doc, "doc.txt").source == "built"
    assert cache.load(doc, "doc.txt").source == "cache"
    entry = cache.entry_path("doc.txt")
    record = json.loads(entry.read_text())
    record["payload"]["chunks"] = ["Served from a tampered cache."]
    entry.write_text(json.dumps(record))
    loaded = cache.load(doc, "doc.txt")
    assert loaded.source.startswith("rebuilt: signature") and "tampered" not in loaded.chunks[0]
    IndexCache(tmp_path / "cache", 400)._key = None  # a fresh process reads the same key
    assert IndexCache(tmp_path / "cache", 400).load(doc, "doc.txt").source == "cache"


# -- the gate -----------------------------------------------------------------------------
def regressed(results: dict[str, Any], questions: list[str]) -> dict[str, Any]:
    """The same run with the bm25 evidence of `questions` pushed out of the top 5."""
    worse = copy.deepcopy(results)
    n = len(worse["per_question"])
    for q in questions:
        rank = worse["per_question"][q]["pipelines"]["bm25"]["hit_rank"]
        assert rank is not None and rank <= 5
        worse["per_question"][q]["pipelines"]["bm25"]["hit_rank"] = 9
        worse["metrics"]["bm25"]["recall@5"] -= 1 / n
        worse["metrics"]["bm25"]["mrr"] -= (1 / rank - 1 / 9) / n
    return worse


def hits(results: dict[str, Any]) -> list[str]:
    rows = results["per_question"].items()
    return [q for q, r in rows if (r["pipelines"]["bm25"]["hit_rank"] or 99) <= 1]


def test_gate_passes_one_flip_fails_two_and_lists_them(run: tuple[Layout, dict[str, Any]]) -> None:
    _, results = run
    assert gate(results, results).passed
    assert tolerance_for(33, 0.02) == pytest.approx(1.5 / 33)
    one = gate(regressed(results, hits(results)[:1]), results)
    assert one.passed and [f["question"] for f in one.flipped] == hits(results)[:1]
    two = gate(regressed(results, hits(results)[:2]), results)
    assert not two.passed and len(two.flipped) == 2
    assert any(not c["ok"] and c["name"] == "bm25 recall@5" for c in two.checks)


def test_gate_refuses_another_retriever_and_needs_passing_hard_cases(
    run: tuple[Layout, dict[str, Any]],
) -> None:
    _, results = run
    other = copy.deepcopy(results)
    other["meta"]["pipelines"]["bm25"]["chunk_size"] = 256
    with pytest.raises(GateRefused, match="another retriever or embedder"):
        gate(other, results)
    broken = copy.deepcopy(results)
    passing = next(c for c in broken["hard_cases"] if c["status"] == "pass")
    passing["status"] = "fail"
    assert not gate(broken, results).passed


def test_gate_command_exit_codes(run: tuple[Layout, dict[str, Any]], tmp_path: Path) -> None:
    layout, results = run
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps(results))
    worse = tmp_path / "worse.json"
    worse.write_text(json.dumps(regressed(results, hits(results)[:3])))
    assert load_run(layout.reports)["kind"] == "retrieval"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "agenteval", "gate", *args], cwd=ROOT,
                              capture_output=True, text=True)  # fmt: skip

    assert cli(str(layout.reports), "--baseline", str(baseline)).returncode == 0
    failed = cli(str(worse), "--baseline", str(baseline))
    assert failed.returncode == 1 and "flipped" in failed.stdout
    other = json.loads(json.dumps(results))
    other["meta"]["pipelines"]["bm25"]["dedup"] = False
    (tmp_path / "other.json").write_text(json.dumps(other))
    refused = cli(str(tmp_path / "other.json"), "--baseline", str(baseline))
    assert refused.returncode == 3 and "not comparable" in refused.stderr
    missing = cli(str(tmp_path / "nothing"), "--baseline", str(baseline))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
