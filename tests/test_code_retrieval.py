"""The code retrieval benchmark on real git histories: a small repository built here with
real commits (relevance, the moving tree, incremental sync, damaged and hostile cases) and
the committed baseline, copied from a run over this project's own history (the gate)."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agenteval.benchmarks.code_retrieval import robustness
from agenteval.benchmarks.code_retrieval.chunks import chunk_file, symbol_spans
from agenteval.benchmarks.code_retrieval.grep import GrepFailed, grep_rank, identifiers
from agenteval.benchmarks.code_retrieval.history import (
    HistoryError,
    Selection,
    WorkTree,
    fix_query,
)
from agenteval.benchmarks.code_retrieval.index import CodeIndex, IndexConfig, IndexDamaged
from agenteval.benchmarks.code_retrieval.swebench import modified_files, status
from agenteval.benchmarks.gate import GateRefused, gate, load_run
from agenteval.cli import app

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / "eval/baselines/code_retrieval/pr.json"
PY = Selection((".py",), ("tests/",))

BILLING_V1 = '''"""Invoices."""

RATE = 0.2


class Invoice:
    def total(self, amount):
        return amount * (1 + RATE)

    def describe(self):
        return "invoice"


def refund(invoice, amount):
    return -amount
'''
BILLING_V2 = BILLING_V1.replace(
    "return amount * (1 + RATE)", "return round(amount * (1 + RATE), 2)"
)
SHIPPING = """def parcel_weight(items):
    total = 0
    for item in items:
        total += item
    return total
"""


def commit(repo: Path, files: dict[str, str | None], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")  # fmt: skip
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", message], cwd=repo, check=True, env=env)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    repo = tmp_path_factory.mktemp("history") / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    first = {"shop/billing.py": BILLING_V1, "shop/shipping.py": SHIPPING,
             "tests/test_billing.py": "def test(): pass\n"}  # fmt: skip
    ids = {"start": commit(repo, first, "start")}
    ids["round"] = commit(
        repo, {"shop/billing.py": BILLING_V2, "shop/tax.py": "VAT = 0.2\n",
               "tests/test_billing.py": "def test(): assert True\n"},
        "Invoice.total rounds to cents (totals came out with float noise)",
    )  # fmt: skip
    ids["insert"] = commit(
        repo, {"shop/billing.py": BILLING_V2.replace('        return "invoice"\n',
                                                     '        label = "invoice"\n'
                                                     '        return label\n')},
        "describe keeps its label",
    )  # fmt: skip
    ids["remove"] = commit(repo, {"shop/shipping.py": None}, "parcel weights move out")
    return {"repo": repo, **ids}


def test_relevance_is_read_at_the_parent(history: dict[str, Any]) -> None:
    q = fix_query(history["repo"], "shop", history["round"], PY)
    assert q.base == history["start"] and q.query.startswith("Invoice.total rounds")
    # The test file is not indexed, and the file the fix created did not exist at its base.
    assert q.files == ["shop/billing.py"] and q.created == ["shop/tax.py"]
    assert q.symbols == ["shop/billing.py::Invoice.total"]
    changed = fix_query(history["repo"], "shop", history["insert"], PY)
    assert changed.symbols == ["shop/billing.py::Invoice.describe"]
    with pytest.raises(HistoryError, match="not in the history"):
        fix_query(history["repo"], "shop", "0" * 40, PY)


def test_the_tree_moves_by_writing_only_what_changed(
    history: dict[str, Any], tmp_path: Path
) -> None:
    tree = WorkTree(history["repo"], tmp_path / "tree", PY)
    assert tree.move_to(history["start"]) == ["shop/billing.py", "shop/shipping.py"]
    assert tree.move_to(history["round"]) == ["shop/billing.py", "shop/tax.py"]
    assert tree.move_to(history["remove"]) == ["shop/billing.py", "shop/shipping.py"]
    assert not (tmp_path / "tree/shop/shipping.py").exists()
    assert not (tmp_path / "tree/tests").exists()


def test_sync_rechunks_only_changed_files_and_matches_a_fresh_index(
    history: dict[str, Any], tmp_path: Path
) -> None:
    config = IndexConfig(PY)
    tree = WorkTree(history["repo"], tmp_path / "tree", PY)
    tree.move_to(history["start"])
    index = CodeIndex(tree.folder, tmp_path / "store", config)
    assert sorted(index.sync().rechunked) == ["shop/billing.py", "shop/shipping.py"]
    tree.move_to(history["round"])
    report = index.sync()
    assert sorted(report.rechunked) == ["shop/billing.py", "shop/tax.py"] and not report.removed
    tree.move_to(history["remove"])
    assert index.sync().removed == ["shop/shipping.py"]
    result = robustness.incremental(
        history["repo"], [history["start"], history["round"], history["remove"]], tmp_path,
        config, ["invoice total rounding", "parcel weight of items"],
    )  # fmt: skip
    assert result["status"] == "pass" and result["stale_chunks"] == result["missing_chunks"] == 0
    top = index.search("round invoice totals to cents", 5)[0].chunk
    assert (top.path, top.symbol) == ("shop/billing.py", "Invoice.total")


def test_a_saved_index_is_served_only_when_it_can_be_trusted(
    history: dict[str, Any], tmp_path: Path
) -> None:
    tree = WorkTree(history["repo"], tmp_path / "tree", PY)
    tree.move_to(history["insert"])
    index = CodeIndex(tree.folder, tmp_path / "store", IndexConfig(PY))
    index.sync()
    queries = ["invoice total", "refund an invoice", "describe label", "parcel weight"]
    cases = robustness.damaged_index_cases(index, tmp_path / "work", queries)
    assert [c["case"] for c in cases if c["status"] != "pass"] == []
    refused = {c["case"] for c in cases if c["opened"].startswith("refused")}
    assert refused == {c["case"] for c in cases} - {"leftover temp files"}
    assert all(c["recovers"] for c in cases)
    with pytest.raises(IndexDamaged, match="another configuration"):
        CodeIndex.open(tree.folder, tmp_path / "store", IndexConfig(PY, max_lines=10))


def test_a_damage_that_answers_wrongly_fails_its_case(
    history: dict[str, Any], tmp_path: Path
) -> None:
    """An entry re-signed with the right key but another file's chunks is trusted by open:
    the case must then report fail, since the index answers wrongly without an error."""
    tree = WorkTree(history["repo"], tmp_path / "tree", PY)
    tree.move_to(history["start"])
    index = CodeIndex(tree.folder, tmp_path / "store", IndexConfig(PY))
    index.sync()

    def swap(store: Path) -> None:
        forged = CodeIndex(tree.folder, store, index.config)
        records = [c.record() for c in index.chunks["shop/shipping.py"]]
        records[0]["text"] = "def invoice_total(amount):\n    return amount"
        forged.cache.store("shop/shipping.py", index.files["shop/shipping.py"], records)

    (case,) = robustness.damaged_index_cases(
        index, tmp_path / "work", ["parcel weight", "invoice total"], {"forged entry": swap}
    )
    assert case["opened"] == "answered" and case["status"] == "fail"


def test_hostile_trees_pass_or_are_not_run(tmp_path: Path) -> None:
    cases = robustness.hostile_tree_cases(tmp_path, max_bytes=200_000)
    assert {c["status"] for c in cases} == {"pass"}, cases
    assert len(cases) == 7


def test_a_hazard_the_machine_cannot_build_is_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise PermissionError(1, "symbolic links are not allowed here")

    monkeypatch.setattr(os, "symlink", refuse)
    cases = {c["case"]: c for c in robustness.hostile_tree_cases(tmp_path, max_bytes=200_000)}
    for name in ("link out of the repository", "directory loop", "dangling link"):
        assert cases[name]["status"] == "not-run" and "not allowed" in cases[name]["reason"]
    assert cases["Latin-1 text"]["status"] == "pass"


def test_chunks_follow_definitions_and_name_them() -> None:
    chunks = chunk_file("shop/billing.py", BILLING_V1, 60)
    named = [(c.start, c.end, c.symbol) for c in chunks]
    assert named == [(1, 3, None), (6, 6, "Invoice"), (7, 8, "Invoice.total"),
                     (10, 11, "Invoice.describe"), (14, 15, "refund")]  # fmt: skip
    assert [s.name for s in symbol_spans(BILLING_V1)] == [
        "Invoice", "Invoice.total", "Invoice.describe", "refund"]  # fmt: skip
    long = chunk_file("x.py", "def f():\n" + "    x = 1\n" * 30, 10)
    assert [(c.start, c.end, c.symbol) for c in long][:2] == [(1, 10, "f"), (11, 20, "f")]


def test_grep_baseline_weights_identifiers_by_rarity(history: dict[str, Any]) -> None:
    found = identifiers("fix `Invoice.total` and parcel_weight; see camelCase.thing, or 42_1")
    assert sorted(found) == sorted(["Invoice.total", "parcel_weight", "camelCase.thing",
                                    "Invoice", "total", "camelCase", "thing"])  # fmt: skip
    files, symbols = grep_rank(history["repo"], history["start"], PY, "parcel_weight is off")
    assert files == ["shop/shipping.py"] and symbols == ["shop/shipping.py::parcel_weight"]
    assert grep_rank(history["repo"], history["start"], PY, "no identifiers here") == ([], [])


def test_grep_that_fails_is_a_fault_never_an_empty_ranking(
    history: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No match (git grep exits 1) ranks nothing; git grep itself failing (128: a broken
    repository, a crashed tool) makes the query unmeasured: through the CLI, a run whose
    every query lost its baseline ranking exits 3 with git's reason, no figure written as a
    miss."""
    assert grep_rank(history["repo"], history["start"], PY, "nowhere_named_thing") == ([], [])
    tools = tmp_path / "bin"
    tools.mkdir()
    wrapper = tools / "git"
    wrapper.write_text('#!/bin/sh\nfor a in "$@"; do [ "$a" = grep ] && '
                       '{ echo "fatal: injected fault" >&2; exit 128; }; done\n'
                       f'exec {shutil.which("git")} "$@"\n')  # fmt: skip
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GrepFailed, match="injected fault"):
        grep_rank(history["repo"], history["start"], PY, "parcel_weight is off")
    pins = tmp_path / "commits.yaml"
    pins.write_text(json.dumps({"repositories": [{"name": "shop", "path": str(history["repo"]),
        "fixes": [{"commit": history["round"], "why": "rounding"}]}]}))  # fmt: skip
    monkeypatch.chdir(ROOT)
    argv = ["bench", "code-retrieval", "--no-track", "--out", str(tmp_path / "run")]
    for value in (
        f"code_retrieval.commits={pins}",
        "code_retrieval.robustness=false",
        "code_retrieval.incremental=false",
        "code_retrieval.swebench.enabled=false",
    ):
        argv += ["--set", value]  # fmt: skip
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 3, result.output
    assert "nothing measured: 1 of 1 queries unmeasured: git grep failed" in result.output
    assert "injected fault" in result.output
    written = json.loads((tmp_path / "run/results.json").read_text())
    assert written["metrics"] == {} and len(written["meta"]["unmeasured"]) == 1


def test_swebench_is_refused_with_a_reason_offline() -> None:
    found = status(True, ["psf__requests-1234"])
    assert found["status"] == "refused" and found["reason"]
    assert status(False, [])["status"] == "not-run"
    patch = ("diff --git a/src/a.py b/src/a.py\nindex 1..2 100644\n--- a/src/a.py\n+++ b/src/a.py\n"
             "@@ -1 +1 @@\n-x\n+y\ndiff --git a/src/new.py b/src/new.py\nnew file mode 100644\n"
             "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+z\n")  # fmt: skip
    assert modified_files(patch) == ["src/a.py"]


def test_the_committed_baseline_is_a_real_run_of_this_history() -> None:
    base = load_run(BASELINE)
    assert base["kind"] == "code_retrieval" and base["meta"]["queries"] >= 25
    bm25, grep = base["metrics"]["bm25"], base["metrics"]["git grep"]
    assert bm25["file_recall@5"] > grep["file_recall@5"]  # search earns its keep
    assert not base["incremental"]["agenteval"]["drift"]
    assert {c["status"] for c in base["robustness"]} <= {"pass", "not-run"}


def test_the_gate_fails_drops_drift_and_lost_cases_and_refuses_other_queries() -> None:
    base = load_run(BASELINE)
    assert gate(base, base).passed
    worse = copy.deepcopy(base)
    worse["metrics"]["bm25"]["mrr"] -= 0.06
    result = gate(worse, base)
    assert not result.passed and [c["name"] for c in result.checks if not c["ok"]] == ["bm25 mrr"]
    assert gate(worse, base, tolerance=0.1).passed
    slower = copy.deepcopy(base)
    slower["meta"]["repositories"]["agenteval"]["scale"]["first_index_s"] *= 10
    assert gate(slower, base).passed  # scale is shown, never gated
    drifted = copy.deepcopy(base)
    drifted["incremental"]["agenteval"]["drift"] = True
    assert not gate(drifted, base).passed
    lost = copy.deepcopy(base)
    lost["robustness"][0]["status"] = "fail"
    assert not gate(lost, base).passed
    other = copy.deepcopy(base)
    other["per_query"].pop(next(iter(other["per_query"])))
    with pytest.raises(GateRefused, match="other queries"):
        gate(other, base)


def test_cli_gate_exit_codes(tmp_path: Path) -> None:
    base = json.loads(BASELINE.read_text())
    base["metrics"]["bm25"]["file_recall@5"] -= 0.2
    worse = tmp_path / "results.json"
    worse.write_text(json.dumps(base))
    done = subprocess.run(["python", "-m", "agenteval", "gate", str(worse), "--baseline",
                           str(BASELINE)], cwd=ROOT, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 1 and "FAIL bm25 file_recall@5" in done.stdout
