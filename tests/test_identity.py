"""Identity by construction: a participant's digest covers exactly the code, configuration and
ground truth its output depends on, so an agent edit compares and a judge edit refuses."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agenteval.fileio import code_identity, read_json
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.pipeline import run_all

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agenteval"


def _copy_package(tmp: Path) -> Path:
    dest = tmp / "pkg" / "agenteval"
    shutil.copytree(PACKAGE, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def _touch(path: Path) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n# an edit that changes no behaviour, but changes the bytes\n")


def test_identity_is_the_import_closure_of_the_participant(tmp_path: Path) -> None:
    pkg = _copy_package(tmp_path)
    names = ("agenteval.targets.builtin", "agenteval.judges.code", "agenteval.judges.llm")
    before = {name: code_identity(name, pkg) for name in names}
    assert "targets/builtin.py" in before["agenteval.targets.builtin"]
    assert "targets/builtin.py" not in before["agenteval.judges.code"]
    assert "judges/code.py" in before["agenteval.judges.llm"]  # it grades with the code checks
    _touch(pkg / "targets/builtin.py")
    after = {name: code_identity(name, pkg) for name in names}
    assert after["agenteval.targets.builtin"] != before["agenteval.targets.builtin"]
    assert after["agenteval.judges.code"] == before["agenteval.judges.code"]
    assert after["agenteval.judges.llm"] == before["agenteval.judges.llm"]
    _touch(pkg / "judges/numbers.py")
    again = {name: code_identity(name, pkg) for name in names}
    assert again["agenteval.judges.code"] != after["agenteval.judges.code"]
    assert again["agenteval.judges.llm"] != after["agenteval.judges.llm"]
    assert again["agenteval.targets.builtin"] == after["agenteval.targets.builtin"]


def test_lazy_and_from_imports_are_followed(tmp_path: Path) -> None:
    pkg = tmp_path / "agenteval"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("__version__ = '1'\n")
    (pkg / "sub/__init__.py").write_text("")
    (pkg / "a.py").write_text("from agenteval import b\n\ndef f():\n    from .sub import c\n")
    (pkg / "b.py").write_text("import json\n")
    (pkg / "sub/c.py").write_text("from agenteval.sub import d as _d\n")
    (pkg / "sub/d.py").write_text("")
    (pkg / "unused.py").write_text("")
    found = code_identity("agenteval.a", pkg)
    # The package __init__ (which holds the version) is only the path to b, not its code.
    assert sorted(found) == ["a.py", "b.py", "sub/c.py", "sub/d.py"]


def _run(*args: str, cwd: Path, pythonpath: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONUTF8="1")
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run(
        [sys.executable, "-m", "agenteval", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_agent_edit_compares_and_judge_edit_refuses(tmp_path: Path) -> None:
    """Across 'commits' (here: edited copies of the package) an agent A/B is compared, while
    a change to the judge's code refuses and names the file that changed."""
    pkg = _copy_package(tmp_path)
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "eval", repo / "eval")
    shutil.copy(ROOT / "params.yaml", repo / "params.yaml")
    ids = ["--scenario", "quarterly_revenue_lookup", "--scenario", "honest_about_limits"]

    def run(name: str) -> Path:
        out = tmp_path / name
        done = _run(
            "run", *ids, "--out", str(out), "--set", "tracking.enabled=false", "--no-progress",
            cwd=repo, pythonpath=pkg.parent,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return out

    first = run("first")
    _touch(pkg / "targets/builtin.py")
    agent_edited = run("agent-edited")
    ab = _run("compare", str(first), str(agent_edited), "--out", str(tmp_path / "c1"),
              "--no-png", cwd=repo)  # fmt: skip
    assert ab.returncode == 0, ab.stdout + ab.stderr
    assert "(A/B)" in ab.stdout
    _touch(pkg / "judges/code.py")
    judge_edited = run("judge-edited")
    refused = _run("compare", str(agent_edited), str(judge_edited), "--out",
                   str(tmp_path / "c2"), "--no-png", cwd=repo)  # fmt: skip
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert "judge.details.code.judges/code.py" in refused.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    shutil.copytree(ROOT / "eval", tmp_path / "eval")
    return tmp_path


def _params(*sets: str) -> dict[str, object]:
    return load_params(ROOT / "params.yaml", ["suite.ids=[quarterly_revenue_lookup]", *sets])


def _mtimes(out: Path) -> tuple[int, int]:
    name = "quarterly_revenue_lookup/0.json"
    return (
        (out / "data/transcripts" / name).stat().st_mtime_ns,
        (out / "data/verdicts" / name).stat().st_mtime_ns,
    )


def _edit_manifest(repo: Path, fact: str, answer: str, pin: bool = False) -> None:
    path = repo / "eval/corpus/manifest.json"
    manifest = read_json(path)
    for doc in manifest["documents"]:
        for entry in doc["facts"]:
            if entry["id"] == fact:
                entry["answer"] = answer
        if pin and doc["id"] == "harbor_lantern_q2_report":
            from agenteval.fileio import sha256_file

            doc["sha256"] = sha256_file(repo / "eval/corpus/documents" / doc["filename"])
    path.write_text(json.dumps(manifest, indent=2))


def test_document_bytes_and_facts_decide_reuse(repo: Path) -> None:
    layout = Layout.run_dir(repo, repo / "out")
    run_all(_params(), layout)
    first = _mtimes(repo / "out")
    run_all(_params(), layout)
    assert _mtimes(repo / "out") == first  # nothing changed: both reused
    _edit_manifest(repo, "hl_gross_margin", "41.5 percent")  # a fact's answer, not a document
    run_all(_params(), layout)
    second = _mtimes(repo / "out")
    assert second[0] == first[0] and second[1] != first[1]  # transcript kept, re-graded
    report = repo / "eval/corpus/documents/harbor_lantern_q2_report.md"
    report.write_text(report.read_text() + "\nA new closing paragraph.\n")
    _edit_manifest(repo, "hl_gross_margin", "41.5 percent", pin=True)
    run_all(_params(), layout)
    third = _mtimes(repo / "out")
    assert third[0] != second[0] and third[1] != second[1]  # new bytes: asked again


def test_compare_leaves_out_scenarios_whose_ground_truth_changed(repo: Path) -> None:
    from agenteval.gate.compare import compare
    from agenteval.schema.scorecard import Scorecard

    both = "suite.ids=[quarterly_revenue_lookup, honest_about_limits]"
    base = run_all(load_params(ROOT / "params.yaml", [both]), Layout.run_dir(repo, repo / "a"))
    _edit_manifest(repo, "hl_gross_margin", "41.6%")
    cur = run_all(load_params(ROOT / "params.yaml", [both]), Layout.run_dir(repo, repo / "b"))
    result = compare(Scorecard.model_validate(base.model_dump()), cur)
    assert result.exit_code == 0, result.reasons
    assert result.bucket("changed") == ["quarterly_revenue_lookup"]
    (row,) = [r for r in result.scenarios if r.bucket == "changed"]
    assert "ground truth changed" in row.reason
    assert result.overall[0].n == 1  # only the unchanged scenario is paired
