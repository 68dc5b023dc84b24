"""Per-attempt stamps of the coding-tasks benchmark (agenteval.stamps): each attempt records
the commit and time it ran, a stored attempt reused after a commit keeps its own, and the
scorecard and its summary say when the attempts span commits. An attempt of
an in-process harness (the scripted replay) is stamped by its code; an older attempt with no
stamp is reported as unstamped, never taken to be HEAD.

The end-to-end test runs the chat harness against a model server on 127.0.0.1 with no
sandbox (question tasks: no checks to seal), HEAD read by real git from a scratch repository
named by GIT_DIR."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from servers import OpenAIServer, Reply

from agenteval.benchmarks.tasks.definitions import load_task_file
from agenteval.benchmarks.tasks.report import summary
from agenteval.benchmarks.tasks.runner import attempt_dir, load_attempt
from agenteval.benchmarks.tasks.score import draws, results, unit_stamps
from agenteval.benchmarks.tasks.scripted import ScriptedHarness
from agenteval.benchmarks.tasks.steps import run_tasks
from agenteval.layout import Layout
from agenteval.params import load_params
from agenteval.schema.task_records import TaskAttempt
from agenteval.schema.task_results import TaskScorecard
from agenteval.schema.transcript import Participant

ROOT = Path(__file__).resolve().parents[1]
SPEC = load_task_file(ROOT / "eval/tasks/tasks.json")
TASKS = {t.id: t for t in SPEC.tasks}
KEY = "sk-agent-" + "Mn4" * 9
SPAN = "Units span"


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                           *args], capture_output=True, text=True, check=True)  # fmt: skip
    return done.stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _params(server: OpenAIServer, ids: list[str]) -> dict[str, object]:
    sets = ["tasks.harness=chat", "tasks.suite=full", f"tasks.ids=[{', '.join(ids)}]",
            "tasks.sandbox=none", "target.model=agent-model", f"target.base_url={server.base_url}",
            "target.protocol=openai", "target.api_key_env=TASKS_AGENT_KEY", "run.cache=false",
            "run.max_attempts=1", "tracking.enabled=false"]  # fmt: skip
    return load_params(ROOT / "pipelines/tasks/params.yaml", sets)


def test_an_attempt_reused_across_a_commit_makes_the_scorecard_say_it_spans_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    first = _commit(repo, "A")
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))  # read by the runs below
    monkeypatch.setenv("TASKS_AGENT_KEY", KEY)
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    answers = [Reply(text=TASKS[i].reference.answer) for i in ("explain-durations", "readme-wrong")]
    with OpenAIServer(answers, api_key=KEY) as server:  # one agent: the same participant
        alone = run_tasks(_params(server, ["explain-durations"]), layout, judge=False)
        assert alone.commits == [first] and alone.unstamped == 0
        assert SPAN not in summary(alone)  # a fresh run at one commit says nothing extra
        second = _commit(repo, "B")
        params = _params(server, ["explain-durations", "readme-wrong"])
        card = run_tasks(params, layout, judge=False)
        assert len(server.requests) == 2  # the first task's attempt was reused, not rerun
    stamped = {row.task_id: row.commit for row in card.tasks}
    assert stamped == {"explain-durations": first, "readme-wrong": second}
    # in the order they first ran: both runs may fall in one second (stamps keep seconds),
    # and then the order is the commits' own, so only the set is certain here
    assert sorted(card.commits) == sorted([first, second])
    assert all(row.ran_at for row in card.tasks)
    assert card.measured_on["commit"] == second
    text = (layout.reports / "summary.md").read_text()
    assert f"{SPAN} 2 commits:** " in text
    assert f"`{first[:12]}` (1 units)" in text and f"`{second[:12]}` (1 units)" in text
    saved = json.loads((layout.reports / "scorecard.json").read_text())
    assert saved["commits"] == card.commits
    attempt = load_attempt(attempt_dir(layout.data, "explain-durations", 0))
    assert attempt is not None and attempt.commit == first and attempt.started_at


def _attempt(task_id: str, harness: Participant, **stamp: str | None) -> TaskAttempt:
    return TaskAttempt(task_id=task_id, task_digest="d", harness=harness, status="COMPLETED",
                       prompt=TASKS[task_id].prompt, **stamp)  # fmt: skip


def _card(attempts: list[TaskAttempt], head: str = "c" * 40) -> TaskScorecard:
    tasks = [TASKS[a.task_id] for a in attempts]
    rows = results(tasks, attempts, {})
    stamped = unit_stamps(attempts)
    return TaskScorecard(suite="core", task_ids=[t.id for t in tasks],
                         harness=attempts[0].harness, model="m",
                         judge=Participant(kind="tasks-none"), repeats=1,
                         measured_on={"commit": head, "machine": "vm"},
                         draws=draws(rows, 1), tasks=rows, commits=stamped.commits,
                         code_stamps=stamped.code_stamps,
                         unstamped=stamped.unstamped)  # fmt: skip


def test_the_scripted_harness_is_stamped_by_its_code_not_a_commit() -> None:
    """Its replay is a function of its code (agenteval.stamps' rule for the builtin agent): a
    commit or a time would make two commits' identical attempts differ."""
    harness = ScriptedHarness().participant
    assert harness.details["code"]["benchmarks/tasks/scripted.py"]
    card = _card([_attempt("explain-durations", harness), _attempt("config-env", harness)])
    (stamp,) = card.code_stamps
    assert stamp.startswith("code:") and card.commits == [] and card.unstamped == 0
    assert {row.code_stamp for row in card.tasks} == {stamp}
    assert "Units span" not in summary(card) and "no stamp" not in summary(card)


def test_an_old_attempt_without_a_stamp_loads_and_is_reported_unstamped(tmp_path: Path) -> None:
    old = _attempt("explain-durations", Participant(kind="chat", model="m"))
    data = old.model_dump(mode="json")
    del data["commit"]  # written before attempts carried a commit
    folder = attempt_dir(tmp_path, "explain-durations", 0)
    folder.mkdir(parents=True)
    (folder / "attempt.json").write_text(json.dumps(data))
    loaded = load_attempt(folder)
    assert loaded is not None and loaded.commit is None
    head = "c" * 40
    fresh = _attempt("readme-wrong", Participant(kind="chat", model="m"), commit=head,
                     started_at="2026-12-07T10:00:00+00:00")  # fmt: skip
    card = _card([loaded, fresh], head)
    assert card.commits == [head] and card.unstamped == 1  # never counted as HEAD's
    assert card.tasks[0].commit is None and card.tasks[0].code_stamp is None
    text = summary(card)
    assert "1 attempt(s) carry no stamp" in text and SPAN not in text


def test_attempts_all_from_an_earlier_commit_are_not_said_to_be_measured_on_head() -> None:
    earlier, head = "a" * 40, "b" * 40
    chat = Participant(kind="chat", model="m")
    card = _card([_attempt("explain-durations", chat, commit=earlier)], head)
    assert f"Attempts ran at `{earlier[:12]}`**, not the commit scored at" in summary(card)
    assert "Attempts ran at" not in summary(_card([_attempt("explain-durations", chat,
                                                            commit=head)], head))  # fmt: skip
