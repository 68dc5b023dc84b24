"""The bad-input suite, DVC stages: a params.yaml the typed models refuse (what `dvc exp run
-S key=value` writes) ends every stage with `params.yaml:line: key: expected ...` on stderr
and status 2, before any work and without a traceback.

Each stage's `main` runs in this process through `stages.common.exit_status` (what
`run_stage` exits with) in an empty folder holding only the bad params file; one stage also
runs as DVC runs it, a child process, to show the status and stderr end to end.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from stages.common import exit_status

ROOT = Path(__file__).resolve().parents[1]
ROOT_PARAMS = "params.yaml"

# (stage module, params file, its text, line, what the message must name)
CASES: list[tuple[str, str, str, int, str]] = [
    ("infer", ROOT_PARAMS, "run:\n  concurrency: abc\n", 2, "run.concurrency: expected an integer"),
    ("infer", ROOT_PARAMS, "target:\n  kind: chat\n", 1, "target.base_url: required"),
    ("suite", ROOT_PARAMS, "suite:\n  tier: nosuch\n", 2, "suite.tier"),
    ("judge", ROOT_PARAMS, "judge:\n  min_correctness: high\n", 2, "judge.min_correctness"),
    ("score", ROOT_PARAMS, "judge:\n  pass_threshold: x\n", 2, "judge.pass_threshold"),
    ("stats", ROOT_PARAMS, "stats:\n  conf: often\n", 2, "stats.conf"),
    ("track", ROOT_PARAMS, "tracking:\n  enabled: maybe\n", 2, "tracking.enabled"),
    ("fetch", ROOT_PARAMS, "fetch:\n  allow_missing: maybe\n", 2, "fetch.allow_missing"),
    ("controls", ROOT_PARAMS, "controls:\n  nosuch: 1\n", 2, "controls.nosuch: unknown key"),
    ("benchmark qa tasks", "pipelines/qa/params.yaml", "qa:\n  k: abc\n", 2, "qa.k"),
    ("benchmark qa infer", "pipelines/qa/params.yaml", "qa:\n  k: 0\n", 2, "qa.k"),
    (
        "benchmark qa judge",
        "pipelines/qa/params.yaml",
        "qa:\n  judge:\n    base_url: notaurl\n",
        3,
        "qa.judge.base_url",
    ),
    ("benchmark qa score", "pipelines/qa/params.yaml", "qa:\n  nosuch: 1\n", 2, "qa.nosuch"),
    (
        "benchmark qa track",
        "pipelines/qa/params.yaml",
        "tracking:\n  traces: maybe\n",
        2,
        "tracking.traces",
    ),
    (
        "benchmark retrieval answer",
        "pipelines/retrieval/params.yaml",
        "retrieval:\n  nosuch: 1\n",
        2,
        "retrieval.nosuch",
    ),
    (
        "benchmark retrieval evaluate",
        "pipelines/retrieval/params.yaml",
        "retrieval: [1]\n",
        1,
        "retrieval",
    ),
    (
        "benchmark throughput run",
        "pipelines/throughput/params.yaml",
        "throughput:\n  concurrency: [0]\n",
        2,
        "throughput.concurrency.0",
    ),
    (
        "benchmark throughput track",
        "pipelines/throughput/params.yaml",
        "throughput:\n  repeats: x\n",
        2,
        "throughput.repeats",
    ),
    (
        "benchmark code_retrieval evaluate",
        "pipelines/code_retrieval/params.yaml",
        "code_retrieval:\n  depth: deep\n",
        2,
        "code_retrieval.depth",
    ),
    (
        "benchmark code_retrieval track",
        "pipelines/code_retrieval/params.yaml",
        "code_retrieval:\n  nosuch: 1\n",
        2,
        "code_retrieval.nosuch",
    ),
    (
        "benchmark code_retrieval gate",
        "pipelines/code_retrieval/params.yaml",
        "suite:\n  kind: throughput\n",
        1,
        "suite.kind is 'throughput'",
    ),
    (
        "benchmark memory run",
        "pipelines/memory/params.yaml",
        "memory:\n  suite: nosuch\n",
        2,
        "memory.suite",
    ),
    (
        "benchmark memory gate",
        "pipelines/memory/params.yaml",
        "memory:\n  ids: abc\n",
        2,
        "memory.ids",
    ),
    (
        "benchmark memory track",
        "pipelines/memory/params.yaml",
        "memory:\n  model:\n    base_url: ftp://x\n",
        3,
        "memory.model.base_url",
    ),
    ("tasks_run", "pipelines/tasks/params.yaml", "tasks:\n  repeats: abc\n", 2, "tasks.repeats"),
    ("tasks_judge", "pipelines/tasks/params.yaml", "tasks:\n  nosuch: 1\n", 2, "tasks.nosuch"),
    (
        "tasks_score",
        "pipelines/tasks/params.yaml",
        "tasks:\n  concurrency: 0\n",
        2,
        "tasks.concurrency",
    ),
    (
        "tasks_track",
        "pipelines/tasks/params.yaml",
        "tracking:\n  enabled: maybe\n",
        2,
        "tracking.enabled",
    ),
    (
        "sessions_replay",
        "pipelines/sessions/params.yaml",
        "sessions:\n  limit: many\n",
        2,
        "sessions.limit",
    ),
    (
        "sessions_judge",
        "pipelines/sessions/params.yaml",
        "sessions:\n  nosuch: 1\n",
        2,
        "sessions.nosuch",
    ),
    (
        "sessions_score",
        "pipelines/sessions/params.yaml",
        "sessions:\n  pass_grade: high\n",
        2,
        "sessions.pass_grade",
    ),
    (
        "sessions_track",
        "pipelines/sessions/params.yaml",
        "sessions:\n  log_text: maybe\n",
        2,
        "sessions.log_text",
    ),
]


@pytest.mark.parametrize(
    ("stage", "file", "text", "line", "named"),
    CASES,
    ids=[f"{c[0].replace(' ', '_')}-{c[4].split(':')[0]}" for c in CASES],
)
def test_stage_refuses_bad_params(
    stage: str,
    file: str,
    text: str,
    line: int,
    named: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / file).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / file).write_text(text)
    monkeypatch.chdir(tmp_path)
    name, *args = stage.split()  # "benchmark NAME STEP": python -m stages.benchmark NAME STEP
    module = importlib.import_module(f"stages.{name}")
    status = exit_status(lambda: module.main(args) if args else module.main())
    said = capsys.readouterr()
    assert status == 2, said
    assert f"{(tmp_path / file)}:{line}: {named}" in said.err, said.err
    assert "Traceback" not in said.err
    assert [p.name for p in tmp_path.iterdir() if p.name != ".cache"] == [Path(file).parts[0]]


def test_enough_cases() -> None:
    assert len(CASES) >= 25


def test_the_infer_stage_names_a_missing_agent_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dvc exp run -S target.agent=...` naming no agent folder: status 2, the setting and
    the file named, before the suite is read or any unit runs."""
    (tmp_path / "params.yaml").write_text("target:\n  agent: agents/nosuch\n")
    monkeypatch.chdir(tmp_path)
    status = exit_status(importlib.import_module("stages.infer").main)
    said = capsys.readouterr().err
    assert status == 2, said
    assert f"infer: target.agent: {tmp_path / 'agents/nosuch/replies.yaml'} is missing" in said
    assert "Traceback" not in said


def test_a_stage_as_dvc_runs_it(tmp_path: Path) -> None:
    """`dvc exp run -S run.concurrency=abc`: the stage's process exits 2, one clear line."""
    (tmp_path / "params.yaml").write_text("run:\n  concurrency: abc\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "stages/judge.py")],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"{tmp_path / 'params.yaml'}:2: run.concurrency: expected an integer, got 'abc'"
    )
