"""Judge controls: files, split, pairs like real runs, agreement statistics, CLI, MLflow."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from agenteval.controls.agreement import cohen_kappa, estimate, gwet_ac1, icc_oneway
from agenteval.controls.build import build
from agenteval.controls.load import (
    ControlsError,
    load_controls,
    load_tuning,
    select,
    split_of,
    tuned_by,
)
from agenteval.controls.run import consistency, grade, judge_controls, summarize
from agenteval.fileio import read_json
from agenteval.judges.code import CodeJudge
from agenteval.params import load_params
from agenteval.schema.controls import Control
from agenteval.schema.corpus import Manifest
from agenteval.scoring import DIMENSIONS, MIN_CORRECTNESS, ScoringRules

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = Manifest.model_validate(read_json(ROOT / "eval/corpus/manifest.json"))
RULES = ScoringRules()


def write_controls(folder: Path, controls: list[dict[str, object]], name: str = "c.yaml") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(yaml.safe_dump({"controls": controls}), encoding="utf-8")


PASS = {"verdict": "pass", "scores": {"correctness": [10, 10]}}
FAIL = {"verdict": "fail", "failing": ["correctness"], "scores": {"correctness": [0, 0]}}


def revenue(cid: str, reply: str, label: dict[str, object]) -> dict[str, object]:
    return {"id": cid, "class": "t", "fact": "hl_q2_net_revenue", "reply": reply, "label": label}


# -- the repository's own controls --------------------------------------------------------
@pytest.fixture(scope="module")
def shipped() -> list:
    return load_controls(ROOT / "eval/judge_controls", MANIFEST, ROOT)


def test_shipped_controls_cover_every_class_the_issue_names(shipped: list) -> None:
    classes = {c.control.klass for c in shipped if c.split != "fresh"}
    wanted = {
        "candidate_list", "alternatives", "negation", "abstention_plus_guess", "off_by_one_year",
        "off_by_one_date", "off_by_one_id", "off_by_one_quarter", "off_by_one_sign",
        "off_by_one_version", "wrong_surname", "deviation_5_15", "false_error_acknowledgement",
        "failed_tool_counted_as_call", "number_words", "true_caveat", "paraphrased_abstention",
        "unit_conversion", "unit_abbreviation", "section_heading_number", "multi_turn_followup",
        "tool_loop", "forbidden_tool", "planted_instruction", "verbose_correct",
        "garbled_output", "clean_pass", "clean_fail", "context_not_alternative",
        "refusal", "lazy_refusal", "vague_quantity", "ranged_quantity", "contradicted_claim",
    }  # fmt: skip
    assert wanted <= classes
    assert len([c for c in shipped if c.split != "fresh"]) >= 200
    assert len([c for c in shipped if c.split == "fresh"]) >= 30


def test_labels_follow_the_pass_rule(shipped: list) -> None:
    """A label passing a turn whose correctness range is below the minimum would contradict
    the rubric's pass rule; so would a fail that names no dimension."""
    for loaded in shipped:
        label = loaded.control.label
        low, high = label.scores.get("correctness", (0.0, 10.0))
        if label.verdict == "pass":
            assert low >= MIN_CORRECTNESS, loaded.control.id
        if "correctness" in label.failing:
            assert high < MIN_CORRECTNESS, loaded.control.id


def test_split_is_stable_and_balanced(shipped: list) -> None:
    assert split_of("cand_hl_revenue_three_values") == split_of("cand_hl_revenue_three_values")
    dealt = [c.split for c in shipped if c.split != "fresh"]
    assert 0.35 < dealt.count("held") / len(dealt) < 0.65
    assert {c.split for c in shipped if "/fresh/" in c.path} == {"fresh"}


def test_a_control_becomes_the_pair_a_real_run_produces(shipped: list) -> None:
    control = next(c.control for c in shipped if c.control.id == "multi_cw_pronoun_weight")
    item, transcript = build(control, MANIFEST, ROOT)
    assert [t.turn for t in item.scenario.turns] == [1, 2]
    judged = item.scenario.turns[-1]
    assert judged.ground_truth is not None and judged.ground_truth.expected_answer == "23.6 kg"
    assert "cw_heron_weight" in item.facts
    assert transcript.status == "COMPLETED" and transcript.setup_calls[0].ok
    query = transcript.turns[-1].tool_calls[0]
    assert query.name == "query_documents" and query.ok
    assert query.arguments["query"] == "how heavy is it?"
    assert query.result["results"], "the real tool ran over the control's document"


# -- files ----------------------------------------------------------------------------------
def test_bad_control_files_are_refused_with_path_and_line(tmp_path: Path) -> None:
    folder = tmp_path / "controls"
    write_controls(folder, [revenue("a", "x", PASS), {**revenue("b", "y", PASS), "fact": "nope"}])
    (folder / "d.yaml").write_text(
        "controls:\n  - id: a\n    class: t\n    fact: hl_q2_net_revenue\n    reply: r\n"
        "    label: {verdict: fail}\n",
        encoding="utf-8",
    )
    with pytest.raises(ControlsError) as caught:
        load_controls(folder, MANIFEST, tmp_path)
    shown = [str(p) for p in caught.value.problems]
    assert any("c.yaml:" in p and "unknown fact 'nope'" in p for p in shown)
    assert any(p.startswith("controls/d.yaml:6:") and "failing" in p for p in shown)


def test_fresh_folder_is_its_own_split(tmp_path: Path) -> None:
    folder = tmp_path / "controls"
    write_controls(folder, [revenue("a", "x", PASS)])
    write_controls(folder / "fresh", [revenue("b", "x", PASS)])
    loaded = load_controls(folder, MANIFEST, tmp_path)
    assert [c.control.id for c in select(loaded, "fresh")] == ["b"]
    assert len(select(loaded, "all")) == 2


# -- statistics -----------------------------------------------------------------------------
def test_kappa_matches_scikit_learn() -> None:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(3)
    for _ in range(20):
        a = rng.integers(0, 2, 40).tolist()
        b = [x if rng.random() < 0.8 else 1 - x for x in a]
        assert cohen_kappa(a, b) == pytest.approx(cohen_kappa_score(a, b), abs=1e-4)


def test_ac1_on_a_worked_example() -> None:
    # 100 items, both raters pass 80, agree on 90: pa = .9, pi = .8, pe = 2*.8*.2 = .32,
    # AC1 = (.9 - .32) / .68; kappa on the same table is (.9 - .68) / .32.
    a = [1] * 75 + [1] * 5 + [0] * 5 + [0] * 15
    b = [1] * 75 + [0] * 5 + [1] * 5 + [0] * 15
    assert gwet_ac1(a, b) == pytest.approx((0.9 - 0.32) / 0.68, abs=1e-4)
    assert cohen_kappa(a, b) == pytest.approx((0.9 - 0.68) / 0.32, abs=1e-4)


def test_bootstrap_interval_brackets_the_estimate() -> None:
    a = [1, 0] * 30
    b = [1, 0] * 25 + [0, 1] * 5
    e = estimate("agreement", a, b, resamples=500, seed=1)
    assert e.low is not None and e.high is not None and e.low <= e.value <= e.high  # type: ignore[operator]
    assert estimate("kappa", [], []).value is None


def test_icc_matches_shrout_and_fleiss() -> None:
    # Shrout & Fleiss (1979), table 2: six targets rated by four judges; ICC(1,1) = .17.
    scores = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]
    assert icc_oneway(scores) == pytest.approx(0.1657, abs=1e-3)
    assert icc_oneway([[5, 5], [7, 7]]) == 1.0
    assert icc_oneway([[5], [7]]) is None


# -- running a judge on controls -------------------------------------------------------------
def _outcomes(tmp_path: Path, controls: list[dict[str, object]], repeats: int = 1) -> list:
    write_controls(tmp_path / "c", controls)
    loaded = load_controls(tmp_path / "c", MANIFEST, tmp_path)
    return asyncio.run(judge_controls(CodeJudge(), loaded, MANIFEST, ROOT, RULES, repeats=repeats))


def test_runner_counts_false_passes_false_fails_and_deferrals(tmp_path: Path) -> None:
    outcomes = _outcomes(
        tmp_path,
        [
            revenue("right", "Net revenue was $8.6 million.", PASS),
            revenue("wrong", "Net revenue was $11 million.", FAIL),
            revenue("list", "It was $7.9M, $8.6M or $16.5M.", FAIL),
            revenue("mislabelled", "Net revenue was $8.6 million.", FAIL),
            revenue(
                "unsettled",
                "Net revenue was $8.6 million and net revenue was "
                "$9.9 million for the same period.",
                PASS,
            ),
        ],
        repeats=2,
    )
    s = summarize(outcomes, resamples=200)
    assert s["controls"] == 5 and s["judged"] == 4 and s["coverage"] == 0.8
    assert s["false_passes"] == 1 and s["false_fail_rate"] == 0.0
    assert s["confusion"]["pass"]["deferred"] == 1
    assert s["agreement"]["value"] == 0.75
    # The judge here is the code judge itself: beside itself it agrees exactly.
    assert s["code_settled"] == {"controls": 4, "judged": 4, "agreement": 0.75,
                                 "false_passes": 1, "code_agreement": 0.75,
                                 "code_false_passes": 1}  # fmt: skip
    c = consistency(outcomes)
    assert c is not None and c["repeats"] == 2 and c["identical_verdicts"] == 1.0


def test_grade_uses_the_scoring_rules() -> None:
    from agenteval.schema.transcript import Participant
    from agenteval.schema.verdict import TurnVerdict, Verdict

    verdict = Verdict(
        scenario_id="s", scenario_digest="d", transcript_digest="t",
        judge=Participant(kind="x"), status="JUDGED",
        turns=[TurnVerdict(turn=1, scores={"correctness": 4.0, "tool_selection": 10.0})],
    )  # fmt: skip
    assert grade(verdict, RULES).verdict == "pass"  # (.25*4 + .2*10)/.45 = 6.67
    verdict.turns[0].scores["correctness"] = 3.9
    assert grade(verdict, RULES).verdict == "fail"
    verdict.status = "ERRORED"
    assert grade(verdict, RULES).verdict == "deferred"


def test_controls_schema_rejects_unknown_fields() -> None:
    with pytest.raises(ValueError):
        Control.model_validate({**revenue("a", "x", PASS), "replyy": "typo"})


def test_leave_one_class_out_counts_only_classes_no_rule_was_tuned_on(tmp_path: Path) -> None:
    """A class a rule was tuned on cannot flatter the unseen figure: it is shown, marked,
    and left out of the pool; a record naming a class no control has is refused."""
    from agenteval.controls.report import build_report, render_markdown

    seen = {**revenue("seen", "Net revenue was $8.6 million.", PASS), "class": "tuned_class"}
    unseen_ok = {**revenue("u1", "Net revenue was $8.6 million.", PASS), "class": "fresh_kind"}
    unseen_bad = {**revenue("u2", "Net revenue was $8.6 million.", FAIL), "class": "fresh_kind"}
    outcomes = _outcomes(tmp_path, [seen, unseen_ok, unseen_bad])
    folder = tmp_path / "c"
    (folder / "tuning.yaml").write_text("tuned:\n  rule_a: [tuned_class]\n", encoding="utf-8")
    assert len(load_controls(folder, MANIFEST, tmp_path)) == 3, "the record is not a control"
    tuned = tuned_by(load_tuning(folder, {"tuned_class", "fresh_kind"}, tmp_path))
    section = load_params(ROOT / "params.yaml")["controls"]
    report = build_report(outcomes, CodeJudge().participant, "all", section, "d", tuned)
    loco = report["leave_one_class_out"]
    assert loco["unseen_classes"] == ["fresh_kind"]
    assert loco["unseen"]["controls"] == 2 and loco["unseen"]["false_passes"] == 1
    row = loco["classes"]["tuned_class"]
    assert row["tuned_by"] == ["rule_a"] and row["held_out"] is False
    assert "| fresh_kind | never (held out) |" in render_markdown(report)
    (folder / "tuning.yaml").write_text("tuned:\n  rule_a:\n    - tuned_clas\n", "utf-8")
    with pytest.raises(ControlsError) as caught:
        load_tuning(folder, {"tuned_class"}, tmp_path)
    assert str(caught.value.problems[0]).startswith("c/tuning.yaml:3:")


# -- the command and the report --------------------------------------------------------------
def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agenteval", "controls", "--no-track", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_cli_reports_and_exits_2_below_thresholds(tmp_path: Path) -> None:
    folder = tmp_path / "controls"
    write_controls(folder, [revenue("ok", "Net revenue was $8.6 million.", PASS),
                            revenue("bad", "Net revenue was $8.6 million.", FAIL)])  # fmt: skip
    out = tmp_path / "out"
    ok = _cli(tmp_path, "--split", "all", "--out", str(out), "--set", f"controls.folder={folder}",
              "--set", "controls.max_false_passes=1", "--set", "controls.min_agreement=0",
              "--set", "controls.gated_splits=[dev,held]")  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    report = json.loads((out / "controls.json").read_text())
    assert report["overall"]["false_passes"] == 1 and report["passed"]
    assert "| label \\ judge |" in (out / "controls.md").read_text()
    gated = ["--set", "controls.gated_splits=[dev,held]"]
    strict = _cli(tmp_path, "--split", "all", "--out", str(out), "--set",
                  f"controls.folder={folder}", *gated)  # fmt: skip
    assert strict.returncode == 2 and "below thresholds" in strict.stderr
    bad = _cli(tmp_path, "--split", "nope")
    assert bad.returncode == 2 and "--split" in bad.stderr and not (tmp_path / "x").exists()


def test_the_code_judge_meets_the_gate_on_held_and_fresh(tmp_path: Path) -> None:
    """The instrument the shipped default uses: no false pass on controls it never saw."""
    from agenteval.controls.measure import measure_judge

    params = load_params(ROOT / "params.yaml")
    report = measure_judge(params, ROOT, tmp_path, split="all").report
    assert report["passed"], report["misses"]
    for split in ("held", "fresh"):
        assert report["splits"][split]["false_passes"] == 0


def test_controls_are_logged_to_mlflow_once_per_judge(tmp_path: Path) -> None:
    from agenteval.tracking.controls import JUDGE_DIGEST_TAG, log_controls
    from agenteval.tracking.store import mlflow_client

    outcomes = _outcomes(tmp_path, [revenue("right", "Net revenue was $8.6 million.", PASS)])
    from agenteval.controls.report import build_report

    section = load_params(ROOT / "params.yaml")["controls"]
    report = build_report(outcomes, CodeJudge().participant, "all", section, "digest", {})
    params = {"tracking": {"uri": f"sqlite:///{tmp_path / 'mlflow.db'}"}}
    run_id, created = log_controls(report, params, tmp_path)
    again, created_again = log_controls(report, params, tmp_path)
    assert created and not created_again and again == run_id
    with mlflow_client(params["tracking"]["uri"]) as client:
        run = client.get_run(run_id)
    assert run.data.tags[JUDGE_DIGEST_TAG] == CodeJudge().participant.config_digest
    assert run.data.metrics["all.agreement"] == 1.0
    assert run.data.metrics["unseen.agreement"] == 1.0 and run.data.metrics["loco.t.held_out"]


# -- the re-ask cap (scoring.REASK_CAP) on the shipped re-ask controls -----------------------
def _reask_outcomes(flag: Callable[[str], bool]) -> dict[str, list[str]]:
    """The shipped `reask` controls judged by a model that scores 9 everywhere and flags a
    re-ask where `flag(case)` says: context retention out of each control's labelled range."""
    from servers import OpenAIServer, Reply
    from servers.judges import case_text, is_scenario_request, scenario_json

    from agenteval.judges.base import make_judge
    from agenteval.params import DEFAULTS, deep_merge

    def reply(body: Any) -> Reply:
        if is_scenario_request(body):
            return Reply(text=scenario_json("PASS"))
        scores = {d: {"reasoning": "r", "score": 9.0} for d in DIMENSIONS}
        scores["correctness"]["score"] = 10.0
        flagged = flag(case_text(body))
        return Reply(text=json.dumps({"scores": scores, "total": 9.0, "reasked": flagged}))

    loaded = load_controls(ROOT / "eval/judge_controls", MANIFEST, ROOT)
    reask = [c for c in loaded if c.control.klass == "reask"]
    with OpenAIServer(reply_fn=reply) as server:
        section = {"kind": "llm", "model": "judge-model", "base_url": server.base_url}
        params = deep_merge(DEFAULTS, {"judge": section, "run": {"cache_dir": None}})
        judge = make_judge(params, ROOT)
        outcomes = asyncio.run(judge_controls(judge, reask, MANIFEST, ROOT, RULES))
    retention = "context_retention="
    return {o.id: [f for f in o.out_of_range() if f.startswith(retention)] for o in outcomes}


def test_reask_controls_catch_a_judge_blind_to_reasks_and_one_that_flags_everything() -> None:
    asks_again = ("Which bike do you mean?", "which incident number")
    honest = _reask_outcomes(lambda case: any(a in case for a in asks_again))
    assert len(honest) == 4 and not any(honest.values())  # the cap brings 9 down to 4
    blind = _reask_outcomes(lambda _case: False)
    assert {i for i, bad in blind.items() if bad} == {"reask_cw_which_bike",
                                                      "reask_ks_which_incident"}  # fmt: skip
    eager = _reask_outcomes(lambda _case: True)
    assert {i for i, bad in eager.items() if bad} == {"reask_cw_remembers_bike",
                                                      "reask_ks_remembers_incident"}  # fmt: skip
