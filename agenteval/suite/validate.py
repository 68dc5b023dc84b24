"""`agenteval validate`: formats, references and paths of the scenario suite and its corpus."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agenteval.corpus.pins import documents, external_paths
from agenteval.fileio import sha256_file
from agenteval.schema.corpus import AdversarialDocument, Document, Fact, Manifest
from agenteval.schema.located import Loc, Located, load_located
from agenteval.schema.problems import Problem
from agenteval.schema.scenario import (
    CapturedFrom,
    GroundTruth,
    IndexDocument,
    Scenario,
    Setup,
    Turn,
)
from agenteval.suite.tiers import DEFAULT_TIERS, load_tiers

SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
DEFAULT_SCENARIOS = Path("eval/scenarios")
DEFAULT_MANIFEST = Path("eval/corpus/manifest.json")
# Scenario drafts captured from real sessions live in a `drafts/` folder under the suite. A
# folder walk never enters one, so no lane runs a draft and the default `validate` does not
# fail on what a person has yet to fill in; a draft named on its own is checked in full.
DRAFTS = "drafts"

# Where each nested mapping's allowed keys come from, for unknown-key warnings.
_SCENARIO_SHAPE: dict[str, Any] = {
    "": Scenario,
    "captured_from": CapturedFrom,
    "setup": Setup,
    "setup.index_documents.*": IndexDocument,
    "turns.*": Turn,
    "turns.*.ground_truth": GroundTruth,
}
_MANIFEST_SHAPE: dict[str, Any] = {
    "": Manifest,
    "documents.*": Document,
    "documents.*.facts.*": Fact,
    "adversarial_documents.*": AdversarialDocument,
}


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


def _pattern(loc: Loc) -> str:
    return ".".join("*" if isinstance(part, int) else part for part in loc)


def _unknown_keys(located: Located, shape: dict[str, Any], kind: str) -> list[Problem]:
    found: list[Problem] = []

    def visit(value: Any, loc: Loc) -> None:
        model = shape.get(_pattern(loc))
        if isinstance(value, dict):
            if model is not None:
                allowed = set(model.model_fields)
                for key in value:
                    if str(key) not in allowed:
                        msg = f"unknown key {key!r} in {kind} {located.path} (ignored)"
                        found.append(located.problem((*loc, str(key)), msg, warning=True))
            for key, child in value.items():
                visit(child, (*loc, str(key)))
        elif isinstance(value, list):
            for index, child in enumerate(value):
                visit(child, (*loc, index))

    visit(located.data, ())
    return found


def _model_errors(located: Located, exc: ValidationError) -> list[Problem]:
    problems = []
    for error in exc.errors():
        loc = tuple(part for part in error["loc"] if not str(part).startswith("function-"))
        where = ".".join(str(p) for p in loc) or "file"
        problems.append(located.problem(loc, f"{where}: {error['msg']}"))
    return problems


M = TypeVar("M", bound=BaseModel)


def parse_model(located: Located, model: type[M], what: str) -> tuple[M | None, list[Problem]]:
    if not isinstance(located.data, dict):
        got = type(located.data).__name__
        return None, [located.problem((), f"a {what} must be a mapping, got {got}")]
    try:
        return model.model_validate(located.data), []
    except ValidationError as exc:
        return None, _model_errors(located, exc)
    except (RecursionError, ValueError, TypeError) as exc:
        return None, [located.problem((), f"cannot read {what}: {type(exc).__name__}")]


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


def check_path_inside(raw: str, root: Path, fetched: Set[str] = frozenset()) -> str | None:
    """Why `raw` is not an acceptable repository path, or None when it is.

    Paths in `fetched` are materialised by `agenteval fetch`; they may be absent until then
    (the scenario is reported SKIPPED_NO_DOCUMENT, not invalid).
    """
    if not raw.strip():
        return "path is empty"
    candidate = Path(raw)
    if candidate.is_absolute():
        return f"path {raw!r} is absolute; use a path relative to the repository root"
    resolved = (root / candidate).resolve()
    if not resolved.is_relative_to(root.resolve()):
        return f"path {raw!r} escapes the repository root"
    if not resolved.is_file() and str(resolved.relative_to(root.resolve())) not in fetched:
        return f"path {raw!r} does not exist"
    return None


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


def _check_references(loaded: LoadedScenario, manifest: Manifest | None) -> list[Problem]:
    if manifest is None:
        return []
    doc_ids, facts = manifest.document_ids(), manifest.fact_index()
    located, problems = loaded.located, []
    for i, doc in enumerate(loaded.scenario.setup.index_documents):
        if doc.corpus_doc and doc.corpus_doc not in doc_ids:
            loc = ("setup", "index_documents", i, "corpus_doc")
            problems.append(located.problem(loc, f"corpus_doc {doc.corpus_doc!r} not in manifest"))
    for i, turn in enumerate(loaded.scenario.turns):
        gt = turn.ground_truth
        if gt is None:
            continue
        base = ("turns", i, "ground_truth")
        if gt.doc_id and gt.doc_id not in doc_ids:
            problems.append(
                located.problem((*base, "doc_id"), f"doc_id {gt.doc_id!r} not in manifest")
            )
        for fid in gt.all_fact_ids:
            if fid not in facts:
                ids = gt.fact_ids or []
                key = (*base, "fact_ids", ids.index(fid)) if fid in ids else (*base, "fact_id")
                problems.append(located.problem(key, f"fact {fid!r} not in manifest"))
    return problems


def _check_paths(loaded: LoadedScenario, root: Path, fetched: Set[str]) -> list[Problem]:
    problems = []
    for i, doc in enumerate(loaded.scenario.setup.index_documents):
        why = check_path_inside(doc.path, root, fetched)
        if why:
            loc = ("setup", "index_documents", i, "path")
            problems.append(loaded.located.problem(loc, f"setup.index_documents: {why}"))
    return problems


def load_scenarios(files: Iterable[Path], root: Path) -> tuple[list[LoadedScenario], list[Problem]]:
    loaded: list[LoadedScenario] = []
    problems: list[Problem] = []
    for file in files:
        located = load_located(file, _display(file, root))
        if isinstance(located, Problem):
            problems.append(located)
            continue
        problems.extend(_unknown_keys(located, _SCENARIO_SHAPE, "scenario"))
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


def _display(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def load_manifest(path: Path, root: Path) -> tuple[Manifest | None, list[Problem]]:
    located = load_located(path, _display(path, root))
    if isinstance(located, Problem):
        return None, [located]
    problems = _unknown_keys(located, _MANIFEST_SHAPE, "manifest")
    manifest, errs = parse_model(located, Manifest, "manifest")
    if manifest is None:
        return None, problems + errs
    problems.extend(_check_manifest(manifest, located, root))
    return manifest, problems


def _check_manifest(manifest: Manifest, located: Located, root: Path) -> list[Problem]:
    problems: list[Problem] = []
    seen_docs: set[str] = set()
    seen_facts: set[str] = set()
    fetched = external_paths(root)
    for key, i, doc, rel in documents(manifest):
        loc = (key, i)
        if doc.id in seen_docs:
            problems.append(located.problem((*loc, "id"), f"duplicate document id {doc.id!r}"))
        seen_docs.add(doc.id)
        where = (*loc, "path") if getattr(doc, "path", None) else (*loc, "filename")
        why = check_path_inside(rel, root, fetched)
        if why:
            problems.append(located.problem(where, f"document {doc.id}: {why}"))
        problems.extend(_check_pin(doc, rel, root, located, loc))
        for j, fact in enumerate(getattr(doc, "facts", [])):
            if fact.id in seen_facts:
                msg = f"duplicate fact id {fact.id!r}"
                problems.append(located.problem((*loc, "facts", j, "id"), msg))
            seen_facts.add(fact.id)
    problems.extend(_check_totals(manifest, located))
    return problems


def _check_pin(
    doc: Document | AdversarialDocument, rel: str, root: Path, located: Located, loc: Loc
) -> list[Problem]:
    if doc.sha256 is None:
        return []
    if not SHA256.match(doc.sha256):
        return [located.problem((*loc, "sha256"), "sha256 must be 64 lowercase hex")]
    path = root / rel
    if not path.is_file():
        return []
    actual = sha256_file(path)
    if actual == doc.sha256:
        return []
    msg = (
        f"document {doc.id}: {rel} no longer matches its pin (expected {doc.sha256}, "
        f"got {actual}); if the change is deliberate run `agenteval corpus pin`"
    )
    return [located.problem((*loc, "sha256"), msg)]


def _check_sources(root: Path) -> list[Problem]:
    """The external corpus pins, when the repository has them."""
    from agenteval.schema.sources import validate_sources

    path = root / "eval/sources.yaml"
    if not path.is_file():
        return []
    return list(validate_sources(path, display=_display(path, root)))


def _check_totals(manifest: Manifest, located: Located) -> list[Problem]:
    problems = []
    n_docs, n_facts = len(manifest.documents), sum(len(d.facts) for d in manifest.documents)
    if manifest.total_documents is not None and manifest.total_documents != n_docs:
        msg = f"total_documents is {manifest.total_documents} but {n_docs} documents are listed"
        problems.append(located.problem(("total_documents",), msg, warning=True))
    if manifest.total_facts is not None and manifest.total_facts != n_facts:
        msg = f"total_facts is {manifest.total_facts} but {n_facts} facts are listed"
        problems.append(located.problem(("total_facts",), msg, warning=True))
    return problems


def _check_tiers(root: Path, ids: set[str]) -> list[Problem]:
    path = root / DEFAULT_TIERS
    if not path.is_file():
        return []
    return load_tiers(path, _display(path, root), known_ids=ids)[1]


def validate(
    paths: Sequence[Path] = (), root: Path | None = None, manifest_path: Path | None = None
) -> Validation:
    """Validate scenario files/directories and the manifest; relative paths use `root`."""
    root = (root or Path.cwd()).resolve()
    targets = list(paths) or [root / DEFAULT_SCENARIOS]
    manifest_file = manifest_path or root / DEFAULT_MANIFEST
    result = Validation()
    fetched = external_paths(root)
    result.problems.extend(_check_sources(root))
    if manifest_file.exists() or manifest_path is not None:
        result.manifest, problems = load_manifest(manifest_file, root)
        result.problems.extend(problems)
    scenario_targets = [p for p in targets if p.resolve() != manifest_file.resolve()]
    missing = [p for p in scenario_targets if not p.exists()]
    result.problems.extend(Problem(str(p), 1, "no such file or directory") for p in missing)
    files = scenario_files([p for p in scenario_targets if p.exists()], result.drafts)
    loaded, problems = load_scenarios(files, root)
    result.problems.extend(problems)
    result.problems.extend(_check_ids(loaded))
    for item in loaded:
        result.problems.extend(_check_turns(item))
        result.problems.extend(_check_references(item, result.manifest))
        result.problems.extend(_check_paths(item, root, fetched))
    result.scenarios = loaded
    if not paths:  # the whole default suite: its tiers file must name exactly these ids
        result.problems.extend(_check_tiers(root, {item.scenario.id for item in loaded}))
    result.problems.sort(key=lambda p: (p.path, p.line, p.message))
    return result
