"""The train / held / test split: salted, stratified by category, pinnable, selection-proof."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import pytest

from agenteval.params import load_params
from agenteval.split import Member, SplitRule, assign, counts, ids_of, point
from agenteval.suite.build import build_suite

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
