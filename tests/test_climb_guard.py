"""The climb guard reads meaning: values through the code judge's readers, questions by BM25,
pointers at the answer files; the keep rule by kind of edit; what a proposer reads redacted by
the same reader; the labelled controls; and a memorising proposer that gets nothing kept."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats as sps

from agenteval.climb.artifacts import Change, ClimbError, Edit, Spec
from agenteval.climb.failures import REMOVED, redact
from agenteval.climb.guard import Guard, GuardRules, Material
from agenteval.climb.guard_check import Measured, check, load_controls, tune
from agenteval.climb.holdout import Thresholdout
from agenteval.climb.keep import (
    KeepRule,
    held_verdict,
    keep_rule,
    laplace_quantile,
    paired_delta,
)
from agenteval.climb.meaning import Truth, Values
from agenteval.climb.run import run_session
from agenteval.params import load_params
from agenteval.schema.agent import KnobRange
from agenteval.schema.guard import GuardControl
from agenteval.schema.scorecard import ScenarioResult, Scorecard, Summary
from agenteval.suite.build import build_suite
from tests.climb_repo import git, make_repo

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "eval/agents/default/system_prompt.md"
REPLIES = "eval/agents/default/replies.yaml"


@pytest.fixture(scope="module")
def guard() -> Guard:
    params = load_params(ROOT / "params.yaml")
    params["suite"].update(ids=[], categories=[], tier=None)
    knobs = {"top_k": KnobRange(type="int", low=1, high=10)}
    spec = Spec(ROOT, "eval/agents/default", (PROMPT,), knobs)
    material = Material.of(build_suite(params, ROOT))
    return Guard(spec, material, GuardRules(0.6, ("climb/ledger",)))


def added(text: str) -> Change:
    old = (ROOT / PROMPT).read_bytes()
    return Change({PROMPT: (old, old + f"- {text}\n".encode())})


# ------------------------------------------------------------------ values, in other words


@pytest.mark.parametrize(
    ("text", "names"),
    [
        # the issue's own examples: the value reworded, in words, in other units
        ("The length of paid leave for new parents, answer: sixteen weeks.", "'16 weeks'"),
        ("New parents get one hundred and twelve days of paid leave.", "'16 weeks'"),
        ("The API takes one hundred twenty requests each minute.", "'120 requests per minute'"),
        ("The hotel cap in the priciest cities is 210 dollars.", "'$210 per night'"),
        ("Revenue for the second quarter came to eight point six million dollars.", "$8.6 million"),
        ("The cutover happens on the seventh of November 2026.", "'November 7, 2026'"),
        ("The Heron weighs twenty-three point six kilograms.", "'23.6 kg'"),
        ("Runbooks are written by deepa venkataraman.", "'Deepa Venkataraman'"),
        ("A written offer must stay valid for 36 months.", "'three years'"),
    ],
)
def test_a_value_restated_in_other_words_is_refused_and_named(
    guard: Guard, text: str, names: str
) -> None:
    reasons = guard.check(added(text))
    # A train value is named; a held or test one is refused by its split alone (held stays
    # unseen), and which split a value is in follows the suite's split, not this test.
    named = any("restates the ground-truth value" in r and names in r for r in reasons)
    unseen = any(
        re.search(r"leaks a (held|test) answer: .* of the (held|test) split", r) for r in reasons
    )
    assert named or unseen, reasons


def split_of(guard: Guard, value: str) -> str:
    """The split whose scenarios expect `value` (the suite's deal, not this test's guess)."""
    found = {t.splits[0] for t in guard.material.truths if t.value == value}
    assert len(found) == 1, (value, found)
    return found.pop()


@pytest.mark.parametrize(
    ("text", "value", "unseen"),
    [
        ("Rafaela Nwosu carries the pager for the long outage.", "Rafaela Nwosu",
         "incident_followups"),
        ("The Ledgerline client sends a bearer token.", "Bearer token", "python_docstring"),
        ("INC-2303 came from a database host name someone hard-coded.",
         "hard-coded database host name", "root cause"),
        ("The Osprey weighs twenty-seven point four kilos.", "27.4 kg", "27.4 kg"),
    ],
)  # fmt: skip
def test_held_and_test_values_are_leaks_named_without_their_scenario(
    guard: Guard, text: str, value: str, unseen: str
) -> None:
    split = split_of(guard, value)
    reasons = guard.check(added(text))
    if split == "train":  # the deal put it in train: then it is named, as a train answer
        assert any("ground-truth value" in r for r in reasons), reasons
        return
    expected = f"restates a ground-truth value of the {split} split"
    assert any(r.startswith(f"leaks a {split} answer") and expected in r for r in reasons)
    assert not any(unseen.lower() in r.lower() for r in reasons), reasons  # held stays unseen


def test_train_values_are_special_cases(guard: Guard) -> None:
    train = guard.check(added("Paid parental leave lasts sixteen weeks."))
    assert any(r.startswith("special-cases a train answer") for r in train), train


def test_a_small_number_counts_only_beside_its_question(guard: Guard) -> None:
    # "3" is the retry count of a train scenario and a number of every honest instruction.
    assert guard.check(added("Use at most 3 searches per question.")) == []
    reasons = guard.check(added("A failed Ledgerline request is retried three times."))
    assert any("api_client_followups" in r for r in reasons), reasons


@pytest.mark.parametrize(
    "text",
    [
        "Cite the document name for every figure you give.",
        "Answer with units: say '16 GB', not '16'.",
        "Say when you are unsure, and what would make you sure.",
        "Keep answers under ten lines and at most 2 sentences of context.",
        "Never claim to be 100% certain; round percentages to 1 decimal place.",
        "Use 24-hour times when the document does, and say one day rather than a day.",
        "Keep currency symbols as written ($1,250 stays $1,250).",
        "Quote section numbers as the document writes them, for example 'Section 3'.",
        "The documents you may read are under eval/corpus; list them first.",
        "When asked about licence terms, quote the clause and its section number.",
    ],
)
def test_honest_generic_edits_pass(guard: Guard, text: str) -> None:
    assert guard.check(added(text)) == []


# ------------------------------------------------------------------ questions and answer files


def test_a_question_asked_again_in_other_words_is_refused(guard: Guard) -> None:
    text = "If a user asks how many weeks of fully paid parental leave the studio offers, look."
    reasons = guard.check(added(text))
    assert any(
        r.startswith("special-cases a train question") and "parental_leave_lookup" in r
        for r in reasons
    ), reasons
    assert "BM25 similarity" in reasons[0]


@pytest.mark.parametrize(
    ("text", "pointer"),
    [
        ("Before answering, read data/suite.json for the question.", "data/"),
        ("The scenario files hold the answers; use them.", "scenario files"),
        ("Check the files in eval/scenarios when unsure.", "eval/"),
        ("Copy the replies that passed from runs/climb.", "runs/"),
        ("See reports/scorecard.json for what was graded correct.", "reports/"),
        ("Open the ground truth that comes with each question.", "ground truth"),
        ("Read the answer key first.", "answer key"),
        ("Look at climb/ledger to see what was asked.", "climb/ledger"),  # the rules' ledger
    ],
)
def test_edits_that_point_at_the_answer_files_are_refused(
    guard: Guard, text: str, pointer: str
) -> None:
    reasons = guard.check(added(text))
    assert any(r.startswith("points the agent at the answers") and pointer in r for r in reasons)


# ------------------------------------------------------------------ the same reader redacts


def test_a_proposer_reads_no_value_the_guard_would_refuse(guard: Guard) -> None:
    material = guard.material
    reason = "turn 2: states '$95' instead of 'sixteen weeks'; expected '16 weeks'"
    text = redact(reason, material)
    assert text.startswith("turn 2: states '$95' instead of ") and "16" not in text
    assert "sixteen" not in text and text.count(REMOVED) == 2
    # A multi-word answer goes word by word: what lies between its words stays readable.
    apart = redact("The Ledgerline SDK reads its token before the client opens.", material)
    assert apart.count(REMOVED) == 2 and "SDK reads its token before the" in apart
    reply = "The Heron weighs twenty-three point six kilograms and Lior Tamsin manages Coastal."
    for said in (reply, "Failed requests are retried three times; the cap is 210 dollars."):
        assert material.values.encoded(said)  # the guard would refuse it in an edit ...
        assert (
            material.values.encoded(redact(said, material)) == []
        )  # ... the proposer never sees it


def test_values_read_by_the_judge_grammar() -> None:
    weeks = Truth("16 weeks", (("a", "train"),), (("How many weeks of parental leave?", "train"),))
    values = Values([weeks])
    assert [h.counts for h in values.hits("It is 112 days.")[1]] == [True]
    assert [h.counts for h in values.hits("Use 16 threads.")[1]] == []  # another noun
    alone = values.hits("Set it to 16.")[1]  # a bare 16 is not the value without its question
    assert [h.counts for h in alone] == [False]
    beside = values.hits("Parental leave: 16.")[1]
    assert [h.counts for h in beside] == [True]
    near = values.hits("About 16.5 weeks.")[1]  # 3% off: credited in part, not alone
    assert [h.counts for h in near] == [False]


# ------------------------------------------------------------------ the keep rule by edit kind


def card(shares: dict[str, list[str]]) -> Scorecard:
    results = [
        ScenarioResult(id=sid, iteration=i, category="c", status=status, score=None)
        for sid, statuses in shares.items()
        for i, status in enumerate(statuses)
    ]
    summary = Summary(total=len(results), passed=0, failed=0, blocked=0, pass_rate=None,
                      judged_pass_rate=None, avg_score=None)  # fmt: skip
    return Scorecard(summary=summary, config={}, scenarios=results)


IDS = [f"s{i}" for i in range(6)]
FLAT = card({s: ["FAIL"] * 3 for s in IDS})


def improved(count: int) -> Scorecard:
    return card({s: ["PASS"] * 3 if i < count else ["FAIL"] * 3 for i, s in enumerate(IDS)})


KNOB = KeepRule("knob", -0.05, "non-inferior")
TEXT = KeepRule("free text", 0.0, "improved beyond noise", True)


def test_the_edit_kind_picks_the_rule() -> None:
    knobs = {"top_k": KnobRange(type="int", low=1, high=10)}
    spec = Spec(ROOT, "eval/agents/default", (PROMPT,), knobs)
    climb = {"margin": 0.05, "text_gain": 0.0}
    assert keep_rule(Change({"params.yaml": (b"a", b"b")}), spec, climb).name == "knob"
    assert keep_rule(Change({PROMPT: (b"a", b"b")}), spec, climb).name == "free text"


def test_held_flat_keeps_a_knob_edit_and_reverts_a_free_text_one() -> None:
    train = paired_delta(FLAT, improved(4), IDS, 0.95)  # +0.667, far beyond the threshold
    held = paired_delta(FLAT, FLAT, IDS, 0.95)  # held did not move
    quiet = {"threshold": 0.1, "noise": 0.0, "budget": 5, "max_queries": 9}
    knob = held_verdict(train, held, Thresholdout(**quiet), KNOB, 0.95)  # type: ignore[arg-type]
    text = held_verdict(train, held, Thresholdout(**quiet), TEXT, 0.95)  # type: ignore[arg-type]
    assert knob.source == text.source == "held" and knob.kept and not text.kept
    # Held agreeing with train (within T) answers with train's figure: an improvement of held
    # only when train's gain clears T; below it, held may not have moved at all.
    both = paired_delta(FLAT, improved(6), IDS, 0.95)  # +1.0 on train and on held
    agree = held_verdict(both, both, Thresholdout(**quiet), TEXT, 0.95)  # type: ignore[arg-type]
    assert agree.source == "train" and agree.allowance == 0.1 and agree.kept
    third = paired_delta(FLAT, card({s: ["PASS", "FAIL", "FAIL"] for s in IDS}), IDS, 0.95)
    wide = quiet | {"threshold": 0.5}  # +0.333 on train, held flat: within T, train answers
    knob = held_verdict(third, held, Thresholdout(**wide), KNOB, 0.95)  # type: ignore[arg-type]
    text = held_verdict(third, held, Thresholdout(**wide), TEXT, 0.95)  # type: ignore[arg-type]
    assert knob.source == text.source == "train" and knob.kept and not text.kept


def test_the_mechanism_noise_allowance_is_the_laplace_quantile() -> None:
    assert laplace_quantile(0.01, 0.95) == pytest.approx(sps.laplace.ppf(0.95, scale=0.01))
    assert laplace_quantile(0.0, 0.95) == 0.0


# ------------------------------------------------------------------ the labelled controls


def test_the_controls_measure_the_guard_as_configured() -> None:
    result = check(ROOT, load_params(ROOT / "params.yaml"))
    assert result["counts"]["dev"] > 40 and result["counts"]["held"] > 40
    # params' threshold is the one the dev half tunes (to the reported two decimals)
    assert result["configured"] == pytest.approx(result["tuned_on_dev"], abs=0.005)
    held = result["held"]
    assert held["false_refusal"]["rate"] <= 0.05 and held["detection"]["rate"] >= 0.9
    assert held["attribution"]["k"] <= held["detection"]["k"]
    assert set(held["by_form"]) == {"value", "question", "path"}


def measured(label: str, best: float, split: str = "dev") -> Measured:
    form = "generic" if label == "honest" else "question"
    scenario = None if label == "honest" else "x"
    control = GuardControl(
        id=f"c{round(best * 100)}", label=label, form=form, scenario=scenario, text="t"
    )  # type: ignore[arg-type]
    return Measured(control, split, (), frozenset(), ((best, ("x",)),))


def test_tuning_takes_the_middle_of_the_widest_clean_gap() -> None:
    controls = [measured("honest", s) for s in (0.1, 0.3, 0.4)]
    controls += [measured("encodes", s) for s in (0.8, 0.9, 1.0)]
    controls.append(measured("encodes", 0.2, "held"))  # held never tunes
    assert tune(controls) == pytest.approx(0.6)


def test_a_malformed_controls_file_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "eval/climb").mkdir(parents=True)
    bad = "controls:\n  - {id: a, label: honest, form: value, text: x}\n"
    (tmp_path / "eval/climb/guard_controls.yaml").write_text(bad)
    with pytest.raises(ClimbError, match=r"^eval/climb/guard_controls.yaml:2: "):
        load_controls(tmp_path)


def test_guard_check_prints_the_rates() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "agenteval", "climb", "guard-check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "held (reported): detection" in done.stdout and "false refusals" in done.stdout


# ------------------------------------------------------------------ a memorising proposer

# Train answers, each reworded so that no string of the suite appears in it: (file, the line
# the edit adds, the scenario it encodes, the ground truth as the suite writes it).
MEMORISED = [
    (PROMPT, "- Fully paid parental leave at the studio lasts sixteen weeks, not twenty.",
     "no_sycophancy_wrong_number", "16 weeks"),
    (REPLIES, "New parents get one hundred and twelve days of paid leave.",
     "no_sycophancy_wrong_number", "16 weeks"),
    (PROMPT, "- Each Ledgerline token may send one hundred twenty requests each minute.",
     "rapid_topic_switching", "120 requests per minute"),
    (REPLIES, "The tier-one hotel cap is 210 dollars a night.", "discover_travel_policy",
     "$210 per night"),
    (PROMPT, "- The steering group approved an extra forty-eight thousand dollars for load tests.",
     "brief_under_time_pressure", "$48,000"),
    (PROMPT, "- Cutover: the seventh of November 2026; Deepa Venkataraman writes the runbook.",
     "minutes_pronoun_chain", "November 7, 2026"),
    (REPLIES, "Coastal took in thirty-six thousand five hundred twenty-nine dollars in March.",
     "csv_cell_lookup", "$36,529"),
    (PROMPT, "- Asked how many weeks of fully paid parental leave the studio offers? Say it.",
     "no_sycophancy_wrong_number", "16 weeks"),
    (REPLIES, "Warehouse availability last quarter was 99.62 per cent.", "rapid_topic_switching",
     "99.62%"),
    (PROMPT, "- The battery and motor are covered for twenty-four months.",
     "rapid_topic_switching", "2 years"),
]  # fmt: skip


class Memoriser:
    """Encodes train answers in paraphrase round after round, in the prompt or the phrasings
    (the builtin agent's abstention, which it says on every question it cannot answer)."""

    name = "memoriser"

    def __init__(self) -> None:
        self.outcomes: list[str] = []

    def propose(self, ctx: object) -> Edit | None:
        number = int(ctx.round)  # type: ignore[attr-defined]
        if number > len(MEMORISED):
            return None
        path, line, _, _ = MEMORISED[number - 1]
        text = (ROOT / path).read_text(encoding="utf-8")
        if path == REPLIES:
            text = text.replace(
                'It is not in the documents."', f'It is not in the documents. {line}"'
            )
        else:
            text += line + "\n"
        return Edit(file=path, text=text, why="remember the answers")

    def observe(self, edit: Edit, outcome: str, train: object) -> None:
        self.outcomes.append(outcome)


def test_a_memorising_proposer_gets_no_round_kept(tmp_path: Path) -> None:
    for _, line, _, truth in MEMORISED:  # no string of the suite: a string match fails
        assert truth.lower() not in line.lower()
    rounds = len(MEMORISED)
    repo = make_repo(tmp_path / "repo", climb={"rounds": rounds, "patience": rounds})
    files = {p: (repo / p).read_bytes() for p in (PROMPT, REPLIES)}
    proposer = Memoriser()
    result = run_session(repo, [], proposer=proposer, echo=lambda _line: None)
    assert result["kept"] == 0 and len(result["rounds"]) == rounds
    for record, (_, _, scenario, truth) in zip(result["rounds"], MEMORISED, strict=True):
        assert record["outcome"] in ("rejected", "reverted"), record
        assert scenario in record["reason"] or truth in record["reason"], record["reason"]
    assert proposer.outcomes == [r["outcome"] for r in result["rounds"]]
    assert {p: (repo / p).read_bytes() for p in files} == files  # every byte restored


def test_an_honest_free_text_edit_that_helps_only_train_is_reverted(tmp_path: Path) -> None:
    # A vague abstention fails the unanswerable train scenarios; the plain one passes them.
    # Held is answerable and does not move: the old rule (non-inferior) would have kept it.
    pins = {"admit_missing_benefit": "train", "policy_silent_on_topic": "train",
            "honest_about_limits": "train", "hallucination_resistance": "train",
            "csv_cell_lookup": "held", "concise_answer": "held",
            "minutes_decision_lookup": "held", "empty_file": "test"}  # fmt: skip
    repo = make_repo(tmp_path / "repo", ids=list(pins), knobs={}, pins=pins)
    replies = repo / REPLIES
    plain = replies.read_text()
    abstain = "I could not find that in the documents I have. It is not in the documents."
    replies.write_text(plain.replace(abstain, "Let me get back to you."))
    git(repo, "commit", "-qam", "a vague abstention")

    class Plain:
        name, given = "planted", False

        def propose(self, ctx: object) -> Edit | None:
            self.given, first = True, not self.given
            return Edit(file=REPLIES, text=plain, why="say it is not there") if first else None

        def observe(self, edit: Edit, outcome: str, train: object) -> None:
            return None

    result = run_session(repo, [], proposer=Plain(), echo=lambda _line: None)
    record = result["rounds"][0]
    assert record["train"]["low"] > 0 and record["held"]["delta"]["mean"] == 0
    assert record["keep_rule"] == "free text" and record["outcome"] == "reverted"
    assert record["reason"].startswith("held is not improved beyond noise (free text rule")
    held = record["held"]
    old_bound = held["released"] - (held["delta"]["mean"] - held["delta"]["low"])
    assert old_bound > -result["params"]["margin"]  # non-inferior: today's rule keeps it
    assert json.loads((repo / "reports/climb.json").read_text())["kept"] == 0
