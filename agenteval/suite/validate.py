"""`agenteval validate`: formats, references and paths of the scenario suite and its corpus.

Files written for the reference system load unmodified. Where that format is looser than ours
the problem is a warning that `--strict` makes an error: a setup document known only by a path
that exists (no manifest entry: no facts, no pin), and the facts of such a document.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.corpus.pins import external_paths
from agenteval.schema.corpus import Fact, Manifest
from agenteval.schema.located import Located, load_located
from agenteval.schema.problems import Problem, strictly
from agenteval.schema.scenario import (
    CapturedFrom,
    GroundTruth,
    IndexDocument,
    Scenario,
    Setup,
    Turn,
)
from agenteval.suite.manifest import document_paths, load_manifest
from agenteval.suite.parse import check_path_inside, display, parse_model, unknown_keys
from agenteval.suite.tiers import DEFAULT_TIERS, load_tiers

SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
DEFAULT_SCENARIOS = Path("eval/scenarios")
DEFAULT_MANIFEST = Path("eval/corpus/manifest.json")
# Scenario drafts captured from real sessions live in a `drafts/` folder under the suite. A
# folder walk never enters one, so no lane runs a draft and the default `validate` does not
# fail on what a person has yet to fill in; a draft named on its own is checked in full.
DRAFTS = "drafts"

# Where each nested mapping's allowed keys come from, for unknown-key warnings.
_SCENARIO_SHAPE: dict[str, Any] = {
    "": Scenario,
    "setup": Setup,
    "setup.index_documents.*": IndexDocument,
    "turns.*": Turn,
    "turns.*.ground_truth": GroundTruth,
    "captured_from": CapturedFrom,
}

__all__ = ["Validation", "load_manifest", "resolve_fact", "validate", "validate_files"]


@dataclass
class LoadedScenario:
    path: str
    scenario: Scenario
    located: Located


@dataclass
class Validation:
    problems: list[Problem] = field(default_factory=list)
    scenarios: list[LoadedScenario] = field(default_factory=list)
    manifest: Manifest | None = None
    drafts: list[Path] = field(default_factory=list)  # draft files a folder walk left out

    @property
    def ok(self) -> bool:
        return not any(p.severity == "error" for p in self.problems)


def _is_draft(file: Path, walked: Path) -> bool:
    return DRAFTS in file.relative_to(walked).parts[:-1]


def scenario_files(paths: Sequence[Path], drafts: list[Path] | None = None) -> list[Path]:
    """Scenario files named or found under folders; drafts found by a walk go to `drafts`."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml"))
            files.extend(p for p in found if not _is_draft(p, path))
            if drafts is not None:
                drafts.extend(p for p in found if _is_draft(p, path))
        else:
            files.append(path)
    return files


def _check_turns(loaded: LoadedScenario) -> list[Problem]:
    problems = []
    located, scenario = loaded.located, loaded.scenario
    for index, turn in enumerate(scenario.turns):
        if turn.turn != index + 1:
            msg = f"turn numbers must run 1..N in order: found {turn.turn} at position {index + 1}"
            problems.append(located.problem(("turns", index, "turn"), msg))
        if turn.ground_truth is None and not (turn.success_criteria or "").strip():
            msg = f"turn {turn.turn} needs a ground_truth or a non-empty success_criteria"
            problems.append(located.problem(("turns", index), msg))
    return problems


def resolve_fact(
    manifest: Manifest, scenario: Scenario, gt: GroundTruth, fact_id: str
) -> tuple[str, Fact] | str:
    """(document id, fact) a turn's fact id names, or why it names none.

    Fact ids are unique per document: the turn's `doc_id` decides; without one, the
    scenario's own setup documents, then the whole manifest, must hold exactly one."""
    if gt.doc_id:
        found = manifest.find_fact(fact_id, gt.doc_id)
        return found[0] if found else f"fact {fact_id!r} not in document {gt.doc_id!r}"
    found = manifest.find_fact(fact_id)
    own = {d.corpus_doc for d in scenario.setup.index_documents if d.corpus_doc}
    mine = [f for f in found if f[0] in own]
    if len(mine) == 1 or len(found) == 1:
        return mine[0] if len(mine) == 1 else found[0]
    if not found:
        return f"fact {fact_id!r} not in manifest"
    docs = ", ".join(sorted(doc for doc, _fact in found))
    return f"fact {fact_id!r} is in several documents ({docs}): name one with doc_id"


def path_only_documents(scenario: Scenario, manifest: Manifest | None, root: Path) -> set[str]:
    """Setup `corpus_doc` ids with no manifest entry whose file exists (and is no manifest
    document under another id, which would be a typo): indexed by path."""
    known = manifest.document_ids() if manifest else set()
    listed = document_paths(manifest)
    return {
        d.corpus_doc
        for d in scenario.setup.index_documents
        if d.corpus_doc
        and d.corpus_doc not in known
        and (root / d.path).is_file()
        and Path(d.path).as_posix() not in listed
    }


def _check_references(loaded: LoadedScenario, manifest: Manifest, root: Path) -> list[Problem]:
    doc_ids, scenario = manifest.document_ids(), loaded.scenario
    by_path = path_only_documents(scenario, manifest, root)
    located, problems = loaded.located, []
    for i, doc in enumerate(scenario.setup.index_documents):
        loc = ("setup", "index_documents", i, "corpus_doc")
        if doc.corpus_doc in by_path:
            msg = (
                f"corpus_doc {doc.corpus_doc!r} has no manifest entry: indexed from its "
                "path, with no facts and no pin"
            )
            problems.append(located.problem(loc, msg, strict=True))
        elif doc.corpus_doc and doc.corpus_doc not in doc_ids:
            problems.append(located.problem(loc, f"corpus_doc {doc.corpus_doc!r} not in manifest"))
    for i, turn in enumerate(scenario.turns):
        gt = turn.ground_truth
        if gt is None:
            continue
        base = ("turns", i, "ground_truth")
        if gt.doc_id in by_path:
            if gt.all_fact_ids:
                msg = f"facts of {gt.doc_id!r} cannot be looked up: it has no manifest entry"
                problems.append(located.problem((*base, "doc_id"), msg, strict=True))
            continue
        if gt.doc_id and gt.doc_id not in doc_ids:
            problems.append(
                located.problem((*base, "doc_id"), f"doc_id {gt.doc_id!r} not in manifest")
            )
            continue
        for fid in gt.all_fact_ids:
            found = resolve_fact(manifest, scenario, gt, fid)
            if isinstance(found, str):
                ids = gt.fact_ids or []
                key = (*base, "fact_ids", ids.index(fid)) if fid in ids else (*base, "fact_id")
                problems.append(located.problem(key, found))
    return problems


def _check_paths(loaded: LoadedScenario, root: Path, known: Set[str]) -> list[Problem]:
    problems = []
    for i, doc in enumerate(loaded.scenario.setup.index_documents):
        why = check_path_inside(doc.path, root, known)
        if why:
            loc = ("setup", "index_documents", i, "path")
            problems.append(loaded.located.problem(loc, f"setup.index_documents: {why}"))
    return problems


def load_scenarios(
    files: Iterable[Path], root: Path, parsed: Mapping[Path, Located | Problem] | None = None
) -> tuple[list[LoadedScenario], list[Problem]]:
    """Each file parsed (or taken from `parsed`, as load_located returned it) and checked."""
    loaded: list[LoadedScenario] = []
    problems: list[Problem] = []
    for file in files:
        located = (parsed or {}).get(file) or load_located(file, display(file, root))
        if isinstance(located, Problem):
            problems.append(located)
            continue
        problems.extend(unknown_keys(located, _SCENARIO_SHAPE, "scenario"))
        scenario, errs = parse_model(located, Scenario, "scenario")
        problems.extend(errs)
        if scenario is not None:
            loaded.append(LoadedScenario(located.path, scenario, located))
    return loaded, problems


def _check_ids(loaded: list[LoadedScenario]) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, LoadedScenario] = {}
    for item in loaded:
        sid = item.scenario.id
        if not SNAKE_CASE.match(sid):
            problems.append(item.located.problem(("id",), f"id {sid!r} is not snake_case"))
        if sid in seen:
            first = seen[sid]
            msg = f"duplicate id {sid!r}: also in {first.path}:{first.located.line(('id',))}"
            problems.append(item.located.problem(("id",), msg))
        else:
            seen[sid] = item
    return problems


def _check_sources(root: Path) -> list[Problem]:
    """The external corpus pins, when the repository has them."""
    from agenteval.schema.sources import validate_sources

    path = root / "eval/sources.yaml"
    if not path.is_file():
        return []
    return list(validate_sources(path, display=display(path, root)))


def _check_tiers(root: Path, ids: set[str]) -> list[Problem]:
    path = root / DEFAULT_TIERS
    if not path.is_file():
        return []
    return load_tiers(path, display(path, root), known_ids=ids)[1]


def validate_files(
    files: Sequence[Path],
    root: Path,
    manifest_file: Path,
    *,
    manifest_required: bool = False,
    strict: bool = False,
    parsed: Mapping[Path, Located | Problem] | None = None,
) -> Validation:
    """Validate exactly these scenario files against the manifest (and the sources file);
    `parsed` holds files the caller has already read (load_located with the display name)."""
    result = Validation()
    result.problems.extend(_check_sources(root))
    if manifest_file.exists() or manifest_required:
        result.manifest, problems = load_manifest(manifest_file, root)
        result.problems.extend(problems)
    known = external_paths(root) | document_paths(result.manifest)
    loaded, problems = load_scenarios(files, root, parsed)
    result.problems.extend(problems)
    result.problems.extend(_check_ids(loaded))
    for item in loaded:
        result.problems.extend(_check_turns(item))
        if result.manifest is not None:
            result.problems.extend(_check_references(item, result.manifest, root))
        result.problems.extend(_check_paths(item, root, known))
    result.scenarios = loaded
    if strict:
        result.problems = strictly(result.problems)
    result.problems.sort(key=lambda p: (p.path, p.line, p.message))
    return result


def validate(
    paths: Sequence[Path] = (),
    root: Path | None = None,
    manifest_path: Path | None = None,
    strict: bool = False,
) -> Validation:
    """Validate scenario files/directories and the manifest; relative paths use `root`."""
    root = (root or Path.cwd()).resolve()
    targets = list(paths) or [root / DEFAULT_SCENARIOS]
    manifest_file = manifest_path or root / DEFAULT_MANIFEST
    scenario_targets = [p for p in targets if p.resolve() != manifest_file.resolve()]
    missing = [p for p in scenario_targets if not p.exists()]
    drafts: list[Path] = []
    files = scenario_files([p for p in scenario_targets if p.exists()], drafts)
    result = validate_files(
        files, root, manifest_file, manifest_required=manifest_path is not None, strict=strict
    )
    result.drafts = drafts
    result.problems.extend(Problem(str(p), 1, "no such file or directory") for p in missing)
    if not paths:  # the whole default suite: its tiers file must name exactly these ids
        result.problems.extend(_check_tiers(root, {item.scenario.id for item in result.scenarios}))
    result.problems.sort(key=lambda p: (p.path, p.line, p.message))
    return result
