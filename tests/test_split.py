"""The train / held / test split: salted, stratified by category, pinnable, selection-proof."""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from pathlib import Path

import pytest

from agenteval.params import load_params
from agenteval.schema.suite import Suite
from agenteval.split import (
    Member,
    SplitRule,
    assign,
    counts,
    groups,
    ids_of,
    normalise_answer,
    overlaps,
    point,
)
from agenteval.suite.build import build_suite, split_lines

ROOT = Path(__file__).resolve().parents[1]


def members(n_per_category: dict[str, int]) -> list[Member]:
    return [Member(f"{cat}_{i}", cat) for cat, n in n_per_category.items() for i in range(n)]


def test_point_is_the_salted_sha256_as_a_fraction() -> None:
    digest = hashlib.sha256(b"salt\0scenario").digest()
    assert point("salt", "scenario") == int.from_bytes(digest[:8], "big") / 2**64
    assert point("salt", "scenario") != point("other", "scenario")


def test_every_category_is_split_in_proportion() -> None:
    sizes = {"a": 5, "b": 6, "c": 7, "d": 10, "e": 15, "f": 40}
    split = assign(members(sizes), SplitRule())
    for cat, n in sizes.items():
        got = Counter(v for k, v in split.items() if k.startswith(f"{cat}_"))
        for name, share in (("train", 0.6), ("held", 0.25), ("test", 0.15)):
            assert abs(got[name] - share * n) <= 1, (cat, got)
    assert sum(counts(split).values()) == sum(sizes.values())


def test_the_salt_alone_decides_and_a_new_salt_deals_afresh() -> None:
    pool = members({"a": 30, "b": 30})
    first, again = assign(pool, SplitRule()), assign(list(reversed(pool)), SplitRule())
    assert first == again
    rotated = assign(pool, SplitRule(salt="rotated"))
    assert counts(rotated) == counts(first) and rotated != first


def test_a_pinned_split_is_kept_and_the_rest_are_dealt_among_themselves() -> None:
    pool = members({"a": 10})
    pool[0] = Member(pool[0].id, "a", pinned="test")
    split = assign(pool, SplitRule())
    assert split[pool[0].id] == "test"
    unpinned = Counter(v for k, v in split.items() if k != pool[0].id)
    assert unpinned == Counter({"train": 5, "held": 3, "test": 1})  # 9 dealt: .6 / .25 / .15
    with pytest.raises(ValueError, match="split must be one of"):
        assign([Member("x", "a", pinned="dev")], SplitRule())


def test_fractions_must_sum_to_one() -> None:
    with pytest.raises(ValueError, match="sum to 1"):
        SplitRule(train=0.7, held=0.25, test=0.15)
    assert ids_of({"x": "held", "y": "train"}, "held") == ["x"]


def test_the_suite_records_the_split_and_a_selection_never_moves_a_scenario() -> None:
    params = load_params(ROOT / "params.yaml")
    whole = build_suite(params, ROOT)
    assert whole.split is not None and whole.split["salt"] == "agenteval-split-1"
    dealt = {i.scenario.id: i.split for i in whole.items}
    assert set(dealt.values()) == {"train", "held", "test"}
    assert whole.split["counts"] == dict(Counter(dealt.values()))
    params["suite"]["ids"] = sorted(dealt)[:5]
    picked = build_suite(params, ROOT)
    assert {i.scenario.id: i.split for i in picked.items} == {
        k: dealt[k] for k in sorted(dealt)[:5]
    }


def test_an_invalid_pinned_split_is_a_located_error(tmp_path: Path) -> None:
    from agenteval.suite.validate import validate

    source = ROOT / "eval/scenarios/personality/concise_answer.yaml"
    bad = tmp_path / "concise_answer.yaml"
    bad.write_text(source.read_text() + "split: dev\n")
    result = validate([bad], root=ROOT, manifest_path=ROOT / "eval/corpus/manifest.json")
    errors = [p for p in result.problems if p.severity == "error"]
    assert errors and "split" in errors[0].message
    assert errors[0].line == len(source.read_text().splitlines()) + 1


# -- scenarios sharing an expected answer (issue 38.4) ----------------------------------------
def test_answers_compare_after_normalising() -> None:
    assert normalise_answer('  "$8.6  Million." ') == "$8.6 million"
    assert normalise_answer("16 weeks") == normalise_answer("16 Weeks;") != "16"


def test_scenarios_sharing_an_answer_are_dealt_together_through_any_chain() -> None:
    pool = members({"a": 20, "b": 20, "c": 20})
    linked = {"a_1": {"x"}, "b_7": {"x", "y"}, "c_3": {"y"}, "a_9": {"z"}, "c_11": {"z"}}
    pool = [Member(m.id, m.category, answers=frozenset(linked.get(m.id, ()))) for m in pool]
    for salt in ("s1", "s2", "s3", "s4"):
        split = assign(pool, SplitRule(salt=salt))
        assert len({split[i] for i in ("a_1", "b_7", "c_3")}) == 1, salt
        assert split["a_9"] == split["c_11"]
        assert overlaps(pool, split) == []
    assert [len(g) for g in groups(pool) if len(g) > 1] == [3, 2]


def test_groups_keep_every_category_in_proportion() -> None:
    sizes = {"a": 12, "b": 15, "c": 20, "d": 40}
    pool = members(sizes)
    # Pairs and triples across categories, about a third of the scenarios.
    shared = [("a_0", "b_0"), ("a_1", "c_1", "d_1"), ("b_2", "d_2"), ("c_3", "d_3"),
              ("a_4", "d_4", "d_5"), ("b_6", "c_6"), ("c_7", "d_7"), ("d_8", "d_9")]  # fmt: skip
    answer = {sid: f"answer {n}" for n, ids in enumerate(shared) for sid in ids}
    pool = [Member(m.id, m.category, answers=frozenset({answer.get(m.id, m.id)})) for m in pool]
    for salt in ("s1", "s2", "s3"):
        split = assign(pool, SplitRule(salt=salt))
        for cat, n in sizes.items():
            got = Counter(v for k, v in split.items() if k.startswith(f"{cat}_"))
            for name, share in (("train", 0.6), ("held", 0.25), ("test", 0.15)):
                assert abs(got[name] - share * n) <= 2, (salt, cat, got)
        assert overlaps(pool, split) == []


def test_without_shared_answers_the_deal_is_the_plain_stratified_one() -> None:
    pool = members({"a": 7, "b": 13, "c": 30})
    split = assign([Member(m.id, m.category, answers=frozenset({m.id})) for m in pool], SplitRule())
    for cat in ("a", "b", "c"):
        ids = sorted(
            (m.id for m in pool if m.category == cat), key=lambda i: point(SplitRule().salt, i)
        )
        for index, sid in enumerate(ids):
            position = (index + 0.5) / len(ids)
            expected = "train" if position < 0.6 else "held" if position < 0.85 else "test"
            assert split[sid] == expected


def test_a_pin_carries_its_group_and_pins_that_split_one_are_reported() -> None:
    pool = [Member(f"s{i}", "a", answers=frozenset({f"v{i}"})) for i in range(10)]
    pool[0] = Member("s0", "a", pinned="test", answers=frozenset({"shared"}))
    pool[1] = Member("s1", "a", answers=frozenset({"shared"}))
    split = assign(pool, SplitRule())
    assert split["s0"] == split["s1"] == "test" and overlaps(pool, split) == []
    pool[1] = Member("s1", "a", pinned="held", answers=frozenset({"shared", "v1"}))
    pool[2] = Member("s2", "a", answers=frozenset({"v1"}))  # follows its group's first pin
    split = assign(pool, SplitRule())
    assert (split["s0"], split["s1"], split["s2"]) == ("test", "held", "test")
    found = overlaps(pool, split)
    assert [(o.answer, o.splits) for o in found] == [
        ("shared", {"held": ["s1"], "test": ["s0"]}),
        ("v1", {"held": ["s1"], "test": ["s2"]}),
    ]


def shared_across_splits(suite: Suite) -> dict[str, set[str]]:
    """Expected answers (the turns' own and their facts') by the splits holding them,
    recomputed from the resolved suite, not from the split's own bookkeeping."""
    held: dict[str, set[str]] = {}
    for item in suite.items:
        for turn in item.scenario.turns:
            gt = turn.ground_truth
            values = [gt.expected_answer] + [f.answer for f in item.facts_of(gt)] if gt else []
            for value in values:
                if value:
                    held.setdefault(" ".join(value.casefold().split()), set()).add(str(item.split))
    return {answer: splits for answer, splits in held.items() if len(splits) > 1}


def test_the_suite_keeps_shared_answers_in_one_split_and_reports_what_pins_split(
    tmp_path: Path,
) -> None:
    params = load_params(ROOT / "params.yaml")
    whole = build_suite(params, ROOT)
    assert whole.split is not None and whole.split["overlap"] == []
    assert shared_across_splits(whole) == {}
    assert split_lines(whole.split)[-1].endswith("no expected answer shared across splits")
    # A pin takes the scenario sharing "16 weeks" along; a second pin that keeps that one
    # where it was wins too, and the overlap the two cause is recorded and printed.
    shutil.copytree(ROOT / "eval", tmp_path / "eval")
    together = {i.scenario.id: i.split for i in whole.items}
    first, second = "parental_leave_lookup", "no_sycophancy_wrong_number"
    assert together[first] == together[second]
    other = "held" if together[first] != "held" else "test"
    pin(tmp_path, first, other)
    carried = build_suite(params, tmp_path)
    assert carried.split is not None and carried.split["overlap"] == []
    assert {i.scenario.id: i.split for i in carried.items if i.scenario.id in (first, second)} == {
        first: other,
        second: other,
    }
    pin(tmp_path, second, str(together[second]))
    pinned = build_suite(params, tmp_path)
    assert pinned.split is not None
    (entry,) = [o for o in pinned.split["overlap"] if o["answer"] == "16 weeks"]
    assert entry["splits"][other] == [first]
    assert entry["splits"][str(together[second])] == [second]
    assert set(shared_across_splits(pinned)) == {o["answer"] for o in pinned.split["overlap"]}
    lines = split_lines(pinned.split)
    assert "expected answer(s) shared across splits" in lines[0]
    assert any(line.startswith("  '16 weeks' in ") for line in lines[1:])


def pin(root: Path, sid: str, split: str) -> None:
    (path,) = (root / "eval/scenarios").rglob(f"{sid}.yaml")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"split: {split}\n")
