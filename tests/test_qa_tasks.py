"""QA task files: the shipped set, the JSONL loader's path:line errors, the GAIA format."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agenteval.benchmarks.answers import contains, normalise, numeric_truth
from agenteval.benchmarks.qa.tasks import TaskFileError, load_tasks, select
from agenteval.benchmarks.questions import build_qa_suite
from agenteval.corpus.documents import read_text
from agenteval.schema.corpus import Manifest

ROOT = Path(__file__).resolve().parents[1]
GAIA = ROOT / "tests/data/gaia"


def test_shipped_set_has_sixty_tasks_in_three_levels_over_the_corpora() -> None:
    tasks = load_tasks(ROOT / "eval/qa/tasks.jsonl", root=ROOT)
    levels = Counter(t.level for t in tasks)
    assert len(tasks) >= 60 and set(levels) == {1, 2, 3} and min(levels.values()) >= 10
    licences = [t for t in tasks if any(f.startswith("data/corpora/") for f in t.files)]
    assert len(licences) >= 10  # the pinned licence texts are part of the set
    assert sum(not t.files for t in tasks) >= 5  # some tasks make the agent find the file
    manifest = Manifest.model_validate(json.loads((ROOT / "eval/corpus/manifest.json").read_text()))
    facts = {fid: fact for (_doc, fid), fact in manifest.fact_index().items()}
    for task in tasks:
        if task.id in facts:  # tasks taken from the manifest keep its ground truth
            assert task.answer == facts[task.id].answer, task.id
        for path in task.files:
            assert path.startswith("data/corpora/") or (ROOT / path).is_file(), path


def test_level_one_answers_are_in_their_documents() -> None:
    for task in load_tasks(ROOT / "eval/qa/tasks.jsonl", root=ROOT):
        if task.level != 1 or not task.files or not (ROOT / task.files[0]).is_file():
            continue
        text = normalise(read_text(ROOT / task.files[0]))
        forms = [normalise(f) for f in (task.answer, *task.aliases)]
        found = any(contains(text, f) for f in forms)
        # A figure may be written differently in the document ("$8.6 million" in a table).
        assert found or numeric_truth(task.answer) is not None, task.id


def test_jsonl_errors_name_path_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.jsonl"
    bad.write_text(
        '{"id": "a", "question": "q?", "answer": "1", "level": 1}\n'
        "\n"
        "not json\n"
        '{"id": "b", "question": "q?", "answer": "1", "level": 4}\n'
        '{"id": "a", "question": "q?", "answer": "2", "level": 2}\n'
        '{"id": "c", "question": "q?", "answer": "3", "level": 1, "extra": 1}\n',
        encoding="utf-8",
    )
    with pytest.raises(TaskFileError) as caught:
        load_tasks(bad, root=tmp_path)
    messages = [str(p) for p in caught.value.problems]
    assert messages[0].startswith(f"{bad}:3: not a JSON object")
    assert messages[1].startswith(f"{bad}:4: level")
    assert messages[2] == f"{bad}:5: duplicate id 'a' (line 1)"
    assert messages[3].startswith(f"{bad}:6: extra")


def test_gaia_metadata_loads_with_attachments_beside_it() -> None:
    tasks = {t.id: t for t in load_tasks(GAIA / "metadata.jsonl", "gaia", ROOT)}
    assert len(tasks) == 4
    note = tasks["c61d22de-5f6c-4958-a7f6-5e9707bd3466"]
    assert note.level == 1 and note.answer == "€35"
    assert note.files == ["tests/data/gaia/market_note.txt"]
    assert tasks["17b5a6a3-bc87-42e8-b0fb-6ab0781ef2cc"].files == []
    assert tasks["04a04a9b-226c-43fd-b319-d5e89743676f"].level == 2  # "2" as text
    assert tasks["14569e28-c88c-43e4-8c32-097d35b9a67d"].answer == "175"  # a number
    suite = build_qa_suite(list(tasks.values()), 3, 0, ROOT, None)
    assert suite.iterations == 3 and suite.seeds() == [0, 1, 2]
    item = next(i for i in suite.items if i.scenario.id == note.id)
    assert [d.path for d in item.scenario.setup.index_documents] == note.files
    assert item.scenario.turns[0].user_message == note.question and not item.missing_documents


def test_gaia_test_split_without_answers_is_refused() -> None:
    with pytest.raises(TaskFileError, match="no public answer"):
        load_tasks(GAIA / "test_split_metadata.jsonl", "gaia", ROOT)


def test_selection_by_level_and_unknown_ids() -> None:
    tasks = load_tasks(GAIA / "metadata.jsonl", "gaia", ROOT)
    assert {t.level for t in select(tasks, [1], [], "x")} == {1}
    with pytest.raises(TaskFileError, match="unknown task"):
        select(tasks, [], ["nope"], "x")
