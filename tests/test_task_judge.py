"""The tasks judge against model servers on 127.0.0.1: an unusable reply is re-asked and then
unjudged (never a score), a failed backend is INFRA for a question, a re-judge reuses the
stored attempts, and the judge controls tell a discriminating judge from one that is not."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers import OpenAIServer, Reply

from agenteval.benchmarks.tasks.controls import run_controls
from agenteval.benchmarks.tasks.steps import run_tasks, step_judge, step_score
from agenteval.layout import Layout
from agenteval.params import load_params

ROOT = Path(__file__).resolve().parents[1]


def params_for(judge: Any, *sets: str) -> dict[str, Any]:
    base = [
        "tasks.ids=[explain-durations, bugfix-durations]",
        "run.cache=false",
        "run.max_attempts=1",
    ]
    if judge is not None:
        base += [
            "tasks.judge.kind=llm",
            "tasks.judge.model=judge-model",
            f"tasks.judge.base_url={judge.base_url}",
            "tasks.judge.protocol=openai",
        ]
    return load_params(ROOT / "pipelines/tasks/params.yaml", [*base, *sets])


def grades(value: int, established: list[bool] | None = None) -> str:
    body: dict[str, Any] = {d: value for d in ("instructions", "quality", "reasoning", "honesty")}
    if established is not None:
        body["established"] = established
    return json.dumps(body | {"rationale": "test"})


def by_kind(body: dict[str, Any]) -> Reply:
    """A judge that establishes every point of a question and grades a fix 4."""
    case = body["messages"][0]["content"]
    points = len(re.findall(r"^\d+\. ", case, re.MULTILINE))
    return Reply(text=grades(4, [True] * points if points else None))


def test_reference_run_judged_then_rejudged_without_the_agent(tmp_path: Path) -> None:
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    with OpenAIServer(reply_fn=by_kind) as judge:
        card = run_tasks(params_for(judge), layout)
        assert [r.result for r in card.tasks] == ["PASS", "PASS"]
        assert all(r.quality == 4.0 for r in card.tasks)
        asked = judge.request_count
        step_judge(params_for(judge), layout)  # same attempts, same judge: nothing asked
        assert judge.request_count == asked
    with OpenAIServer(
        [Reply(text="Looks fine to me."), Reply(text="Quality four, honest.")]
    ) as vague:
        params = params_for(vague, "tasks.judge.max_attempts=2")
        step_judge(params, layout)  # another judge: both attempts graded again, none usable
        card = step_score(params, layout)
        assert vague.request_count == 2 * 2
    question = next(r for r in card.tasks if r.task_id == "explain-durations")
    # code reads every point of the question: the missing grade costs its quality only
    assert question.result == "PASS" and question.quality is None
    fix = next(r for r in card.tasks if r.task_id == "bugfix-durations")
    assert fix.result == "PASS" and fix.quality is None  # code decides it; the grade is missing


def test_a_failed_judge_backend_is_infra_never_a_fail(tmp_path: Path) -> None:
    with OpenAIServer() as gone:
        closed = type("Closed", (), {"base_url": gone.base_url})()
    layout = Layout.run_dir(ROOT, tmp_path / "run")
    card = run_tasks(params_for(closed, "tasks.ids=[explain-durations]"), layout)
    (row,) = card.tasks
    # code settled every point, so the result stands; the judge's axes are unmeasured
    # (a point only a judge reads is INFRA_ERROR then: tests/test_task_points.py)
    assert row.result == "PASS" and row.judge_status == "error" and row.quality is None


def discriminating(body: dict[str, Any]) -> Reply:
    """Grades as a careful judge would: a claim without a run is dishonest, no work is poor."""
    case = body["messages"][0]["content"]
    calls = case.split("## The agent's tool calls, in order")[1].split(
        "## The agent's final answer"
    )[0]
    if "(no tool calls)" in calls:
        return Reply(
            text=json.dumps({"instructions": 1, "quality": 1, "reasoning": 1, "honesty": 1})
        )
    ran_tests = re.search(r"^\[\d+\] run .*pytest", calls, re.MULTILINE)
    if not ran_tests:
        return Reply(
            text=json.dumps({"instructions": 4, "quality": 4, "reasoning": 3, "honesty": 1})
        )
    return Reply(text=json.dumps({"instructions": 5, "quality": 5, "reasoning": 4, "honesty": 5}))


@pytest.fixture
def judges() -> Iterator[tuple[OpenAIServer, OpenAIServer]]:
    constant = lambda _body: Reply(text=grades(4))  # noqa: E731
    with OpenAIServer(reply_fn=discriminating) as good, OpenAIServer(reply_fn=constant) as blind:
        yield good, blind


def test_controls_tell_a_discriminating_judge_from_a_blind_one(
    tmp_path: Path, judges: tuple[OpenAIServer, OpenAIServer]
) -> None:
    good, blind = judges
    report = run_controls(params_for(good), ROOT)
    assert report.passed, report.lines()
    by_name = {o.name: o for o in report.outcomes}
    assert by_name["real"].result == "PASS" and by_name["invented"].result == "PASS"
    assert by_name["nothing"].result == "FAIL"
    assert not by_name["real"].misreported and by_name["invented"].misreported
    assert by_name["nothing"].misreported
    out = tmp_path / "controls.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "agenteval",
            "tasks",
            "controls",
            "--out",
            str(out),
            "--set",
            "tasks.judge.kind=llm",
            "--set",
            "tasks.judge.model=judge-model",
            "--set",
            f"tasks.judge.base_url={blind.base_url}",
            "--set",
            "tasks.judge.protocol=openai",
            "--set",
            "run.cache=false",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert "cannot tell the attempts apart" in done.stdout
    assert json.loads(out.read_text())["passed"] is False


def test_controls_need_a_judge() -> None:
    with pytest.raises(ValueError, match="need a judge"):
        run_controls(params_for(None), ROOT)


LIVE = {
    name: os.environ.get(f"AGENTEVAL_TASKS_JUDGE_{name}")
    for name in ("MODEL", "BASE_URL", "PROTOCOL", "KEY_ENV")
}


@pytest.mark.skipif(not LIVE["MODEL"], reason="set AGENTEVAL_TASKS_JUDGE_MODEL (and _BASE_URL, "
                    "_PROTOCOL, _KEY_ENV) to ask a real judge")  # fmt: skip
def test_live_judge_passes_every_reference_and_fails_every_wrong_answer() -> None:
    """Opt-in: a real judge endpoint must establish every point of each question's reference
    answer and must not establish them all for any of its plausible wrong answers."""
    import asyncio

    from agenteval.benchmarks.tasks.definitions import load_task_file
    from agenteval.benchmarks.tasks.judge import TaskJudge
    from agenteval.schema.task_records import Answer, TaskAttempt
    from agenteval.schema.transcript import Participant

    sets = ["tasks.judge.kind=llm", f"tasks.judge.model={LIVE['MODEL']}"]
    sets += [f"tasks.judge.{k}={v}" for k, v in (("base_url", LIVE["BASE_URL"]),
             ("protocol", LIVE["PROTOCOL"]), ("api_key_env", LIVE["KEY_ENV"])) if v]  # fmt: skip
    judge = TaskJudge(params_for(None, *sets), ROOT)
    spec = load_task_file(ROOT / "eval/tasks/tasks.json")

    async def verdicts() -> list[tuple[str, bool, bool]]:
        out = []
        for task in (t for t in spec.tasks if t.kind == "question"):
            answers = [(task.reference.answer, True)] + [(w, False) for w in task.wrong_answers]
            for text, right in answers:
                attempt = TaskAttempt(task_id=task.id, task_digest="live", status="COMPLETED",
                                      harness=Participant(kind="live"), prompt=task.prompt,
                                      answers=[Answer(text=text, after_call=0)])  # fmt: skip
                grade = await judge.grade(
                    task, attempt, "live", judge.case(task, attempt, "", "", "")
                )
                out.append((task.id, right, bool(grade.established) and all(grade.established)))
        return out

    wrong = [(t, right) for t, right, passed in asyncio.run(verdicts()) if passed != right]
    assert not wrong, wrong
