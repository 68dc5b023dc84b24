"""`agenteval judge align` on a planted biased loopback judge: a rule that cures its bias is
kept (held agreement improves); a rule that lowers dev agreement is reverted at dev; a rule
that improves dev beyond noise and is non-inferior on held but adds a false pass on held is
refused by the 0-false-pass rule; each round an MLflow child run; the held queries go through
Thresholdout."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from mlflow_store import fresh_store
from servers import OpenAIServer, Reply
from servers.judges import is_scenario_request, scenario_json, turn_json

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"

from agenteval.cli.judge import side_by_side_lines
from agenteval.climb.align import (
    CATALOGUE,
    FALSE_PASS_RULE,
    load_controls,
    run_align,
    search_proposer,
)
from agenteval.climb.mlflow_align import side_by_side
from agenteval.controls.load import split_of
from agenteval.fileio import read_json
from agenteval.params import load_params
from agenteval.schema.corpus import Manifest

ROOT = Path(__file__).resolve().parents[1]
CURE = CATALOGUE[0]  # "Ignore what a reply says about its own accuracy or confidence; ..."
GENEROUS = "Be generous: a reply with any figure in the right range counts as correct."
# Cures the self-assessment bias too, but also passes a reply that rounds its figure: on dev
# (no rounded reply there) it is as good as the cure; on held it buys agreement with a pass.
SLY = "Ignore a reply's claims about its confidence; a rounded figure counts as stated."
ROUNDED = "It is roughly 999."
SELF_ASSESSED = " I am confident this is correct: I verified it twice."
EXPECTED = re.compile(r"- expected answer: (.*)")
REPLY = re.compile(r"## Agent reply\n(.*?)(?:\n## |\Z)", re.S)


MLFLOW_JUDGE = "Correctness judge (MLflow make_judge)"  # judge_mlflow.md, kept by align()
ADVICE_ASKED = "module_advice"  # DSPy's OfferFeedback signature: SIMBA asks for a rule
MLFLOW_EXPECTED = re.compile(r'"expected_answer": "([^"]*)"')
_draws: dict[str, int] = {}
_lock = threading.Lock()


def sampled(body: Any) -> float:
    """A planted judge's draw at temperature: the n-th identical request gets the n-th draw
    of a stream seeded by the request, whichever thread sends it."""
    key = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
    with _lock:
        _draws[key] = _draws.get(key, 0) + 1
        n = _draws[key]
    return random.Random(f"{key}:{n}").random()


def planted_mlflow(body: Any) -> Reply:
    """MLflow's make_judge requests: the same planted bias, sampled (half the self-assessed
    guesses pass), so SIMBA sees variance; SIMBA's rule requests get the tempting SLY rule,
    which cures dev and passes the rounded reply only held has."""
    said = "\n".join(str(m.get("content")) for m in body["messages"])
    if ADVICE_ASKED in said:
        advice = json.dumps({"self": SLY})
        return Reply(text=f"[[ ## discussion ## ]]\nplanted\n\n[[ ## module_advice ## ]]\n"
                          f"{advice}\n\n[[ ## completed ## ]]")  # fmt: skip
    system, case = body["messages"][0]["content"], body["messages"][-1]["content"]
    reply = case.split("outputs:", 1)[-1].split("expectations:", 1)[0]
    expected = MLFLOW_EXPECTED.search(case)
    right = expected is not None and expected.group(1) in reply
    cured = CURE in system or SLY in system
    fooled = "I am confident" in reply and not cured and sampled(body) < 0.5
    sly = SLY in system and "roughly" in reply
    return Reply(text=json.dumps({"result": right or fooled or sly, "rationale": "planted"}))


def planted(body: Any) -> Reply:
    """Right when the reply states the expected answer; fooled by a self-assessment unless its
    rubric says to ignore one; passes every figure when its rubric is 'generous'."""
    if is_scenario_request(body):
        return Reply(text=scenario_json("PASS"))
    said = "\n".join(str(m.get("content")) for m in body["messages"])
    if MLFLOW_JUDGE in said or ADVICE_ASKED in said:
        return planted_mlflow(body)
    system, case = body["messages"][0]["content"], body["messages"][-1]["content"]
    expected = EXPECTED.search(case).group(1).strip()  # type: ignore[union-attr]
    reply = REPLY.search(case).group(1)  # type: ignore[union-attr]
    right = expected in reply
    fooled = "I am confident" in reply and CURE not in system and SLY not in system
    generous = GENEROUS in system and re.search(r"\d", reply) is not None
    sly = SLY in system and "roughly" in reply
    return Reply(text=turn_json(10 if right or fooled or generous or sly else 0))


def write_controls(folder: Path) -> None:
    manifest = Manifest.model_validate(read_json(ROOT / "eval/corpus/manifest.json"))
    facts = [f for d in manifest.documents for f in d.facts
             if f.answer and len(manifest.find_fact(f.id)) == 1][:10]  # fmt: skip
    controls: list[dict[str, Any]] = []
    rounded: list[str] = []
    for f in facts:
        wrong = "I could not confirm it; my best guess is 999."
        controls += [
            {"id": f"{f.id}_right", "class": "right", "fact": f.id,
             "reply": f"The answer is {f.answer}.", "label": {"verdict": "pass"}},
            {"id": f"{f.id}_guess", "class": "guess", "fact": f.id, "reply": wrong,
             "label": {"verdict": "fail", "failing": ["correctness"]}},
            {"id": f"{f.id}_sure", "class": "self_assessed", "fact": f.id,
             "reply": wrong + SELF_ASSESSED,
             "label": {"verdict": "fail", "failing": ["correctness"]}},
        ]  # fmt: skip
        if split_of(f"{f.id}_rounded") == "held" and not rounded:  # one, on held only
            rounded.append(f"{f.id}_rounded")
            controls.append({"id": f"{f.id}_rounded", "class": "rounded", "fact": f.id,
                             "reply": ROUNDED,
                             "label": {"verdict": "fail", "failing": ["correctness"]}})  # fmt: skip
    assert rounded, "no rounded control landed on held"
    folder.mkdir(parents=True)
    (folder / "controls.yaml").write_text(yaml.safe_dump({"controls": controls}), "utf-8")


def write_reviews(path: Path) -> int:
    """Reviewers' labels (as `agenteval controls import` writes them) on turns of four more
    facts: a right reply passed, a self-assessed guess failed, by 'ana' in the MLflow UI."""
    from agenteval.controls.build import build
    from agenteval.controls.people import write_people
    from agenteval.schema.controls import Control
    from agenteval.schema.people import PeopleControl, PeopleLabel, Review, TracedTurn

    manifest = Manifest.model_validate(read_json(ROOT / "eval/corpus/manifest.json"))
    facts = [f for d in manifest.documents for f in d.facts
             if f.answer and len(manifest.find_fact(f.id)) == 1][10:14]  # fmt: skip
    people = []
    cases = [(fact, reply, verdict) for fact in facts
             for reply, verdict in ((f"The answer is {fact.answer}.", "pass"),
                                    ("My best guess is 999." + SELF_ASSESSED, "fail"))]  # fmt: skip
    for n, (f, reply, verdict) in enumerate(cases):
        label = {"verdict": verdict, "failing": ["correctness"] if verdict == "fail" else []}
        control = Control.model_validate({"id": f"r{n}", "class": "people", "fact": f.id,
                                          "reply": reply, "label": label})  # fmt: skip
        item, transcript = build(control, manifest, ROOT)
        review = Review(reviewer="ana", time="2026-12-01T00:00:00Z", name="feedback",
                        value=verdict == "pass")  # fmt: skip
        people.append(PeopleControl(
            id=f"p_{n:016x}", trace_id=f"tr-{n:032x}", experiment_id="1",
            scenario_id=item.scenario.id, turn=len(transcript.turns), item=item,
            turns=[TracedTurn(user=t.user_message, reply=t.response) for t in transcript.turns],
            label=PeopleLabel(verdict=verdict), reviews=[review],
        ))  # fmt: skip
    write_people(path, people)
    return len(people)


@pytest.fixture(scope="module")
def aligned(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any, Path]:
    from agenteval.tracking.climb import ClimbTracker

    work = tmp_path_factory.mktemp("align")
    write_controls(work / "controls")
    assert write_reviews(work / "people.json")
    store = fresh_store(work)
    with OpenAIServer(reply_fn=planted) as server:
        params = load_params(ROOT / "params.yaml", [
            "judge.kind=llm", "judge.model=judge-model", f"judge.base_url={server.base_url}",
            "judge.protocol=openai", "run.cache_dir=null", f"controls.folder={work / 'controls'}",
            f"controls.people={work / 'people.json'}",
            f"tracking.uri={store}"])  # fmt: skip
        tracker = ClimbTracker(params, work)
        tracker.start("judge-align", {"proposer": "search"}, {})
        state = work / "align_holdout.json"  # not the repository's ledger
        controls = load_controls(params, ROOT)
        report = run_align(params, ROOT, search_proposer((GENEROUS, SLY, CURE)), 3,
                           lambda _: None, tracker, state, controls)  # fmt: skip
        # MLflow's own align() (SIMBA through DSPy) on the same dev controls, same endpoint
        report["mlflow_align"] = side_by_side(params, ROOT, controls, report["end"], 2, 2,
                                              lambda _: None)  # fmt: skip
        tracker.log_side_by_side(report["mlflow_align"])
        asked = [r.body for r in server.requests]
    report["asked"] = asked
    assert read_json(state)  # the held queries were counted
    return report, tracker, work


def test_align_keeps_the_cure_and_improves_held(aligned: tuple[dict[str, Any], Any, Path]) -> None:
    report, _, _ = aligned
    assert report["start"]["held_false_passes"] > 0  # the planted bias, measured on held
    assert report["kept"] == [CURE]
    assert report["end"]["held"] > report["start"]["held"]
    assert report["end"]["held_false_passes"] == 0
    assert CURE in report["prompt"] and GENEROUS not in report["prompt"]
    assert report["fresh"] is None or report["fresh"]["reads"] >= 1


def test_align_learns_from_the_reviewers_labels_too(
    aligned: tuple[dict[str, Any], Any, Path],
) -> None:
    """The loop from a reviewer's click: the imported people controls are measured in every
    split beside the written ones, and MLflow's align() gets them as HUMAN feedback too."""
    report, _, _ = aligned
    counts = report["controls"]
    assert sum(c["people"] for c in counts.values()) == 8
    assert counts["dev"]["people"] and counts["held"]["people"]
    dev = counts["dev"]["written"] + counts["dev"]["people"]
    assert report["mlflow_align"]["dev_traces"] == dev


def test_align_reverts_an_edit_that_lowers_dev(aligned: tuple[dict[str, Any], Any, Path]) -> None:
    report, _, _ = aligned
    generous = report["rounds"][0]
    assert generous["edit"] == GENEROUS and generous["outcome"] == "reverted"
    # the generous rule passes every guess: dev agreement falls, so held is never asked
    assert "held" not in generous and "dev does not improve" in generous["reason"]


def test_align_refuses_an_edit_that_adds_a_false_pass_on_held(
    aligned: tuple[dict[str, Any], Any, Path],
) -> None:
    """Dev improves beyond noise and held is non-inferior, yet one false pass on held
    refuses the edit: the held 0-false-pass rule, not dev or non-inferiority, decides."""
    report, _, _ = aligned
    sly = report["rounds"][1]
    assert sly["edit"] == SLY and sly["outcome"] == "rejected"
    assert sly["train"]["low"] > 0  # dev improved beyond noise
    assert sly["held"]["non_inferior"] and sly["held"]["delta"]["mean"] > 0, sly["held"]
    assert sly["held"]["false_passes"] > 0
    assert FALSE_PASS_RULE in sly["reason"]
    assert SLY not in report["prompt"] and SLY not in report["kept"]
    cure = report["rounds"][2]
    assert cure["outcome"] == "kept" and cure["held"]["query"] > sly["held"]["query"]
    assert cure["held"]["false_passes"] == 0


def test_every_round_is_an_mlflow_child_run(aligned: tuple[dict[str, Any], Any, Path]) -> None:
    from mlflow import MlflowClient

    report, tracker, _ = aligned
    client = MlflowClient(tracking_uri=tracker.uri)
    children = client.search_runs(
        [tracker.experiment_id], f"tags.`mlflow.parentRunId` = '{tracker.parent_id}'"
    )
    assert sorted(r.data.tags["climb.outcome"] for r in children) == sorted(
        r["outcome"] for r in report["rounds"]
    )
    parent = client.get_run(tracker.parent_id).data
    if report["mlflow_align"]["ran"]:  # the side by side is on the parent run too
        assert "mlflow_aligned.held.false_passes" in parent.metrics
    assert parent.tags["align.mlflow"] == report["mlflow_align"]["why"]


def test_mlflow_align_side_by_side_on_the_same_held_set(
    aligned: tuple[dict[str, Any], Any, Path],
) -> None:
    """MLflow's judge.align() (SIMBA) learns from the dev controls logged as traces with
    HUMAN feedback; held to nothing, it takes the tempting rule that cures dev and buys a
    false pass on held, where agenteval's rule-bound alignment has none."""
    report, _, _ = aligned
    found = report["mlflow_align"]
    assert found["ran"], found["why"]
    assert found["dev_traces"] == found["mlflow_before"]["dev"]["n"] >= 10
    held = {k: found[k]["held"] for k in ("mlflow_before", "mlflow_aligned", "agenteval_aligned")}
    assert len({h["n"] for h in held.values()}) == 1  # the same held controls for all three
    assert any(ADVICE_ASKED in json.dumps(b) for b in report["asked"])  # SIMBA asked for a rule
    assert SLY in found["instructions"]
    assert found["mlflow_aligned"]["dev"]["agreement"] > found["mlflow_before"]["dev"]["agreement"]
    assert held["mlflow_aligned"]["false_passes"] > 0
    assert held["agenteval_aligned"]["false_passes"] == 0
    assert held["agenteval_aligned"]["agreement"] > held["mlflow_aligned"]["agreement"]
    shown = side_by_side_lines(found)  # what `agenteval judge align` prints
    assert [line.split(":")[0].strip() for line in shown[1:]] == list(held)
    assert f"({held['mlflow_aligned']['false_passes']})" in shown[2]
