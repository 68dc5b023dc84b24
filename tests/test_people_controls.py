"""Reviews become controls: HUMAN feedback logged on a real run's traces through MLflow's
public API is read back as people controls, judged, and reported beside the written ones."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from mlflow_store import fresh_store

from agenteval.controls.people import (
    control_id,
    judge_people,
    label_of,
    load_people,
    merge,
    people_report,
    people_split,
    read_verdict,
    write_people,
)
from agenteval.controls.report import people_lines
from agenteval.controls.run import grade
from agenteval.judges.base import make_judge
from agenteval.layout import Layout, load_suite, load_verdict
from agenteval.llm.scrub import Scrubber
from agenteval.params import load_params
from agenteval.pipeline import run_all
from agenteval.schema.people import Review
from agenteval.scoring import ScoringRules
from agenteval.tracking.controls import _metrics
from agenteval.tracking.feedback import read_reviews
from agenteval.tracking.run import log_evaluation
from agenteval.tracking.store import mlflow_client

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ["incident_followups"]
EXPERIMENT = "people-test"


def review(name: str, value: Any, who: str = "ana") -> Review:
    return Review(reviewer=who, time="2026-01-01T00:00:00+00:00", name=name, value=value)


def test_which_feedback_is_a_turn_verdict() -> None:
    assert read_verdict("feedback", True) == ("pass", None)
    assert read_verdict("verdict", "Fail") == ("fail", None)
    assert read_verdict("correctness", False) == ("fail", "correctness")
    # a dimension marked right says nothing of the others; an unknown name is not a verdict
    assert read_verdict("correctness", True)[0] is None
    assert read_verdict("tone", "fail")[0] is None
    assert read_verdict("feedback", 7)[0] is None  # a number is not guessed into a verdict


def test_reviewers_who_disagree_give_no_label() -> None:
    label, why = label_of([review("feedback", True), review("feedback", False, "bo")])
    assert label is None and why is not None and "disagree" in why
    label, _ = label_of([review("feedback", "pass"), review("completeness", "fail", "bo")])
    assert label is None
    label, _ = label_of([review("correctness", False), review("verdict", "fail", "bo")])
    assert label is not None and label.verdict == "fail" and label.failing == ["correctness"]


def test_split_is_stable_and_uses_all_three() -> None:
    ids = [control_id(f"tr-{i}") for i in range(300)]
    splits = [people_split(i) for i in ids]
    assert splits == [people_split(i) for i in ids]
    shares = {s: splits.count(s) / len(splits) for s in ("dev", "held", "fresh")}
    assert 0.3 < shares["dev"] < 0.5 and 0.3 < shares["held"] < 0.5 and 0.1 < shares["fresh"] < 0.3


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Layout, dict[str, Any], str, Any]:
    params = load_params(ROOT / "params.yaml", [f"suite.ids={json.dumps(SCENARIOS)}"])
    layout = Layout.run_dir(ROOT, tmp_path_factory.mktemp("run"))
    run_all(params, layout)
    uri = fresh_store(tmp_path_factory.mktemp("store"))
    result = log_evaluation(layout, params, uri=uri, experiment=EXPERIMENT)
    assert result is not None
    return layout, params, uri, result


def run_verdict(layout: Layout, trace: Any, rules: ScoringRules) -> str:
    tags = trace.info.tags
    verdict = load_verdict(layout.verdicts, tags["agenteval.scenario_id"],
                           int(tags["agenteval.iteration"]))  # fmt: skip
    assert verdict is not None
    turn = int(tags["agenteval.turn"])
    cut = verdict.model_copy(update={"turns": [t for t in verdict.turns if t.turn <= turn]})
    return grade(cut, rules).verdict


Reviewed = tuple[list[Any], dict[str, str]]


@pytest.fixture(scope="module")
def reviewed(run: tuple[Layout, dict[str, Any], str, Any]) -> Reviewed:
    """HUMAN feedback logged once on every trace of the module's run, through MLflow's API:
    people agree with the run's judge except on one planted turn."""
    import mlflow
    from mlflow.entities import AssessmentSource

    layout, params, uri, result = run
    rules = ScoringRules.from_params(params["judge"])
    with mlflow_client(uri) as client:
        traces = client.search_traces(locations=[result.experiment_id], run_id=result.run_id)
        traces = sorted(traces, key=lambda t: t.info.trace_id)
        labelled = {}
        for n, trace in enumerate(traces):
            judged = run_verdict(layout, trace, rules)
            said = judged if n else ("fail" if judged == "pass" else "pass")
            labelled[trace.info.trace_id] = said
            mlflow.log_feedback(
                trace_id=trace.info.trace_id, name="feedback", value=said == "pass",
                source=AssessmentSource(source_type="HUMAN", source_id=f"reviewer{n % 2}"),
                rationale="checked against the filing",
            )  # fmt: skip
        # not a verdict, and an LLM judge's feedback: neither is what people said
        human = AssessmentSource(source_type="HUMAN", source_id="ana")
        model = AssessmentSource(source_type="LLM_JUDGE", source_id="gpt")
        mlflow.log_feedback(trace_id=traces[0].info.trace_id, name="tone", value="ok", source=human)
        mlflow.log_feedback(trace_id=traces[1].info.trace_id, value=False, source=model)
    return traces, labelled


def test_feedback_logged_in_mlflow_round_trips_into_controls_and_figures(
    run: tuple[Layout, dict[str, Any], str, Any], reviewed: Reviewed, tmp_path: Path
) -> None:
    layout, params, uri, result = run
    rules = ScoringRules.from_params(params["judge"])
    traces, labelled = reviewed
    later = [t for t in traces if t.info.tags["agenteval.turn"] != "1"]
    assert later, "the run has a multi-turn conversation"
    items = load_suite(layout).items
    found = read_reviews(uri, EXPERIMENT, result.run_id, items, Scrubber())
    assert {c.trace_id for c in found.controls} == set(labelled)
    assert not found.skipped
    for c in found.controls:
        assert c.label.verdict == labelled[c.trace_id]
        assert c.reviews[0].reviewer.startswith("reviewer") and c.reviews[0].time
        assert c.run_id == result.run_id and c.turn == len(c.turns)
    multi = next(c for c in found.controls if c.trace_id == later[0].info.trace_id)
    assert len(multi.turns) == int(later[0].info.tags["agenteval.turn"])  # its context

    path = tmp_path / "people.json"
    write_people(path, merge([], found.controls))
    write_people(path, merge([p.control for p in load_people(path)], found.controls))
    people = load_people(path)
    assert len(people) == len(traces)  # importing twice adds nothing

    outcomes = asyncio.run(judge_people(make_judge(params, ROOT), people, rules))
    by_trace = {p.control.id: p.control.trace_id for p in people}
    for o in outcomes:  # the imported turn, judged again, is graded as the run graded it
        trace = next(t for t in traces if t.info.trace_id == by_trace[o.id])
        assert o.first.verdict == run_verdict(layout, trace, rules)
    report = people_report(outcomes, params["controls"])
    assert [d["id"] for d in report["disagreements"]] == [control_id(traces[0].info.trace_id)]
    overall = report["overall"]
    assert overall["agreement"]["value"] == pytest.approx(1 - 1 / len(traces), abs=1e-4)
    assert overall["agreement"]["low"] is not None
    assert "## Agreement with people" in "\n".join(people_lines(report))
    flat = _metrics({"splits": {}, "overall": overall, "people": report})
    assert flat["people.all.agreement"] == overall["agreement"]["value"]


def test_runs_report_agreement_with_people_in_their_summary(
    run: tuple[Layout, dict[str, Any], str, Any], reviewed: Reviewed, tmp_path: Path
) -> None:
    """Reviewed held turns are mixed into the judge stage beside the written controls
    (judge.controls_per_run) and the run's summary and metrics carry agreement with people."""
    from agenteval.fileio import read_json

    layout, _, uri, result = run
    items = load_suite(layout).items
    found = read_reviews(uri, EXPERIMENT, result.run_id, items, Scrubber())
    assert len(found.controls) == len(reviewed[1])
    held_ids = (control_id(f"held-{i}") for i in range(10_000))
    held_ids = (i for i in held_ids if people_split(i) == "held")
    held = [c.model_copy(update={"id": next(held_ids)}) for c in found.controls]
    path = tmp_path / "people.json"
    write_people(path, held)
    again = load_params(ROOT / "params.yaml", [
        f"suite.ids={json.dumps(SCENARIOS)}", "judge.controls_per_run=2",
        f"controls.people={path}"])  # fmt: skip
    out = Layout.run_dir(ROOT, tmp_path / "run")
    run_all(again, out)
    card = read_json(out.scorecard)
    people = card["calibration"]["people"]
    assert people["controls"] == min(2, len(held)) and people["agreement"]["value"] is not None
    assert "Agreement with people on" in (out.reports / "summary.md").read_text()
    assert "calibration.people.agreement" in read_json(out.metrics)


def test_controls_import_through_the_cli_reads_the_reviews(
    run: tuple[Layout, dict[str, Any], str, Any],
    reviewed: Reviewed,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`agenteval controls import` as a reviewer's team runs it, on the module's real traces
    (in-process: this process has already paid MLflow's import)."""
    from typer.testing import CliRunner

    from agenteval.cli import app

    layout, _, uri, result = run
    _, labelled = reviewed
    monkeypatch.chdir(ROOT)
    out = tmp_path / "people.json"
    argv = ["controls", "import", "--experiment", EXPERIMENT, "--run", result.run_id,
            "--suite", str(layout.suite), "--out", str(out),
            "--set", f"tracking.uri={uri}"]  # fmt: skip
    done = CliRunner().invoke(app, argv)
    assert done.exit_code == 0, done.output
    people = load_people(out)
    assert {p.control.trace_id: p.control.label.verdict for p in people} == labelled
    assert f"{len(labelled)} control(s) imported" in done.output
    bad = tmp_path / "suite.json"
    bad.write_text('{"items": 3}')
    argv[argv.index("--suite") + 1] = str(bad)
    refused = CliRunner().invoke(app, argv)
    assert refused.exit_code == 2 and f"{bad}:1: not a suite" in refused.output
    assert isinstance(refused.exception, SystemExit)  # a message, no traceback
    assert load_people(out) == people  # nothing lost
