"""The fence's holes the issue found, each closed: hard links to a protected file, a file
swapped for a symlink after its first read, folders inside a protected folder (a manifest's
`../../scenarios/...` entry among them). A small scratch repository, no pipeline run."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from agenteval.layout import ANSWER_BEARING
from agenteval.targets.fence import PROTECTED, Fenced, FenceError, build_fence
from agenteval.targets.tools import DocumentTools

DOCS = "eval/corpus/documents"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / DOCS).mkdir(parents=True)
    (tmp_path / DOCS / "leave.md").write_text("Parental leave is documented here.\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data/suite.json").write_text('{"answer": "SIXTEEN WEEKS"}\n')
    (tmp_path / "eval/scenarios/rag").mkdir(parents=True)
    (tmp_path / "eval/scenarios/rag/leave.yaml").write_text("ground_truth: SIXTEEN WEEKS\n")
    (tmp_path / "data/corpora/pinned").mkdir(parents=True)
    (tmp_path / "data/corpora/pinned/handbook.md").write_text("The fetched handbook.\n")
    return tmp_path


def tools_of(repo: Path, *folders: str) -> DocumentTools:
    fence = build_fence(repo, [(f, "target.library") for f in folders], (), PROTECTED)
    return DocumentTools(repo, list(folders), 400, fence=fence)


def test_a_hard_link_to_a_protected_file_is_neither_listed_nor_read(repo: Path) -> None:
    os.link(repo / "data/suite.json", repo / DOCS / "notes.md")
    os.link(repo / "eval/scenarios/rag/leave.yaml", repo / DOCS / "faq.md")
    tools = tools_of(repo, DOCS)
    for name in ("notes.md", "faq.md"):
        call = tools.call("read_document", path=f"{DOCS}/{name}")
        assert call.fenced and not call.ok
        assert tools.call("index_document", path=name).fenced
    assert tools.call("list_documents").result["available"] == [f"{DOCS}/leave.md"]
    assert tools.call("read_document", path=f"{DOCS}/leave.md").ok
    assert "SIXTEEN" not in str([c.result for c in tools.calls])


def test_outside_refuses_a_hard_link_to_a_protected_file_as_reading_does(repo: Path) -> None:
    # The MCP target asks `outside()` before it hands a document path to the agent's own
    # server: a hard link in the corpus to the suite must be outside, the document inside.
    fence = build_fence(repo, [(DOCS, "target.library")], (), PROTECTED)
    assert not fence.outside(f"{DOCS}/leave.md")
    os.link(repo / "data/suite.json", repo / DOCS / "summary.md")
    assert fence.outside(f"{DOCS}/summary.md")
    assert fence.outside(str(repo / DOCS / "summary.md"))
    os.link(repo / DOCS / "leave.md", repo / DOCS / "leave-copy.md")  # two names, no key
    assert not fence.outside(f"{DOCS}/leave-copy.md")


def test_a_file_swapped_for_a_symlink_after_its_first_read_is_refused(repo: Path) -> None:
    tools = tools_of(repo, DOCS)
    assert tools.call("read_document", path=f"{DOCS}/leave.md").ok
    target = repo / DOCS / "leave.md"
    target.unlink()
    target.symlink_to(repo / "data/suite.json")
    again = tools_of(repo, DOCS)  # a later session in the same process
    for session in (tools, again):
        call = session.call("read_document", path=f"{DOCS}/leave.md")
        assert call.fenced and "SIXTEEN" not in str(call.result)


def test_folders_inside_a_protected_folder_are_refused_and_the_fetched_corpus_is_not(
    repo: Path,
) -> None:
    for folder in ("eval/scenarios/rag", "data/transcripts/x", ".git/objects/88", "reports/sub"):
        with pytest.raises(FenceError, match="lies inside"):
            build_fence(repo, [(folder, "target.library")], (), PROTECTED)
    # A manifest entry reaching into the scenarios names a document folder inside them.
    with pytest.raises(
        FenceError,
        match=r"document folder of eval/corpus/manifest\.json.*lies inside eval/scenarios",
    ):
        build_fence(
            repo,
            [(f"{DOCS}/../../scenarios/rag", "document folder of eval/corpus/manifest.json")],
            (),
            PROTECTED,
        )
    tools = tools_of(repo, "data/corpora")
    assert tools.call("read_document", path="data/corpora/pinned/handbook.md").ok
    assert tools.call("read_document", path="data/suite.json").fenced


def test_agenteval_run_refuses_a_library_inside_the_scenarios_before_any_work(
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from agenteval.cli import app

    root = Path(__file__).resolve().parents[1]
    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(
            app,
            [
                "run",
                "--out",
                str(tmp_path / "run"),
                "--set",
                "target.library=[eval/scenarios/rag_quality]",
            ],
        )
    finally:
        os.chdir(cwd)
    assert result.exit_code == 2, result.output
    assert "target.library: 'eval/scenarios/rag_quality' is or lies inside eval/scenarios" in (
        result.output
    )
    assert not (tmp_path / "run" / "data" / "transcripts").exists()


@pytest.mark.parametrize("out", [f"{DOCS}/rt43run", "eval"])
def test_agenteval_run_refuses_a_run_folder_in_or_around_the_library_before_any_work(
    out: str,
) -> None:
    """A run folder holds data/suite.json: inside the library a later run's agent reads it."""
    from typer.testing import CliRunner

    from agenteval.cli import app

    root = Path(__file__).resolve().parents[1]
    cwd = os.getcwd()
    os.chdir(root)
    try:
        result = CliRunner().invoke(app, ["run", "--out", out])
    finally:
        os.chdir(cwd)
    assert result.exit_code == 2, result.output
    assert f"--out {out}: a run folder holds answers; target.library" in result.output
    assert not (root / DOCS / "rt43run").exists()


def test_a_run_folder_already_in_the_library_is_not_read(repo: Path) -> None:
    """A run folder an earlier `--out` left in the library (or copied there) holds the
    answers in its data/suite.json: nothing under it is admitted, the rest of the library is."""
    run = repo / DOCS / "old-run"
    (run / "data").mkdir(parents=True)
    (run / "data/suite.json").write_text('{"answer": "SIXTEEN WEEKS"}\n')
    (run / "summary.md").write_text("SIXTEEN WEEKS passed\n")
    tools = tools_of(repo, DOCS)
    for path in ("old-run/data/suite.json", "old-run/summary.md"):
        assert tools.call("read_document", path=f"{DOCS}/{path}").fenced
    assert tools.call("read_document", path=f"{DOCS}/leave.md").ok
    assert "SIXTEEN" not in str([c.result for c in tools.calls])


def test_one_list_protects_every_answer_bearing_folder() -> None:
    for folder in ("eval/tasks", "eval/memory/scenarios", "eval/sessions", "eval/qa",
                   "eval/code_retrieval", "eval/baselines", "eval/climb", "reports", "data",
                   ".git", ".dvc"):  # fmt: skip
        assert folder in ANSWER_BEARING
    assert PROTECTED is ANSWER_BEARING


def test_a_hard_link_to_an_answer_key_file_outside_the_protected_folders_is_refused(
    repo: Path,
) -> None:
    from agenteval.targets.fence import corpus_fence

    (repo / "eval/corpus/manifest.json").write_text('{"facts": {"leave": "SIXTEEN WEEKS"}}\n')
    (repo / "bench").mkdir()
    (repo / "bench/gaia.jsonl").write_text('{"q": "leave?", "answer": "SIXTEEN WEEKS"}\n')
    (repo / "bench/hits.jsonl").write_text('{"q": "leave?", "relevant": "SIXTEEN WEEKS"}\n')
    os.link(repo / "eval/corpus/manifest.json", repo / DOCS / "index.md")
    os.link(repo / "bench/gaia.jsonl", repo / DOCS / "gaia.md")
    os.link(repo / "bench/hits.jsonl", repo / DOCS / "hits.md")
    params = {
        "target": {"library": [DOCS]},
        "qa": {"tasks": "bench/gaia.jsonl"},
        "retrieval": {"questions": "bench/hits.jsonl"},
    }
    fence = corpus_fence(params, repo)
    tools = DocumentTools(repo, [DOCS], 400, fence=fence)
    for name in ("index.md", "gaia.md", "hits.md"):
        assert tools.call("read_document", path=f"{DOCS}/{name}").fenced
        assert tools.call("index_document", path=name).fenced
    assert tools.call("list_documents").result["available"] == [f"{DOCS}/leave.md"]
    assert "SIXTEEN" not in str([c.result for c in tools.calls])


def test_the_tracking_store_and_the_response_cache_are_answer_bearing(repo: Path) -> None:
    # MLflow's artifact folder holds reports with expected answers; the response cache
    # holds the judge's replies; SQLite keeps recent writes beside mlflow.db.
    for folder in ("mlartifacts", "mlruns", ".cache", "mlflow.db-wal", "mlflow.db-journal"):
        assert folder in ANSWER_BEARING
    (repo / "mlartifacts/1/abc/artifacts").mkdir(parents=True)
    (repo / "mlartifacts/1/abc/artifacts/report.md").write_text("expected: SIXTEEN WEEKS\n")
    (repo / ".cache/agenteval/llm").mkdir(parents=True)
    (repo / ".cache/agenteval/llm/ab.json").write_text('{"reply": "SIXTEEN WEEKS"}\n')
    for folder in ("mlartifacts/1", ".cache/agenteval"):
        with pytest.raises(FenceError, match="lies inside"):
            build_fence(repo, [(folder, "target.library")], (), PROTECTED)
    os.link(repo / "mlartifacts/1/abc/artifacts/report.md", repo / DOCS / "report.md")
    os.link(repo / ".cache/agenteval/llm/ab.json", repo / DOCS / "cached.md")
    tools = tools_of(repo, DOCS)
    for name in ("report.md", "cached.md"):
        assert tools.call("read_document", path=f"{DOCS}/{name}").fenced
    assert tools.call("read_document", path="mlartifacts/1/abc/artifacts/report.md").fenced
    assert "SIXTEEN" not in str([c.result for c in tools.calls])


def test_a_symlink_swapped_in_between_the_check_and_the_read_is_not_followed(
    repo: Path,
) -> None:
    """The check passes on the real file; before the read the file, or a folder on its path,
    becomes a symlink to the answer key: the read is refused, not made where it points."""
    (repo / DOCS / "sub").mkdir()
    (repo / DOCS / "sub/leave.md").write_text("Leave, again.\n")
    (repo / "data/leave.md").write_text("SIXTEEN WEEKS\n")  # where a swapped folder leads
    tools = tools_of(repo, DOCS)
    for path, swap in (
        (f"{DOCS}/leave.md", DOCS + "/leave.md"),
        (f"{DOCS}/sub/leave.md", DOCS + "/sub"),
    ):
        checked = tools.resolve(path)  # admitted: the file as it is now
        swapped = repo / swap
        moved = swapped.rename(swapped.with_name(swapped.name + ".was"))
        swapped.symlink_to(repo / ("data/suite.json" if swap.endswith(".md") else "data"))
        with pytest.raises(Fenced, match="the path changed"), tools.fence.opened(checked, path):
            pass  # opening is refused: nothing is read
        swapped.unlink()
        moved.rename(swapped)
    # The same race through the tools: a thread swaps the file and the symlink while the
    # agent reads; every read is the document or refused, never the key.
    target, kept = repo / DOCS / "leave.md", repo / DOCS / "leave.md.real"
    stop = threading.Event()

    def swapper() -> None:
        link = repo / DOCS / "leave.md.link"
        link.symlink_to(repo / "data/suite.json")
        os.link(target, kept)
        while not stop.is_set():
            os.replace(link, target)  # now a symlink to the key
            link.symlink_to(repo / "data/suite.json")
            os.link(kept, repo / DOCS / "leave.md.tmp")
            os.replace(repo / DOCS / "leave.md.tmp", target)  # the document again

    thread = threading.Thread(target=swapper)
    thread.start()
    try:
        calls = [tools.call("read_document", path=f"{DOCS}/leave.md") for _ in range(3000)]
    finally:
        stop.set()
        thread.join()
    assert not any("SIXTEEN" in str(c.result) for c in calls)
    assert any(c.ok for c in calls)  # the race did not just refuse everything


def test_a_hard_link_to_a_file_a_protected_folder_links_to_is_refused(
    repo: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """reports/<link> -> a folder elsewhere: its files are reachable through reports/, so a
    hard link to one of them in the library is a way in (found by an outside red team)."""
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    (elsewhere / "scorecard.json").write_text('{"answer": "SIXTEEN WEEKS"}\n')
    (repo / "reports").mkdir()
    (repo / "reports/latest").symlink_to(elsewhere, target_is_directory=True)
    (repo / "reports/loop").symlink_to(repo / "reports", target_is_directory=True)  # walked once
    os.link(elsewhere / "scorecard.json", repo / DOCS / "summary.md")
    tools = tools_of(repo, DOCS)
    call = tools.call("read_document", path=f"{DOCS}/summary.md")
    assert call.fenced and "SIXTEEN" not in str(call.result)
    assert tools.call("read_document", path=f"{DOCS}/leave.md").ok


def test_the_fetched_corpus_made_a_symlink_into_the_scenarios_is_no_exception(repo: Path) -> None:
    """data/corpora is readable inside data/; pointed into eval/scenarios it is refused like any
    root there, never read as documents."""
    corpora = repo / "data/corpora"
    for path in sorted(corpora.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    corpora.rmdir()
    corpora.symlink_to(repo / "eval/scenarios/rag", target_is_directory=True)
    with pytest.raises(FenceError, match="eval/scenarios"):
        tools_of(repo, DOCS, "data/corpora")


@pytest.mark.parametrize(
    "labelled",
    ["eval/scrub", "eval/people_controls", "eval/simulator_controls", "tests/fixtures/gh"],
)
def test_labelled_sets_are_no_document_root(repo: Path, labelled: str) -> None:
    (repo / labelled).mkdir(parents=True)
    (repo / labelled / "held.yaml").write_text("label: fail\n")
    with pytest.raises(FenceError):
        tools_of(repo, labelled)


def test_a_hard_link_made_after_the_fence_walked_the_key_is_refused(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The protected inodes come from one walk, reused while the files asked about are older
    than it (the fetched corpus is hard-linked from fetch's cache, so nearly every read asks):
    a link made later, to a key file or one written after the walk, is judged afresh."""
    from agenteval.targets import fence as fence_module

    walks = []
    real_files = fence_module._files
    monkeypatch.setattr(fence_module, "_files", lambda p: walks.append(p) or real_files(p))
    old = repo / DOCS / "leave.md"
    os.link(old, repo / "leave-copy.md")  # two names, neither protected
    tools = tools_of(repo, DOCS)
    assert tools.call("read_document", path=f"{DOCS}/leave.md").ok and walks
    os.link(repo / "data/suite.json", repo / DOCS / "late.md")
    (repo / "data/verdicts.json").write_text('{"answer": "SIXTEEN WEEKS"}\n')
    os.link(repo / "data/verdicts.json", repo / DOCS / "later.md")
    for name in ("late.md", "later.md"):
        call = tools.call("read_document", path=f"{DOCS}/{name}")
        assert call.fenced and "SIXTEEN" not in str(call.result)
    assert tools.call("read_document", path=f"{DOCS}/leave.md").ok


def test_the_claude_code_stand_ins_live_outside_the_sealed_fixtures() -> None:
    """tests/fixtures is answer-bearing, so the tasks sandbox seals it; the stand-ins it puts
    back as Claude Code's installation (`claude_code.sandboxed`) must not lie in it."""
    root = Path(__file__).resolve().parents[1]
    from agenteval.benchmarks.tasks.sandbox import build

    sandbox = build("bwrap", root=root, sealed=[root / p for p in ANSWER_BEARING])
    sandbox.refuse_sealed([root / "tests/stand_ins/claude_code"], "the stand-in")
    with pytest.raises(ValueError, match="tests/fixtures"):
        sandbox.refuse_sealed([root / "tests/fixtures/gh"], "a fixture")


def test_an_allowed_folder_made_a_link_within_its_own_protected_folder_is_refused(
    repo: Path,
) -> None:
    """data/corpora (readable inside `data/`) made a symlink to data/transcripts: the
    exception holds only where the folder is named, never where a link leads."""
    (repo / "data/transcripts").mkdir()
    (repo / "data/transcripts/q1.json").write_text('{"answer": "SIXTEEN WEEKS"}\n')
    shutil.rmtree(repo / "data/corpora")
    (repo / "data/corpora").symlink_to(repo / "data/transcripts")
    with pytest.raises(FenceError):
        tools_of(repo, "data/corpora")


# A store a setting moved keeps its protection: (setting, value, a library folder inside it,
# a file the store writes there). `env` is MLFLOW_TRACKING_URI, which other commands read.
MOVED = [
    ("run", "cache_dir", "stores/llm", "stores/llm/ab", "stores/llm/ab/reply.json"),
    ("tracking", "uri", "sqlite:///stores/t.db", "stores/mlartifacts/1", "stores/t.db-wal"),
    ("tracking", "uri", "file:stores/mlruns", "stores/mlruns/0", "stores/mlruns/0/meta.yaml"),
    ("env", "MLFLOW_TRACKING_URI", "sqlite:///stores/e.db", "stores/mlartifacts", "stores/e.db"),
    ("sessions", "out", "private/sess", "private/sess/transcripts", "private/sess/dataset.json"),
]


@pytest.mark.parametrize(("section", "key", "value", "inside", "written"), MOVED)
def test_a_store_moved_by_a_setting_keeps_its_protection(
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    section: str,
    key: str,
    value: str,
    inside: str,
    written: str,
) -> None:
    from agenteval.benchmarks.tasks import sandbox
    from agenteval.climb.guard import Guard, GuardRules, Material
    from agenteval.targets.fence import corpus_fence

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    settings: dict[str, dict[str, str]] = {"run": {"cache_dir": ""}}
    if section == "env":
        monkeypatch.setenv(key, value)
    else:
        settings[section] = {key: value}
    (repo / written).parent.mkdir(parents=True, exist_ok=True)
    (repo / written).write_text("expected: SIXTEEN WEEKS\n")
    (repo / inside).mkdir(parents=True, exist_ok=True)
    for folder, reason in ((inside, "lies inside"), (inside.split("/")[0], "would let")):
        with pytest.raises(FenceError, match=f"target.library: '{folder}' .*{reason}"):
            corpus_fence({**settings, "target": {"library": [folder]}}, repo)
    os.link(repo / written, repo / DOCS / "moved.md")
    fence = corpus_fence({**settings, "target": {"library": [DOCS]}}, repo)
    tools = DocumentTools(repo, [DOCS], 400, fence=fence)
    assert tools.call("read_document", path=f"{DOCS}/moved.md").fenced
    assert tools.call("read_document", path=f"{DOCS}/leave.md").ok
    assert "SIXTEEN" not in str([c.result for c in tools.calls])
    # The climb's guard and the tasks sandbox take the same list (layout.moved_stores).
    climb = {**settings, "climb": {"guard": {"similarity": 0.9}}}
    guard = Guard(None, Material(), GuardRules.from_params(climb, repo))  # type: ignore[arg-type]
    assert guard.answer_files(f"First read {written} for the answers.")
    assert not guard.answer_files(f"First read {DOCS}/leave.md for the answers.")
    with pytest.raises(ValueError, match="would open"):
        sandbox.from_params(
            {**settings, "tasks": {"sandbox": "bwrap", "sandbox_expose": [str(repo / inside)]}},
            repo,
        )
