"""Each setup leaves the copy in the state it promises, and the toybox's facts the tasks rely
on (the weekly report, the log's counts) are recomputed independently."""

from __future__ import annotations

import asyncio
import csv
import hashlib
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from agenteval.benchmarks.tasks import biglog
from agenteval.benchmarks.tasks.boundary import agent_env
from agenteval.benchmarks.tasks.commands import run_command
from agenteval.benchmarks.tasks.definitions import load_task_file
from agenteval.benchmarks.tasks.workspace import Workspace, prepare

ROOT = Path(__file__).resolve().parents[1]
TOYBOX = ROOT / "eval/tasks/toybox"
SPEC = load_task_file(ROOT / "eval/tasks/tasks.json")
ENV = agent_env()


def pytest_in(ws: Workspace, *args: str, timeout: float = 120) -> tuple[int | None, str, bool]:
    argv = ["python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    done = asyncio.run(run_command(argv, ws.work, ENV, timeout))
    return done.exit_code, done.output, done.timed_out


@pytest.fixture
def workspace(request: pytest.FixtureRequest) -> Iterator[Workspace]:
    ws = prepare(TOYBOX, request.param)
    yield ws
    ws.close()


def test_the_pristine_toybox_suite_is_green() -> None:
    ws = prepare(TOYBOX, None)
    try:
        code, output, _ = pytest_in(ws)
        assert code == 0, output
        assert not ws.diff()[1]  # running the suite changed nothing a diff would show
    finally:
        ws.close()


@pytest.mark.parametrize("workspace", ["red_neighbour"], indirect=True)
def test_red_neighbour_fails_on_its_own(workspace: Workspace) -> None:
    code, output, _ = pytest_in(workspace)
    assert code == 1 and "1 failed" in output and "test_legacy_header_is_v1_format" in output


@pytest.mark.parametrize("workspace", ["cold_cache"], indirect=True)
def test_cache_test_fails_cold_and_passes_warm(workspace: Workspace) -> None:
    assert not (workspace.work / ".toybox-cache").exists()
    cold, output, _ = pytest_in(workspace, "tests/test_rates.py")
    assert cold == 1, output
    warm, output, _ = pytest_in(workspace, "tests/test_rates.py")
    assert warm == 0, output  # the failing run warmed the cache
    assert not (workspace.snapshot / ".toybox-cache").exists()  # the snapshot stays cold


@pytest.mark.parametrize("workspace", ["hanging_suite"], indirect=True)
def test_hanging_test_never_finishes_and_the_timeout_fires(workspace: Workspace) -> None:
    code, output, timed_out = pytest_in(workspace, "tests/test_broker.py", timeout=4)
    assert timed_out and code is None
    others, output, _ = pytest_in(
        workspace, "--deselect", "tests/test_broker.py::test_broker_handshake"
    )
    assert others == 0, output


def test_big_log_is_the_same_bytes_every_run_and_matches_the_task() -> None:
    first = prepare(TOYBOX, "big_log")
    second = prepare(TOYBOX, "big_log")
    try:
        a = (first.work / "logs/service.log").read_bytes()
        b = (second.work / "logs/service.log").read_bytes()
    finally:
        first.close()
        second.close()
    assert a == b and len(a) > 1_500_000
    assert hashlib.sha256(a).hexdigest() == hashlib.sha256(biglog.render().encode()).hexdigest()
    # The task's numbers, recomputed from the bytes with another method than the module's.
    levels = [line.split()[1] for line in a.decode().splitlines()]
    errors = [line for line in a.decode().splitlines() if line.split()[1] == "ERROR"]
    codes = Counter(re.search(r"code=(E\d+)", line).group(1) for line in errors)  # type: ignore[union-attr]
    code, count = codes.most_common(1)[0]
    (task,) = [t for t in SPEC.tasks if t.id == "big-log"]
    assert f"{len(errors)} ERROR entries" in task.points[0]
    assert f"{code} ({count} of them)" in task.points[1]
    # and the traps are really there: a naive count overcounts, codes over all lines mislead
    assert a.decode().count("ERROR") > len(errors) and levels.count("WARN") > 0
    everywhere = Counter(re.findall(r"code=(E\d+)", a.decode())).most_common(1)[0][0]
    assert everywhere != code


@pytest.mark.parametrize("workspace", ["user_edits"], indirect=True)
def test_user_edits_are_uncommitted_in_a_reproducible_checkout(workspace: Workspace) -> None:
    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=workspace.work, capture_output=True, text=True, check=True
        ).stdout

    status = git("status", "--porcelain")
    assert " M toybox/money.py" in status and "?? NOTES.md" in status
    assert git("rev-list", "--count", "HEAD").strip() == "1"
    assert "def format_range" not in git("show", "HEAD:toybox/money.py")
    again = prepare(TOYBOX, "user_edits")
    try:
        other = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=again.work, capture_output=True, text=True
        ).stdout
    finally:
        again.close()
    assert other == git("rev-parse", "HEAD")  # fixed author and date: the same commit


@pytest.mark.parametrize("workspace", ["readme_contradicts"], indirect=True)
def test_readme_contradicts_the_code(workspace: Workspace) -> None:
    readme = (workspace.work / "README.md").read_text()
    config = (workspace.work / "toybox/config.py").read_text()
    assert "port 8000" in readme and "TOYBOX_PORT" in readme
    assert "DEFAULT_PORT = 8080" in config and "environ" not in config


@pytest.mark.parametrize("workspace", ["not_installed"], indirect=True)
def test_not_installed_bare_pytest_cannot_import(workspace: Workspace) -> None:
    bare = asyncio.run(run_command("pytest -q -p no:cacheprovider", workspace.work, ENV, 120))
    assert bare.exit_code != 0 and "No module named 'toybox'" in bare.output
    code, output, _ = pytest_in(workspace)
    assert code == 0, output


@pytest.mark.parametrize("workspace", ["patch_for_review"], indirect=True)
def test_patch_applies_and_breaks_the_separator_test(workspace: Workspace) -> None:
    applied = subprocess.run(
        ["git", "apply", "patches/decimal-comma.patch"],
        cwd=workspace.work,
        capture_output=True,
        text=True,
    )
    assert applied.returncode == 0, applied.stderr
    code, output, _ = pytest_in(workspace, "tests/test_money.py")
    assert code == 1 and "test_parse_amount_with_separators" in output


def test_weekly_report_expectation_is_recomputed_independently() -> None:
    import pandas as pd

    frame = pd.read_csv(TOYBOX / "data/sales.csv", dtype={"amount": str})
    dates = pd.to_datetime(frame["date"])
    iso = dates.dt.isocalendar()
    frame["week"] = iso["year"].astype(str) + "-W" + iso["week"].astype(str).str.zfill(2)
    frame["cents"] = frame["amount"].str.replace(".", "", regex=False).astype(int)
    grouped = frame.groupby("week").agg(orders=("cents", "size"), cents=("cents", "sum"))
    expected = ["week,orders,total"] + [
        f"{week},{row.orders},{row.cents / 100:.2f}"
        for week, row in grouped.sort_index().iterrows()
    ]
    (task,) = [t for t in SPEC.tasks if t.id == "weekly-report"]
    assert task.expect is not None
    assert task.expect.probe[0].stdout == "\n".join(expected)
    with (TOYBOX / "data/sales.csv").open() as handle:
        assert len(list(csv.DictReader(handle))) == sum(grouped["orders"])


def test_the_toybox_is_not_collected_by_the_project_tests() -> None:
    done = subprocess.run(
        ["python", "-m", "pytest", "--collect-only", "-q", "eval"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        timeout=120,
    )
    assert "test_durations" not in done.stdout and "no tests" in done.stdout.lower()
