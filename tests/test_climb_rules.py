"""The pure parts of a hillclimb: Thresholdout, the keep rule's bound, the guard, one edit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from agenteval.climb.artifacts import Change, Edit, Spec, set_knob
from agenteval.climb.failures import REMOVED, failure_class, redact
from agenteval.climb.guard import Guard, Material
from agenteval.climb.holdout import HoldoutSpent, Thresholdout
from agenteval.climb.keep import KeepRule, held_verdict, lower_bound, paired_delta, pass_shares
from agenteval.climb.meaning import Truth
from agenteval.climb.proposers import Context, SearchProposer, parse_edit
from agenteval.schema.agent import KnobRange
from agenteval.schema.scorecard import ScenarioResult, Scorecard, Summary, TurnResult
from agenteval.schema.suite import Suite

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "eval/agents/default/system_prompt.md"


# ------------------------------------------------------------------ Thresholdout


def mechanism(**kw: float) -> Thresholdout:
    args = {"threshold": 0.1, "noise": 0.0, "budget": 2, "max_queries": 5} | kw
    return Thresholdout(**args)  # type: ignore[arg-type]


def test_agreeing_splits_are_answered_with_the_training_value_for_free() -> None:
    m = mechanism()
    answer = m.query(train=0.30, held=0.25)
    assert (answer.value, answer.source) == (0.30, "train")
    assert (m.queries, m.overfits) == (1, 0)


def test_a_disagreement_answers_with_held_and_spends_budget() -> None:
    m = mechanism()
    answer = m.query(train=0.30, held=0.05)
    assert (answer.value, answer.source) == (0.05, "held")  # sigma 0: no noise
    assert (m.queries, m.overfits) == (1, 1)
    m.query(train=0.30, held=0.0)
    assert m.spent_reason() and "budget" in m.spent_reason()  # type: ignore[operator]
    with pytest.raises(HoldoutSpent):
        m.query(train=0.1, held=0.1)


def test_every_query_counts_against_max_queries() -> None:
    m = mechanism(max_queries=2)
    m.query(0.2, 0.2)
    m.query(0.2, 0.2)
    with pytest.raises(HoldoutSpent, match="2 of 2 held queries used"):
        m.query(0.2, 0.2)


def test_the_noise_is_laplace_and_a_saved_state_continues_exactly() -> None:
    m = mechanism(noise=0.05, budget=10_000, max_queries=10_000, threshold=0.0)
    noise = [m.query(train=1.0, held=0.0).noise for _ in range(3000)]
    # Lap(b): mean 0, mean absolute deviation b.
    assert abs(float(np.mean(noise))) < 0.005 and abs(np.mean(np.abs(noise)) - 0.05) < 0.005
    first = mechanism(noise=0.05, seed=3)
    first.query(0.3, 0.0)
    copy = Thresholdout.from_state(first.state())
    assert first.query(0.3, 0.0) == copy.query(0.3, 0.0)


def _overfit_experiment(guarded: bool) -> tuple[float, float]:
    """Dwork et al.'s experiment: no feature predicts the label, the analyst keeps the
    features both splits 'confirm' and reports the holdout accuracy of their vote."""
    rng = np.random.default_rng(7)
    n, d = 1000, 1000
    x_train, x_held, x_fresh = (rng.choice([-1.0, 1.0], size=(n, d)) for _ in range(3))
    y_train, y_held, y_fresh = (rng.choice([-1.0, 1.0], size=n) for _ in range(3))
    train_corr, held_corr = x_train.T @ y_train / n, x_held.T @ y_held / n
    # T and sigma scaled to n as in the paper (T = 0.04 at n = 10,000): a few sd of the gap.
    m = Thresholdout(threshold=0.1, noise=0.03, budget=1000, max_queries=10_000, seed=2)
    answers = [
        m.query(t, h).value if guarded else h for t, h in zip(train_corr, held_corr, strict=True)
    ]
    bar = 1 / np.sqrt(n)
    keep = [j for j in range(d) if abs(train_corr[j]) > bar and answers[j] * train_corr[j] > bar**2]
    weights = np.sign(train_corr[keep])

    def accuracy(x: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(np.sign(x[:, keep] @ weights + 1e-9) == y))

    return accuracy(x_held, y_held), accuracy(x_fresh, y_fresh)


def test_repeated_adaptive_queries_do_not_overfit_the_holdout() -> None:
    held, fresh = _overfit_experiment(guarded=False)
    # No feature predicts anything: every accuracy above 0.5 is overfitting (sd about 0.016).
    assert held > 0.6 and abs(fresh - 0.5) < 0.05  # a plain holdout is fooled
    held, fresh = _overfit_experiment(guarded=True)
    assert held < 0.54 and abs(fresh - 0.5) < 0.05  # through Thresholdout it stays near 0.5


# ------------------------------------------------------------------ keep rule


def card(passes: dict[str, list[str]]) -> Scorecard:
    results = [
        ScenarioResult(id=sid, iteration=i, category="c", status=status, score=None)
        for sid, statuses in passes.items()
        for i, status in enumerate(statuses)
    ]
    summary = Summary(total=len(results), passed=0, failed=0, blocked=0, pass_rate=None,
                      judged_pass_rate=None, avg_score=None)  # fmt: skip
    return Scorecard(summary=summary, config={}, scenarios=results)


def test_the_lower_bound_is_the_one_sided_student_bound() -> None:
    diffs = [0.0, 1.0, 1 / 3, 0.0, 2 / 3, -1 / 3, 1.0, 0.0]
    expected = sps.ttest_1samp(diffs, 0.0, alternative="greater").confidence_interval(0.95).low
    assert lower_bound(diffs, 0.95) == pytest.approx(expected)
    assert lower_bound([0.5, 0.5, 0.5], 0.95) == pytest.approx(0.5)  # no spread: the mean


def test_unmeasured_runs_count_as_not_passed() -> None:
    parent = card({"a": ["FAIL"] * 3, "b": ["PASS"] * 3})
    gamed = card({"a": ["NOT_JUDGED"] * 3, "b": ["PASS", "PASS", "ERRORED"]})
    assert pass_shares(gamed, ["a", "b", "c"]) == {"a": 0.0, "b": 2 / 3, "c": 0.0}
    delta = paired_delta(parent, gamed, ["a", "b"], 0.95)
    assert delta.mean < 0 and delta.worsened == ["b"]
    assert delta.candidate_judged == 1.0  # the judged rate rose, which is why it does not decide


def test_held_is_judged_on_what_thresholdout_releases() -> None:
    ids = [f"s{i}" for i in range(6)]
    parent = card({s: ["FAIL"] * 3 for s in ids})
    better = card({s: ["PASS"] * 3 if s in ("s0", "s1", "s2") else ["FAIL"] * 3 for s in ids})
    train = paired_delta(parent, better, ids, 0.95)
    knob = KeepRule("knob", -0.05, "non-inferior")
    agree = held_verdict(train, paired_delta(parent, better, ids, 0.95), mechanism(), knob, 0.95)
    assert agree.source == "train" and agree.kept
    worse_ids = {s: ["FAIL"] * 3 for s in ids} | {"s0": ["FAIL"] * 3}
    hurt = card(worse_ids | {"s5": ["FAIL"] * 3})
    base_held = card({s: ["PASS"] * 3 if s in ("s4", "s5") else ["FAIL"] * 3 for s in ids})
    held = paired_delta(base_held, hurt, ids, 0.95)
    verdict = held_verdict(train, held, mechanism(), knob, 0.95)
    assert verdict.source == "held" and not verdict.kept


# ------------------------------------------------------------------ the guard


@pytest.fixture(scope="module")
def guard() -> Guard:
    from agenteval.params import load_params
    from agenteval.suite.build import build_suite

    suite: Suite = build_suite(load_params(ROOT / "params.yaml"), ROOT)
    knobs = {"top_k": KnobRange(type="int", low=1, high=10)}
    spec = Spec(ROOT, "eval/agents/default", (PROMPT,), knobs)
    return Guard(spec, Material.of(suite, ["data/corpora/licenses/gpl-3.0.txt"]))


def prompt_edit(added: str) -> Change:
    old = (ROOT / PROMPT).read_bytes()
    return Change({PROMPT: (old, old + added.encode())})


def held_question(guard: Guard) -> str:
    return next(q for q, where in guard.material.questions.items()
                if {s for _, s in where} == {"held"} and len(q.split()) > 8)  # fmt: skip


def test_a_general_edit_passes(guard: Guard) -> None:
    assert (
        guard.check(prompt_edit("- When a figure appears in a table, read the whole row.\n")) == []
    )


@pytest.mark.parametrize(
    ("added", "reason"),
    [
        ("- For csv_cell_lookup answer from column C.\n", "scenario id 'csv_cell_lookup' (train)"),
        ("- The budget total came to $199,690.\n", "ground-truth value '$199,690'"),
        ("- Look in harbor_lantern_q2_report.md first.\n", "corpus path"),
        ("- Licences: see gpl-3.0.txt.\n", "corpus path 'gpl-3.0.txt'"),
    ],
)
def test_quoting_the_suite_is_refused(guard: Guard, added: str, reason: str) -> None:
    reasons = guard.check(prompt_edit(added))
    assert any(reason in r for r in reasons), reasons


def test_a_held_question_asked_again_in_any_order_is_a_leak(guard: Guard) -> None:
    question = held_question(guard)
    shuffled = " ".join(reversed(question.rstrip("?").split())).upper()
    reasons = guard.check(prompt_edit(f"- Users ask things like: {shuffled}.\n"))
    assert any(r.startswith("leaks a held question") for r in reasons), reasons


def test_only_added_text_is_read(guard: Guard) -> None:
    old = b"See eval/corpus/documents/report.md and csv_cell_lookup.\n"
    change = Change({PROMPT: (old, old + b"- Be brief.\n")})
    assert guard.check(change) == []


def test_knobs_other_files_and_two_edits(guard: Guard) -> None:
    params = (ROOT / "params.yaml").read_bytes()
    assert guard.check(Change({"params.yaml": (params, set_knob(params, "top_k", 6))})) == []
    outside = guard.check(Change({"params.yaml": (params, set_knob(params, "top_k", 60))}))
    assert "outside its range [1, 10]" in outside[0]
    other = guard.check(Change({"params.yaml": (params, set_knob(params, "chunk_size", 500))}))
    assert "not an editable knob" in other[0]
    judge = params.replace(b"pass_threshold: 6.0", b"pass_threshold: 5.0")
    assert "judge.pass_threshold" in guard.check(Change({"params.yaml": (params, judge)}))[0]
    both = Change({"params.yaml": (params, set_knob(params, "top_k", 6))})
    both.files |= prompt_edit("- Be brief.\n").files
    assert any(r.startswith("one edit a round") for r in guard.check(both))
    tampered = Change({"eval/prompts/judge_turn.md": (b"a", b"b")})
    assert "not in the agent's editable list" in guard.check(tampered)[0]
    assert guard.check(Change({PROMPT: (b"same", b"same")})) == ["the edit changes nothing"]


def test_set_knob_keeps_every_other_byte() -> None:
    params = (ROOT / "params.yaml").read_bytes()
    changed = set_knob(params, "top_k", 6)
    diff = [a for a, b in zip(params.splitlines(), changed.splitlines(), strict=True) if a != b]
    assert diff == [line for line in params.splitlines() if line.strip().startswith(b"top_k:")]
    assert set_knob(changed, "top_k", 4) == params


# ------------------------------------------------------------------ failures and proposers


def test_failure_classes_and_references_removed() -> None:
    turn = TurnResult(turn=1, scores={"correctness": 0.0, "tool_selection": 10.0}, score=2.0,
                      passed=False)  # fmt: skip
    failing = ScenarioResult(id="x", category="c", status="FAIL", score=2.0, turns=[turn])
    assert failure_class(failing, "turn 1: refused; expected '$48,000'") == (
        "refused an answerable question"
    )
    assert failure_class(failing, "turn 1: states '$95' instead of '$2,690'") == (
        "stated a wrong value"
    )
    weak = TurnResult(turn=1, scores={"correctness": 10.0, "efficiency": 2.0}, score=5.0,
                      passed=False)  # fmt: skip
    slow = ScenarioResult(id="y", category="c", status="FAIL", score=5.0, turns=[weak])
    assert failure_class(slow, None) == "weak efficiency"
    unmeasured = ScenarioResult(id="z", category="c", status="NOT_JUDGED", score=None)
    assert failure_class(unmeasured, None) == "not judged"
    material = Material(truths=[Truth("$2,690", (("a", "train"),)),
                                Truth("Lior Tamsin", (("b", "held"),))])  # fmt: skip
    text = redact("states '$95' instead of '$2,690'; said Lior Tamsin; expected 'x'", material)
    assert "$2,690" not in text and "Lior" not in text and text.count(REMOVED) == 3


def test_parse_edit_reads_one_json_object() -> None:
    assert parse_edit('Sure: {"knob": "top_k", "value": 6, "why": "w"}') == Edit(
        knob="top_k", value=6, why="w"
    )
    assert parse_edit('{"file": "a.md", "text": "t"}') == Edit(file="a.md", text="t")
    assert parse_edit("no json here") is None
    assert parse_edit('{"knob": "top_k"}') is None


def test_search_tries_moves_on_train_and_proposes_the_best() -> None:
    knobs = {"top_k": KnobRange(type="int", low=1, high=10)}
    spec = Spec(ROOT, "eval/agents/default", (), knobs)
    tried: list[int] = []

    def try_train(edit: Edit) -> object:
        tried.append(int(edit.value or 0))
        return type("D", (), {"low": -abs(int(edit.value or 0) - 7) / 10})()

    ctx = Context(spec, {"top_k": 4}, {}, [], try_train=try_train)  # type: ignore[arg-type]
    edit = SearchProposer(seed=0, trials=10).propose(ctx)
    assert (
        edit is not None
        and edit.knob == "top_k"
        and edit.value == max(tried, key=lambda v: -abs(v - 7))
    )
    assert 4 not in tried and len(set(tried)) == len(tried) <= 10
