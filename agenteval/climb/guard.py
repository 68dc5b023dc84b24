"""The edit guard: an edit may not special-case the suite, leak held material or go elsewhere.

Refused: an edit that touches a file outside the agent's editable list or a params key other
than an editable knob (or a knob outside its range), that changes more than one artifact (one
edit a round), or whose added text quotes a scenario id, a ground-truth value (expected
answers and phrases, manifest fact answers), a scenario question (six words in a row, or all
of a short one; held and test questions are leaks, train questions special-cases) or a corpus
path. Only what the edit adds is read: text already in the file is the parent's.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import yaml

from agenteval.climb.artifacts import PARAMS_FILE, Change, Spec
from agenteval.params import flatten
from agenteval.schema.suite import Suite

SHINGLE = 6  # words in a row that count as quoting a question
MIN_VALUE_CHARS = 3  # shorter ground-truth values ("3", "14") are too common to be a quote
_WORD = re.compile(r"[\w$%€£.,:/'-]+")


def normal(text: str) -> str:
    """Lower case, compatibility forms, straight quotes, single spaces."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    return " ".join(text.replace("\u201d", '"').split())


def _words(text: str) -> list[str]:
    return [w.strip(".,:;'\"") for w in _WORD.findall(normal(text)) if w.strip(".,:;'\"")]


def _shingles(words: list[str]) -> set[tuple[str, ...]]:
    return {tuple(words[i : i + SHINGLE]) for i in range(len(words) - SHINGLE + 1)}


def _bounded(needle: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(needle)}(?![\w])")


@dataclass
class Material:
    """What an edit must not quote, each with the label a refusal names."""

    ids: dict[str, str] = field(default_factory=dict)  # id -> split
    values: set[str] = field(default_factory=set)
    questions: dict[str, str] = field(default_factory=dict)  # normalised question -> split
    paths: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, suite: Suite, extra_paths: Iterable[str] = ()) -> Material:
        """From the whole suite (every split: build it without a selection)."""
        found = cls()
        for item in suite.items:
            scenario, split = item.scenario, item.split or "train"
            found.ids[scenario.id] = split
            found.paths.update(item.documents)
            found.paths.update(d.path for d in scenario.setup.index_documents)
            for fact in item.facts.values():
                found._value(fact.answer)
                found.questions.setdefault(normal(fact.question), split)
            for turn in scenario.turns:
                if turn.user_message:
                    found.questions.setdefault(normal(turn.user_message), split)
                gt = turn.ground_truth
                if gt is not None:
                    found._value(gt.expected_answer)
                    for phrase in gt.expected_phrases or []:
                        found._value(phrase)
        found.paths.update(extra_paths)
        return found

    def _value(self, value: str | None) -> None:
        if value and len(normal(value)) >= MIN_VALUE_CHARS and re.search(r"\w", value):
            self.values.add(normal(value))


class Guard:
    def __init__(self, spec: Spec, material: Material) -> None:
        self.spec = spec
        self.material = material
        self._paths = self._path_patterns(material.paths)

    @staticmethod
    def _path_patterns(paths: Iterable[str]) -> list[tuple[str, re.Pattern[str]]]:
        needles: set[str] = set()
        for path in paths:
            pure = PurePosixPath(path)
            needles.update({normal(path), normal(pure.name)})
            if len(pure.stem) >= 6 and re.search(r"[_\d-]", pure.stem):
                needles.add(normal(pure.stem))
        return [(n, _bounded(n)) for n in sorted(needles) if n]

    def check(self, change: Change) -> list[str]:
        """Every reason to refuse the change; empty when it may be evaluated."""
        reasons: list[str] = []
        artifacts: list[str] = []
        for path, (old, new) in sorted(change.files.items()):
            if old == new:
                continue
            if path == PARAMS_FILE and self.spec.knobs:
                knobs, wrong = self._knob_changes(old, new)
                reasons += wrong
                artifacts += [f"target.params.{k}" for k in knobs]
            elif path in self.spec.files:
                artifacts.append(path)
            else:
                reasons.append(
                    f"touches {path}, which is not in the agent's editable list "
                    f"({self.spec.agent_dir}/agent.yaml)"
                )
        if not artifacts and not reasons:
            reasons.append("the edit changes nothing")
        if len(artifacts) > 1:
            reasons.append(
                f"one edit a round: this changes {len(artifacts)} artifacts "
                f"({', '.join(artifacts)})"
            )
        return reasons + self.quotes(_added(change, self.spec))

    def _knob_changes(self, old: bytes, new: bytes) -> tuple[list[str], list[str]]:
        try:
            before = flatten(yaml.safe_load(old) or {})
            after = flatten(yaml.safe_load(new) or {})
        except yaml.YAMLError as exc:
            return [], [f"{PARAMS_FILE} no longer parses: {exc}"]
        changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        knobs, reasons = [], []
        for key in changed:
            name = key.removeprefix("target.params.")
            limits = self.spec.knobs.get(name) if key.startswith("target.params.") else None
            if limits is None:
                reasons.append(f"changes {PARAMS_FILE} key {key}, which is not an editable knob")
                continue
            value = after.get(key)
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not limits.contains(value)
            ):
                reasons.append(
                    f"target.params.{name} = {value!r} is outside its range "
                    f"[{limits.low:g}, {limits.high:g}] ({limits.type})"
                )
            knobs.append(name)
        return knobs, reasons

    def quotes(self, added: str) -> list[str]:
        """Reasons the added text quotes what it must not."""
        text = normal(added)
        if not text:
            return []
        found: list[str] = []
        for sid, split in sorted(self.material.ids.items()):
            if any(_bounded(v).search(text) for v in {sid.lower(), sid.lower().replace("_", "-")}):
                found.append(f"quotes the scenario id {sid!r} ({split}): special-cases the suite")
        found += [
            f"quotes the ground-truth value {v!r}"
            for v in sorted(self.material.values)
            if _bounded(v).search(text)
        ]
        found += [f"quotes the corpus path {n!r}" for n, p in self._paths if p.search(text)]
        words = _words(added)
        grams = _shingles(words)
        joined = " ".join(words)
        for question, split in sorted(self.material.questions.items()):
            q_words = _words(question)
            short = len(q_words) < SHINGLE
            hit = (
                (len(q_words) >= 3 and _bounded(" ".join(q_words)).search(joined))
                if short
                else bool(_shingles(q_words) & grams)
            )
            if hit:
                what = "leaks a" if split in ("held", "test") else "special-cases a"
                found.append(f"{what} {split} question: {question[:60]!r}")
        return found


def _added(change: Change, spec: Spec) -> str:
    """Added text of file edits; a knob line is a number within range, never a quote."""
    files = Change({p: v for p, v in change.files.items() if p != PARAMS_FILE or not spec.knobs})
    return files.added_text()
