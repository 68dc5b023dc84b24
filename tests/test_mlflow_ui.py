"""The MLflow UI as a person uses it: `mlflow ui` on a real store, opened in headless Chromium.

By default the store is made here by two small runs of the offline pipeline (two scenarios,
`target.params.top_k` 4 and then 2). Set AGENTEVAL_UI_STORE to a store's URI (or its
mlflow.db) to check an existing one instead, e.g. the repository's own after `dvc repro` and
two `dvc exp run`. The browser is Debian's `chromium` driven by Playwright (`.ci/run` installs
it with apt-get when missing); without one the tests are skipped and say so. Every page the
tests look at is saved as a screenshot in test-artifacts/mlflow-ui/.

Costs about a minute on two shared cores: one `mlflow ui` (its start is most of it) and one
browser for the whole module.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"  # before anything imports mlflow

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts" / "mlflow-ui"
STORE_ENV = "AGENTEVAL_UI_STORE"
EXPERIMENT = "agenteval"
SCENARIOS = ["false_premise", "incident_followups"]
SESSION_KEY = "mlflow.trace.session"
GOAL_KEY = "mlflow.simulation.goal"
TIMEOUT_MS = 180_000  # the UI's first render on two shared, busy cores
START_S = 300  # `mlflow ui` imports MLflow and migrates the store before it answers
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--disable-background-networking", "--disable-component-update"]  # fmt: skip
ISOLATED_ENV = ("MLFLOW_TRACKING_URI", "DVC_ROOT", "DVC_EXP_NAME", "DVC_EXP_BASELINE_REV")


@dataclass
class Store:
    uri: str
    experiment_id: str
    runs: list[Any]  # newest first
    client: Any


def chromium() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no Chromium on this machine: `apt-get install chromium` (.ci/run does)")


def store_uri(value: str) -> str:
    return value if "://" in value else f"sqlite:///{Path(value).resolve().as_posix()}"


def make_store(folder: Path) -> str:
    """Two small runs of the offline pipeline that differ in one param, logged with traces."""
    from agenteval.layout import Layout
    from agenteval.params import load_params
    from agenteval.pipeline import run_all
    from agenteval.tracking.run import log_evaluation

    uri = store_uri(str(folder / "mlflow.db"))
    for top_k in (4, 2):
        overrides = [f"suite.ids={json.dumps(SCENARIOS)}", f"target.params.top_k={top_k}"]
        params = load_params(ROOT / "params.yaml", overrides)
        layout = Layout.run_dir(ROOT, folder / f"run-top_k-{top_k}")
        run_all(params, layout)
        logged = log_evaluation(layout, params, uri=uri, experiment=EXPERIMENT)
        assert logged is not None and logged.created
    return uri


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    from mlflow import MlflowClient

    with pytest.MonkeyPatch.context() as mp:
        for name in ISOLATED_ENV:
            mp.delenv(name, raising=False)
        given = os.environ.get(STORE_ENV)
        uri = store_uri(given) if given else make_store(tmp_path_factory.mktemp("ui-store"))
        client = MlflowClient(tracking_uri=uri)
        experiment = client.get_experiment_by_name(EXPERIMENT)
        assert experiment is not None, f"{uri} has no experiment {EXPERIMENT!r}"
        found = client.search_runs(
            [experiment.experiment_id],
            filter_string="tags.`agent.model` != ''",  # evaluations, not health reports
            order_by=["start_time DESC"],
        )
        assert len(found) >= 2, "the compare view needs two evaluation runs"
        runs = [client.get_run(r.info.run_id) for r in found]  # with their model inputs
        yield Store(uri, experiment.experiment_id, runs, client)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(base: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"mlflow ui exited {process.returncode}:\n{log.read_text()[-3000:]}")
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{base}/health", timeout=5) as up,
        ):
            if up.status == 200:
                return
        time.sleep(1)
    pytest.fail(f"mlflow ui did not answer within {START_S} s:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def ui(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`mlflow ui` on the store, on a free loopback port, stopped with its workers after."""
    folder = tmp_path_factory.mktemp("ui")
    port, log = free_port(), folder / "mlflow-ui.log"
    command = [sys.executable, "-m", "mlflow", "ui", "--backend-store-uri", store.uri,
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in ISOLATED_ENV}
    # No job runner: its seven huey consumers would only compete for the two cores.
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_up(base, process, log)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):  # any worker that outlived its parent
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def page(ui: str) -> Iterator[Any]:
    executable = chromium()
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=BROWSER_ARGS
        )
        context = browser.new_context(viewport={"width": 1600, "height": 1000}, base_url=ui)
        opened = context.new_page()
        opened.set_default_timeout(TIMEOUT_MS)
        try:
            yield opened
        finally:
            browser.close()


def visit(
    page: Any,
    path: str,
    waits_for: str | re.Pattern[str],
    hints: tuple[str, ...] = ("Got it", "Close"),
) -> str:
    """Open `path`, wait until `waits_for` shows, close MLflow's first-visit hints, and return
    the page's text with runs of whitespace as one space. (3.18 opens a session as a drawer
    whose own button is "Close": a session is visited without that hint.)"""
    page.goto(f"/#{path}")
    page.get_by_text(waits_for).first.wait_for()
    for hint in hints:
        button = page.get_by_role("button", name=hint)
        if button.count():
            with contextlib.suppress(Exception):  # a hint that went by itself
                button.last.click(timeout=2000)
    return " ".join(page.inner_text("body").split())


def shot(page: Any, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def tag_shown(text: str, key: str, value: str) -> bool:
    return re.search(rf"{re.escape(key)}\s*:\s*{re.escape(value)}", text) is not None


def test_run_page_shows_agent_judge_and_judged_pass_rate(page: Any, store: Store) -> None:
    run = store.runs[0]
    tags, metrics = run.data.tags, run.data.metrics
    text = visit(page, f"/experiments/{store.experiment_id}/runs/{run.info.run_id}", "Metrics (")
    shot(page, "run")
    assert run.info.run_name in text
    assert tags["agent.model"] in run.info.run_name
    for key in ("agent.model", "agent.digest", "judge.kind", "judge.digest", "suite.digest"):
        assert tag_shown(text, key, tags[key]), key
    status = {"FINISHED": "Finished", "FAILED": "Failed"}[run.info.status]
    assert f"Status {status}" in text
    # The description says which conversations are traced, so a sample never passes for all.
    assert f"Traces (agenteval.traces={tags['agenteval.traces']})" in text
    row = page.get_by_role("row").filter(has=page.get_by_text("judged_pass_rate", exact=True))
    cells = row.first.inner_text()
    shown = [float(n) for n in re.findall(r"\d+(?:\.\d+)?", cells.split("judged_pass_rate")[1])]
    assert shown and shown[0] == pytest.approx(metrics["judged_pass_rate"], abs=0.01), cells
    model = store.client.get_logged_model(run.inputs.model_inputs[0].model_id)
    assert model.name in cells  # the headline metric is linked to the agent version


def test_verdict_table_shows_every_turn_with_its_trace(page: Any, store: Store) -> None:
    run = store.runs[0]
    rows = store.client.download_artifacts(run.info.run_id, "verdicts.json")
    table = json.loads(Path(rows).read_text(encoding="utf-8"))
    path = f"/experiments/{store.experiment_id}/runs/{run.info.run_id}/artifacts/verdicts.json"
    text = visit(page, path, "trace_id")
    shot(page, "verdict-table")
    for column in ("scenario_id", "turn", "status", "turn_score", "root_cause", "trace"):
        assert column in table["columns"] and column in text, column
    ids = table["columns"].index("trace_id")
    traced = [row[ids] for row in table["data"] if row[ids]]
    assert traced and all(trace_id in text for trace_id in traced)
    assert all(scenario in text for scenario in SCENARIOS)


def test_agent_versions_list_every_agent_that_was_run(page: Any, store: Store) -> None:
    models = store.client.search_logged_models(experiment_ids=[store.experiment_id])
    ran = {m.model_id for run in store.runs for m in run.inputs.model_inputs}
    assert ran and ran <= {m.model_id for m in models}
    names = {m.name for m in models if m.model_id in ran}
    text = visit(page, f"/experiments/{store.experiment_id}/models", sorted(names)[0])
    shot(page, "agent-versions")
    for name in names:
        assert name in text, name
    datasets = {d.dataset.name for run in store.runs for d in run.inputs.dataset_inputs}
    text = visit(page, f"/experiments/{store.experiment_id}/datasets", sorted(datasets)[0])
    shot(page, "datasets")
    assert all(name in text for name in datasets)


def session_turns(store: Store) -> Counter[str]:
    """How many traces (turns) each session of the experiment holds in the store."""
    traces = store.client.search_traces(
        locations=[store.experiment_id], include_spans=False, max_results=5000
    )
    return Counter(t.info.trace_metadata.get(SESSION_KEY) for t in traces)


def scenario_turns(store: Store, run: Any, tmp: Path) -> dict[str, int]:
    """session -> n_turns, from the run's scenarios.parquet (what the scorecard recorded)."""
    import pandas as pd

    path = store.client.download_artifacts(run.info.run_id, "scenarios.parquet", str(tmp))
    table = pd.read_parquet(path)
    return {str(r.session): int(r.n_turns) for r in table.itertuples() if r.n_turns}


def ui_groups_traces_by_session() -> bool:
    """Whether this MLflow's UI groups the Traces page by session (`?groupBy=session`, not in
    3.9.0, whose sessions are listed on the Sessions tab, `/chat-sessions`) and compares two
    evaluation runs session by session. Read from the UI's own bundle: the feature, not a
    version number guessed for it."""
    import mlflow

    bundle = Path(mlflow.__file__).parent / "server" / "js" / "build" / "static" / "js"
    grouping = re.compile(r'="groupBy",[A-Za-z_$]+="session"')
    return any(grouping.search(f.read_text(errors="replace")) for f in bundle.glob("*.js"))


def test_each_session_is_one_scenario_iteration_with_its_turns_and_judgment(
    page: Any, store: Store, tmp_path: Path
) -> None:
    stored = session_turns(store)
    run = store.runs[0].info.run_id[:12]
    newest_session = re.compile(rf"^\S+\.\d+\.{run}$")  # scenario.iteration.run id
    listed_at = "traces?groupBy=session" if ui_groups_traces_by_session() else "chat-sessions"
    path = f"/experiments/{store.experiment_id}/{listed_at}"
    text = visit(page, path, newest_session)
    shot(page, "sessions")
    listed = {session: text.count(session) for session in stored if session in text}
    assert listed and set(listed.values()) == {1}, listed  # one row per session
    newest = scenario_turns(store, store.runs[0], tmp_path)
    assert newest and all(stored[session] == n for session, n in newest.items())
    for session, turns in sorted(newest.items())[:2]:
        path = f"/experiments/{store.experiment_id}/chat-sessions/{session}"
        visit(page, path, re.compile(rf"^Turn {turns}$"), hints=("Got it",))
        open_session_assessments(page)
        text = " ".join(page.inner_text("body").split())
        shot(page, f"session-{session}")
        shown = {int(n) for n in re.findall(r"\bTurn (\d+)\b", text)}
        assert shown == set(range(1, turns + 1)), (session, shown)
        for name in ("scenario_status", "scenario_score", "judge_verdict"):
            assert name in text, name
        assert re.search(r"correctness\s*:\s*\d", text)  # the judge's per-turn scores


def open_session_assessments(page: Any) -> None:
    """Show the session's own assessments (its status, score and verdict): 3.9.0 ("Session
    scorers") and 3.17 ("Session assessments") open a session with the pane shown, 3.18 folds
    it behind the header's Assess button."""
    pane = page.get_by_text(re.compile(r"Session (assessments|scorers)")).first
    toggle = page.locator("[data-component-id$='assessments-pane-toggle'] >> visible=true").first
    pane.or_(toggle).first.wait_for()
    with contextlib.suppress(Exception):  # an open pane may render just after the toggle
        pane.wait_for(timeout=5000)
    if not pane.is_visible():
        toggle.click()
    pane.wait_for()


def test_compare_view_shows_the_changed_param(page: Any, store: Store) -> None:
    new, old = store.runs[0], store.runs[1]
    changed = {k for k in new.data.params.keys() | old.data.params.keys()
               if new.data.params.get(k) != old.data.params.get(k)}  # fmt: skip
    assert changed, "the two newest runs have the same params"
    ids = json.dumps([new.info.run_id, old.info.run_id])
    path = f"/compare-runs?runs={ids}&experiments={json.dumps([store.experiment_id])}"
    visit(page, path, "Run details")
    page.get_by_text("Show diff only").first.click()
    shot(page, "compare")
    for key in sorted(changed):
        row = page.get_by_role("row").filter(has=page.get_by_text(key, exact=True)).first
        cells = unspaced(row.inner_text())  # a list param is shown pretty-printed
        assert unspaced(new.data.params.get(key, "")) in cells
        assert unspaced(old.data.params.get(key, "")) in cells


def unspaced(text: str) -> str:
    return re.sub(r"\s+", "", text)


@dataclass(frozen=True)
class Conversation:
    """One scenario iteration of one run: its session, its last reply (what a session row
    shows as the response) and its verdict (on the first turn's trace)."""

    session: str
    reply: str
    verdict: str


def conversations(store: Store, run: Any) -> dict[str, Conversation]:
    """goal -> the run's conversation (the goal names the scenario and its iteration)."""
    traces = store.client.search_traces(
        locations=[store.experiment_id], run_id=run.info.run_id, max_results=500
    )
    turns: dict[str, list[Any]] = {}
    for trace in traces:
        goal = trace.info.trace_metadata.get(GOAL_KEY)
        if goal:
            turns.setdefault(goal, []).append(trace.info)
    found = {}
    for goal, infos in turns.items():
        infos.sort(key=lambda info: int(info.tags["agenteval.turn"]))
        status = [a.value for a in infos[0].assessments if a.name == "scenario_status"]
        reply = " ".join((infos[-1].response_preview or "").split())
        session = infos[0].trace_metadata[SESSION_KEY]
        found[goal] = Conversation(session, reply, str(status[0]) if status else "")
    return found


def test_evaluation_runs_comparison_pairs_each_scenario_of_two_runs(
    page: Any, store: Store
) -> None:
    """MLflow's own comparison of two evaluation runs: one row per scenario iteration holds
    both runs' sessions, replies and verdicts (it pairs sessions on the simulation goal and
    persona, traces on the request preview; unpaired, each run's row says null for the
    other)."""
    new, old = store.runs[0], store.runs[1]
    mine, theirs = conversations(store, new), conversations(store, old)
    shared = sorted(mine.keys() & theirs.keys())
    assert shared, "the two newest runs share no scenario"
    if not ui_groups_traces_by_session():
        return runs_compared_turn_by_turn(page, store, (new, old))
    a, b = mine[shared[0]], theirs[shared[0]]
    assert a.session != b.session  # each run's sessions are its own
    path = (f"/experiments/{store.experiment_id}/evaluation-runs"
            f"?selectedRunUuid={new.info.run_id}&compareToRunUuid={old.info.run_id}")  # fmt: skip
    visit(page, path, a.session)
    page.get_by_role("button", name=re.compile("^Columns")).last.click()
    page.get_by_role("checkbox", name="All Assessments").click(force=True)  # off by default
    page.keyboard.press("Escape")
    row = page.get_by_role("row").filter(has=page.get_by_text(a.session)).first
    row.get_by_text(a.verdict).first.wait_for()
    shot(page, "evaluation-runs-compared")
    cells = " ".join(row.inner_text().split())
    assert a.session in cells and b.session in cells, cells  # the two runs in one row
    for side in (a, b):
        assert side.reply[:60] in cells, (side.reply[:60], cells)
    verdicts = [a.verdict, b.verdict]
    assert all(cells.count(v) >= verdicts.count(v) for v in verdicts), (verdicts, cells)


def runs_compared_turn_by_turn(page: Any, store: Store, runs: tuple[Any, Any]) -> None:
    """An MLflow whose UI has no sessions in its evaluation runs (3.9.0) lists the selected
    run's traces, one row per turn under its comparison key (`scenario · turn N`, the same
    in every run) with the turn's reply: each run's page shows every turn it traced."""
    for run in runs:
        traces = store.client.search_traces(
            locations=[store.experiment_id], run_id=run.info.run_id, max_results=500
        )
        assert traces, run.info.run_id
        selected = f"evaluation-runs?selectedRunUuid={run.info.run_id}"
        path = f"/experiments/{store.experiment_id}/{selected}"
        visit(page, path, traces[0].info.request_preview)
        shot(page, f"evaluation-run-{run.info.run_id[:8]}")
        for trace in traces:
            key, reply = trace.info.request_preview, trace.info.response_preview or ""
            row = page.get_by_role("row").filter(has=page.get_by_text(key, exact=True)).first
            cells = " ".join(row.inner_text().split())
            assert trace.info.trace_id[:8] in cells, (key, cells)
            assert " ".join(reply.split())[:30] in cells, (reply[:30], cells)
