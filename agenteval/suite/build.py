"""Resolve the selected scenarios with their manifest facts into one file, with digests.

Selection comes first: `suite.ids` / `suite.categories` (`--scenario` / `--category`) pick
files by the id and category they declare (or, when a file cannot be read, by its name and
folder), and only the picked files are validated. A picked file that is invalid is left out
and listed in `Suite.invalid` (the run reports it and exits 2 at the end), unless
`suite.strict`, which refuses the run as a whole. Problems of the manifest or the sources
file always refuse: no scenario could be graded against them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.corpus.pins import corpus_digest, documents
from agenteval.fileio import digest_of, sha256_file
from agenteval.schema.corpus import Fact, Manifest
from agenteval.schema.input_error import InputError
from agenteval.schema.located import Located, load_located
from agenteval.schema.problems import Problem
from agenteval.schema.scenario import Scenario
from agenteval.schema.suite import InvalidScenario, Suite, SuiteItem
from agenteval.split import (
    SPLITS,
    Member,
    Overlap,
    SplitRule,
    assign,
    counts,
    normalise_answer,
    overlaps,
)
from agenteval.suite.manifest import load_manifest
from agenteval.suite.parse import display
from agenteval.suite.tiers import load_tiers
from agenteval.suite.validate import LoadedScenario, resolve_fact, scenario_files, validate_files

DEFAULT_MANIFEST = "eval/corpus/manifest.json"


class SuiteError(InputError):
    """Problems that keep a suite from being built."""


class UnknownScenarios(SuiteError):
    """`suite.ids` names ids no scenario file has; `known` are the ids that exist."""

    def __init__(self, problems: list[Problem], unknown: list[str], known: list[str]) -> None:
        super().__init__(problems)
        self.unknown, self.known = unknown, known

    def suggestion(self, sid: str) -> str:
        close = difflib.get_close_matches(sid, self.known, n=3)
        return f" (did you mean {', '.join(close)}?)" if close else ""


@dataclass(frozen=True)
class _Head:
    """What a scenario file says it is, read without validating it."""

    path: Path
    id: str
    category: str
    split: str | None  # a pinned split, as written (checked by the scenario schema)
    parsed: Located | Problem  # validation reuses it: each file is parsed once


def _head(path: Path, root: Path) -> _Head:
    located = load_located(path, display(path, root))
    data = located.data if isinstance(located, Located) else None
    sid = data.get("id") if isinstance(data, dict) else None
    category = data.get("category") if isinstance(data, dict) else None
    pinned = data.get("split") if isinstance(data, dict) else None
    return _Head(
        path,
        sid if isinstance(sid, str) else path.stem,
        category if isinstance(category, str) else path.parent.name,
        pinned if pinned in SPLITS else None,
        located,
    )


def _ids_line(root: Path) -> int:
    located = load_located(root / "params.yaml")
    return located.line(("suite", "ids")) if isinstance(located, Located) else 1


def select_files(
    section: dict[str, Any], root: Path
) -> tuple[dict[Path, Located | Problem], list[Problem], Dealt]:
    """The scenario files the selection picks (each as parsed), problems of missing scenario
    paths, and the split of every scenario file (selected or not, so a selection never
    moves one)."""
    paths = section.get("scenarios") or "eval/scenarios"
    targets = [root / p for p in ([paths] if isinstance(paths, str) else paths)]
    missing = [Problem(display(p, root), 1, "no such file or directory") for p in targets
               if not p.exists()]  # fmt: skip
    heads = [_head(f, root) for f in scenario_files([p for p in targets if p.exists()])]
    members = split_members(heads, root / section.get("manifest", DEFAULT_MANIFEST), root)
    splits = assign(members, split_rule(section))
    categories, ids = list(section.get("categories") or []), list(section.get("ids") or [])
    picked = [
        h for h in heads
        if (not categories or h.category in categories) and (not ids or h.id in ids)
    ]  # fmt: skip
    unknown = sorted(set(ids) - {h.id for h in heads})
    if unknown:
        msg = f"suite.ids: no scenario file has id(s) {', '.join(unknown)}"
        problem = Problem("params.yaml", _ids_line(root), msg)
        raise UnknownScenarios([problem], unknown, sorted({h.id for h in heads}))
    if section.get("tier"):
        rel = str(section.get("tiers") or "eval/tiers.yaml")
        picked = _in_tier(picked, str(section["tier"]), root, rel)
    seen = frozenset(h.id for h in picked)
    return (
        {h.path: h.parsed for h in picked},
        missing,
        Dealt(splits, overlaps(members, splits), seen),
    )


@dataclass(frozen=True)
class Dealt:
    """The split of every scenario file and the expected answers it leaves shared."""

    splits: dict[str, str]
    overlap: list[Overlap]
    # The selected ids: an overlap names only these. A selection (the climb's train
    # evaluation is one) must not learn which held or test scenarios share its answers.
    selected: frozenset[str] | None = None

    def get(self, sid: str) -> str | None:
        return self.splits.get(sid)

    def describe(self, rule: SplitRule) -> dict[str, Any]:
        described = [o.describe(self.selected) for o in self.overlap]
        overlap = [o for o in described if o["splits"]]  # none of ours: not ours to know
        return rule.describe() | {"counts": counts(self.splits), "overlap": overlap}


def split_lines(split: dict[str, Any] | None) -> list[str]:
    """The split as printed: counts, then every expected answer it leaves shared."""
    if not split:
        return []
    shown = " · ".join(f"{name} {n}" for name, n in (split.get("counts") or {}).items())
    overlap = split.get("overlap") or []
    if not overlap:
        return [f"split: {shown}; no expected answer shared across splits"]
    head = f"split: {shown}; {len(overlap)} expected answer(s) shared across splits"
    lines = [f"{head} (pins keep them apart; shared answers are otherwise dealt together):"]
    for entry in overlap:
        where = " / ".join(f"{name}: {', '.join(ids)}" for name, ids in entry["splits"].items())
        hidden = entry.get("unselected") or {}
        where += "".join(f" / {name}: {n} not selected" for name, n in hidden.items())
        lines.append(f"  {entry['answer']!r} in {where}")
    return lines


def split_members(heads: list[_Head], manifest_path: Path, root: Path) -> list[Member]:
    """Each scenario file as the split sees it, with its expected answers (the turns' own and
    those of the manifest facts they name); a file that does not parse has none."""
    manifest = load_manifest(manifest_path, root)[0] if manifest_path.is_file() else None
    return [Member(h.id, h.category, h.split, _answers(h, manifest)) for h in heads]


def _answers(head: _Head, manifest: Manifest | None) -> frozenset[str]:
    if not isinstance(head.parsed, Located):
        return frozenset()
    try:
        scenario = Scenario.model_validate(head.parsed.data)
    except ValidationError:
        return frozenset()
    found: set[str] = set()
    for turn in scenario.turns:
        gt = turn.ground_truth
        if gt is None:
            continue
        found.add(gt.expected_answer or "")
        for fid in gt.all_fact_ids if manifest else []:
            resolved = resolve_fact(manifest, scenario, gt, fid) if manifest else ""
            if not isinstance(resolved, str) and resolved[1].answer is not None:
                found.add(str(resolved[1].answer))
    return frozenset(normalise_answer(a) for a in found if normalise_answer(a))


def split_rule(section: dict[str, Any]) -> SplitRule:
    """`suite.split` (salt and fractions) as the pure core's rule."""
    raw = dict(section.get("split") or {})
    return SplitRule(**{k: raw[k] for k in ("salt", "train", "held", "test") if k in raw})


def _in_tier(picked: list[_Head], tier: str, root: Path, rel: str) -> list[_Head]:
    """The scenarios of one lane (see agenteval.schema.tiers); the file's errors stop the run."""
    if not (root / rel).is_file():
        raise SuiteError([Problem("params.yaml", 1, f"suite.tier {tier!r}: no tiers file {rel}")])
    tiers, problems = load_tiers(root / rel, rel)
    if tiers is None:
        raise SuiteError([p for p in problems if p.severity == "error"])
    keep = set(tiers.lane(tier, [h.id for h in picked]))
    if not keep:
        raise SuiteError([Problem(rel, 1, f"tier {tier!r} selects none of the chosen scenarios")])
    return [h for h in picked if h.id in keep]


def build_suite(params: dict[str, Any], root: Path) -> Suite:
    """Select, validate and resolve; see the module docstring for what refuses the run."""
    section = params["suite"]
    kind = section.get("kind", "scenarios")
    if kind != "scenarios":
        where = {"qa": "agenteval qa / pipelines/qa", "retrieval": "agenteval retrieval / "
                 "pipelines/retrieval"}.get(kind, "its own command")  # fmt: skip
        raise SuiteError([Problem("params.yaml", 1, f"suite.kind {kind!r} runs with {where}")])
    strict = bool(section.get("strict", False))
    parsed, missing, splits = select_files(section, root)
    files = list(parsed)
    manifest_path = root / section.get("manifest", DEFAULT_MANIFEST)
    result = validate_files(
        files, root, manifest_path, manifest_required=True, strict=strict, parsed=parsed
    )
    errors = missing + [p for p in result.problems if p.severity == "error"]
    own = {display(f, root) for f in files}
    if (strict and errors) or any(p.path not in own for p in errors):
        raise SuiteError(errors)
    invalid = _invalid(errors, files, root)
    skipped = {entry.path for entry in invalid}
    chosen = [it for it in result.scenarios if it.path not in skipped]
    items = [_item(loaded, result.manifest, root) for loaded in chosen]
    for item in items:
        item.split = splits.get(item.scenario.id)
    items.sort(key=lambda item: item.scenario.id)
    return Suite(
        iterations=int(section.get("iterations", 1)),
        seed=int(section.get("seed", 0)),
        scenario_set_digest=digest_of(sorted((i.scenario.id, i.digest) for i in items)),
        corpus_digest=corpus_digest(result.manifest, root),
        items=items,
        invalid=invalid,
        split=splits.describe(split_rule(section)),
    )


def _invalid(errors: list[Problem], files: list[Path], root: Path) -> list[InvalidScenario]:
    by_path: dict[str, list[str]] = {}
    for problem in errors:
        by_path.setdefault(problem.path, []).append(str(problem))
    out = []
    for file in files:
        name = display(file, root)
        if name in by_path:
            head = _head(file, root)
            out.append(InvalidScenario(path=name, id=head.id, category=head.category,
                                       errors=by_path[name]))  # fmt: skip
    return out


def _item(loaded: LoadedScenario, manifest: Manifest | None, root: Path) -> SuiteItem:
    scenario = loaded.scenario
    facts = scenario_facts(scenario, manifest)
    files = scenario_documents(scenario, manifest, root)
    missing = [d.path for d in scenario.setup.index_documents if not (root / d.path).is_file()]
    return SuiteItem(
        path=loaded.path,
        digest=digest_of(scenario),
        scenario=scenario,
        facts=facts,
        missing_documents=missing,
        documents=files,
        ground_truth_digest=ground_truth_digest(facts, files),
    )


def scenario_facts(scenario: Scenario, manifest: Manifest | None) -> dict[str, Fact]:
    """The manifest facts the scenario's turns name, keyed by fact id, or by
    '<doc_id>:<fact_id>' when two of its documents use the same fact id."""
    if manifest is None:
        return {}
    found: dict[tuple[str, str], Fact] = {}
    for turn in scenario.turns:
        gt = turn.ground_truth
        for fid in gt.all_fact_ids if gt else []:
            resolved = resolve_fact(manifest, scenario, gt, fid) if gt else ""
            if not isinstance(resolved, str):
                found[(resolved[0], fid)] = resolved[1]
    shared = {fid for (_doc, fid) in found if sum(f == fid for _d, f in found) > 1}
    return {
        (f"{doc}:{fid}" if fid in shared else fid): fact
        for (doc, fid), fact in sorted(found.items(), key=lambda kv: (kv[0][1], kv[0][0]))
    }


def scenario_documents(
    scenario: Scenario, manifest: Manifest | None, root: Path
) -> dict[str, str | None]:
    """sha256 of the files the scenario indexes and the manifest documents its turns' ground
    truth names (None when absent): what its transcripts and grades were made from."""
    where = {doc.id: rel for _key, _i, doc, rel in documents(manifest)} if manifest else {}
    paths = [d.path for d in scenario.setup.index_documents]
    paths += [
        where[t.ground_truth.doc_id]
        for t in scenario.turns
        if t.ground_truth and t.ground_truth.doc_id in where
    ]
    return {
        p: (sha256_file(root / p) if (root / p).is_file() else None) for p in sorted(set(paths))
    }


def ground_truth_digest(facts: dict[str, Fact], files: dict[str, str | None]) -> str:
    return digest_of(
        {"facts": {k: f.model_dump(mode="json") for k, f in facts.items()}, "documents": files}
    )
