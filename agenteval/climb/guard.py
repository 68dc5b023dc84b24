"""The edit guard: an edit may not special-case the suite, leak held material or go elsewhere.

Refused: an edit that touches a file outside the agent's editable list or a params key other
than an editable knob (or a knob outside its range), that changes more than one artifact (one
edit a round), or whose added text
- names a scenario id or a corpus path;
- points the agent at the files that hold the answers or the results (`data/`, `eval/`
  outside the corpus, `runs/`, `reports/`, the held split's ledger, a suite or scorecard
  file, "the answer key", "the ground truth");
- restates a ground-truth value of any split, in any words the code judge would read as that
  value (`climb.meaning`: "sixteen weeks" and "112 days" are "16 weeks");
- asks a scenario question again in other words: a sentence carrying `climb.guard.similarity`
  or more of a question's BM25 weight (tuned on eval/climb/guard_controls.yaml:
  `agenteval climb guard-check`).
Held and test material is a leak, train material a special case; every refusal names the
value or question it found. Only what the edit adds is read: text already in the file is the
parent's.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from agenteval.climb.artifacts import PARAMS_FILE, Change, Spec
from agenteval.climb.ledger import LEDGER
from agenteval.climb.meaning import Hit, Questions, Similar, Truth, Values
from agenteval.layout import ANSWER_BEARING, moved_stores
from agenteval.params import DEFAULTS, flatten
from agenteval.schema.suite import Suite

LEAKED = ("held", "test")  # splits whose material in an edit is a leak, not a special case
CORPUS_ROOTS = ("eval/corpus", "data/corpora")
# Where the answers and the results live. The agent's documents (eval/corpus) are not here.
_OUTSIDE_EVAL = "|".join(re.escape(p) for p in ANSWER_BEARING if not p.startswith("eval/"))
ANSWER_FILES = re.compile(
    rf"(?<![\w.-])(?:\./)?(?:{_OUTSIDE_EVAL})/"  # layout.ANSWER_BEARING, the fence's list
    r"|(?<![\w.-])(?:\./)?eval/(?!corpus\b)"  # every eval/ folder of it, and more
    r"|\b(?:suite|scorecard|metrics|climb|noise|decision)\.json\b|\bdvc\.lock\b|\bmlflow\.db\b"
    r"|\bparams\.ya?ml\b|\bscenario\s+(?:files?|folders?|definitions?|ya?ml)\b"
    r"|\banswer\s+(?:key|files?|sheet)\b|\bground[\s-]truths?\b|\bexpected\s+answers?\b"
    r"|\b(?:held|test|train)(?:[\s-]?out)?\s+(?:split|set|results?|ledger)\b"
    r"|\b(?:holdout|climb)\s+ledger\b|\b(?:verdicts?|transcripts?)\s+(?:folders?|files?)\b",
    re.I,
)


def normal(text: str) -> str:
    """Lower case, compatibility forms, straight quotes, single spaces."""
    import unicodedata

    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"')
    return " ".join(text.replace("\u201d", '"').split())


def _bounded(needle: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(needle)}(?![\w])")


def corpus_files(root: Path) -> list[str]:
    """Every document file under the corpus roots, relative to root: an edit may not name one."""
    return [
        p.relative_to(root).as_posix()
        for base in CORPUS_ROOTS
        if (root / base).is_dir()
        for p in (root / base).rglob("*")
        if p.is_file()
    ]


@dataclass(frozen=True)
class GuardRules:
    """The guard's settings (params `climb.guard`) and the ledger it keeps the agent from."""

    similarity: float
    forbidden: tuple[str, ...] = ()  # further locations of answers or results

    @classmethod
    def from_params(cls, params: Mapping[str, Any], root: Path | None = None) -> GuardRules:
        """With the repository `root`: the stores its settings moved (layout.moved_stores)
        are answer files too, named as an edit would name them (relative to it)."""
        climb = params["climb"]
        moved = [_named(p, root) for p in moved_stores(params, root)] if root else []
        return cls(float(climb["guard"]["similarity"]), (LEDGER, *moved))


@dataclass(frozen=True)
class Finding:
    reason: str
    scenarios: tuple[str, ...] = ()  # every scenario it concerns, whatever its split


@dataclass
class Material:
    """What an edit must not restate, each with the label a refusal names."""

    ids: dict[str, str] = field(default_factory=dict)  # id -> split
    truths: list[Truth] = field(default_factory=list)
    questions: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # -> (id, split)
    paths: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, suite: Suite, extra_paths: Iterable[str] = ()) -> Material:
        """From the whole suite (every split: build it without a selection)."""
        found = cls()
        answers: dict[str, tuple[set[tuple[str, str]], set[tuple[str, str]]]] = {}

        def truth(value: str | None, sid: str, split: str, *asked: str | None) -> None:
            if value and re.search(r"\w", value):
                where, questions = answers.setdefault(value.strip(), (set(), set()))
                where.add((sid, split))
                questions.update((q, split) for q in asked if q)

        for item in suite.items:
            scenario, split = item.scenario, item.split or "train"
            found.ids[scenario.id] = split
            found.paths.update(item.documents)
            found.paths.update(d.path for d in scenario.setup.index_documents)
            for fact in item.facts.values():
                truth(fact.answer, scenario.id, split, fact.question)
                found._ask(fact.question, scenario.id, split)
            for turn in scenario.turns:
                found._ask(turn.user_message, scenario.id, split)
                gt = turn.ground_truth
                if gt is not None:
                    known = item.facts.get(gt.fact_id or "")
                    asked = (turn.user_message, known.question if known else None)
                    truth(gt.expected_answer, scenario.id, split, *asked)
                    for phrase in gt.expected_phrases or []:
                        truth(phrase, scenario.id, split, *asked)
        found.truths = [
            Truth(value, tuple(sorted(where)), tuple(sorted(asked)))
            for value, (where, asked) in sorted(answers.items())
        ]
        found.paths.update(extra_paths)
        return found

    def _ask(self, question: str | None, sid: str, split: str) -> None:
        if question and question.strip():
            self.questions.setdefault(normal(question), []).append((sid, split))

    @functools.cached_property
    def values(self) -> Values:
        return Values(self.truths)

    @functools.cached_property
    def asked(self) -> Questions:
        return Questions(self.questions)


class Guard:
    def __init__(self, spec: Spec, material: Material, rules: GuardRules | None = None) -> None:
        self.spec = spec
        self.material = material
        self.rules = rules or GuardRules.from_params(DEFAULTS)
        self._paths = self._path_patterns(material.paths)
        self._forbidden = [(p, _bounded(normal(p))) for p in self.rules.forbidden if p]

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
        """Reasons the added text names, points at, restates or asks what it must not."""
        return [finding.reason for finding in self.findings(added)]

    def findings(self, added: str) -> list[Finding]:
        """Every refusal of the added text, with the scenarios it concerns (for measuring the
        guard; a reason itself names only train scenarios: held and test stay unseen)."""
        text = normal(added)
        if not text:
            return []
        found: list[Finding] = []
        for sid, split in sorted(self.material.ids.items()):
            if any(_bounded(v).search(text) for v in {sid.lower(), sid.lower().replace("_", "-")}):
                reason = f"quotes the scenario id {sid!r} ({split}): special-cases the suite"
                found.append(Finding(reason, (sid,)))
        found += [
            Finding(f"quotes the corpus path {n!r}") for n, p in self._paths if p.search(text)
        ]
        found += [Finding(reason) for reason in self.answer_files(added)]
        hits = _first_per_truth(self.material.values.encoded(added))
        found += [Finding(_value_reason(h), _ids(h.sign.truth.where)) for h in hits]
        threshold = self.rules.similarity
        found += [
            Finding(_question_reason(s, threshold), _ids(s.where))
            for s in self.material.asked.similar(added, threshold)
        ]
        return found

    def answer_files(self, added: str) -> list[str]:
        """Reasons the text sends the agent to where the answers or the results are kept."""
        seen = [m.group(0).strip() for m in ANSWER_FILES.finditer(added)]
        seen += [path for path, pattern in self._forbidden if pattern.search(normal(added))]
        return [
            f"points the agent at the answers or results: {w!r} (data/, eval/ outside the "
            "corpus, runs/, reports/ and the held split's ledger are not the agent's documents)"
            for w in dict.fromkeys(seen)
        ]


def _named(path: Path, root: Path) -> str:
    base = root.resolve()
    return path.relative_to(base).as_posix() if path.is_relative_to(base) else str(path)


def _first_per_truth(hits: list[Hit]) -> list[Hit]:
    seen: dict[Truth, Hit] = {}
    for hit in hits:
        seen.setdefault(hit.sign.truth, hit)
    return list(seen.values())


def _ids(where: Iterable[tuple[str, str]]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(sid for sid, _ in where))


def _verb(splits: Iterable[str]) -> tuple[str, str | None]:
    """("leaks a held" | "special-cases a train", the leaked split or None)."""
    leaked = next((s for s in LEAKED if s in set(splits)), None)
    return (f"leaks a {leaked}" if leaked else "special-cases a train"), leaked


def _train_part(where: Iterable[tuple[str, str]], asked: Iterable[tuple[str, str]]) -> str:
    """The train scenarios and question a finding concerns: what a proposer may see anyway."""
    ids = [sid for sid, split in where if split == "train"]
    question = next((q for q, split in asked if split == "train"), None)
    shown = f": {question[:70]!r}" if question else ""
    return f"train {', '.join(dict.fromkeys(ids))}{shown}" if ids else ""


def _value_reason(hit: Hit) -> str:
    truth = hit.sign.truth
    verb, leaked = _verb(truth.splits)
    train = _train_part(truth.where, truth.asked)
    if not train:
        return f"{verb} answer: {hit.found!r} restates a ground-truth value of the {leaked} split"
    also = f"; it is a {leaked} answer too" if leaked else ""
    return (
        f"{verb} answer: {hit.found!r} restates the ground-truth value {truth.value!r} "
        f"({train}){also}"
    )


def _question_reason(similar: Similar, threshold: float) -> str:
    verb, leaked = _verb(split for _, split in similar.where)
    asked = [(similar.question, split) for _, split in similar.where]
    train = _train_part(similar.where, asked)
    what = f" ({train})" if train else f" of the {leaked} split"
    return (
        f"{verb} question{what} asked again as {similar.sentence[:70]!r} "
        f"(BM25 similarity {similar.score:.2f} >= {threshold:.2f})"
    )


def _added(change: Change, spec: Spec) -> str:
    """Added text of file edits; a knob line is a number within range, never a quote."""
    files = Change({p: v for p, v in change.files.items() if p != PARAMS_FILE or not spec.knobs})
    return files.added_text()
