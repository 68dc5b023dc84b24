"""The corpus manifest, with the manifests of corpus sub-folders merged in, and its checks.

Fact ids are unique within their document, as in the reference format; a scenario names the
document (`ground_truth.doc_id`) when two documents use the same fact id. A sub-folder
manifest (e.g. `eval/corpus/real_world/manifest.json`) lists documents beside it; such
corpora are often not committed, so a document of one that is absent on disk is a warning
(scenarios that need it are SKIPPED_NO_DOCUMENT), not an error.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agenteval.corpus.pins import documents, external_paths, rebased, sub_manifests
from agenteval.fileio import sha256_file
from agenteval.schema.corpus import AdversarialDocument, Document, Fact, Manifest
from agenteval.schema.located import Loc, Located, load_located
from agenteval.schema.problems import Problem
from agenteval.suite.parse import check_path_inside, display, parse_model, unknown_keys

SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MANIFEST_SHAPE: dict[str, Any] = {
    "": Manifest,
    "documents.*": Document,
    "documents.*.facts.*": Fact,
    "adversarial_documents.*": AdversarialDocument,
}


def load_manifest(path: Path, root: Path) -> tuple[Manifest | None, list[Problem]]:
    """The main manifest with every sub-folder manifest merged in, and their problems."""
    seen: set[str] = set()
    main, problems = _load_one(path, root, None, seen)
    if main is None:
        return None, problems
    merged = main.model_copy(deep=True)
    for sub in sub_manifests(path):
        folder = sub.parent.resolve().relative_to(root.resolve()).as_posix()
        part, more = _load_one(sub, root, folder, seen)
        problems.extend(more)
        if part is not None:
            merged.documents.extend(part.documents)
            merged.adversarial_documents.extend(part.adversarial_documents)
    return merged, problems


def _load_one(
    path: Path, root: Path, folder: str | None, seen: set[str]
) -> tuple[Manifest | None, list[Problem]]:
    located = load_located(path, display(path, root))
    if isinstance(located, Problem):
        return None, [located]
    problems = unknown_keys(located, _MANIFEST_SHAPE, "manifest")
    manifest, errs = parse_model(located, Manifest, "manifest")
    if manifest is None:
        return None, problems + errs
    if folder is not None:
        manifest = rebased(manifest, folder)
    problems.extend(_check_manifest(manifest, located, root, seen, sub=folder is not None))
    return manifest, problems


def _check_manifest(
    manifest: Manifest, located: Located, root: Path, seen_docs: set[str], sub: bool
) -> list[Problem]:
    problems: list[Problem] = []
    fetched = external_paths(root)
    for key, i, doc, rel in documents(manifest):
        loc = (key, i)
        if doc.id in seen_docs:
            where = " (also in an earlier manifest)" if sub else ""
            problems.append(
                located.problem((*loc, "id"), f"duplicate document id {doc.id!r}{where}")
            )
        seen_docs.add(doc.id)
        problems.extend(_check_location(doc, rel, root, fetched, located, loc, sub))
        problems.extend(_check_pin(doc, rel, root, located, loc))
        problems.extend(_check_facts(doc, located, loc))
    problems.extend(_check_totals(manifest, located))
    return problems


def _check_location(
    doc: Document | AdversarialDocument,
    rel: str,
    root: Path,
    fetched: set[str],
    located: Located,
    loc: Loc,
    sub: bool,
) -> list[Problem]:
    explicit = getattr(doc, "path", None) and not sub
    where = (*loc, "path") if explicit else (*loc, "filename")
    why = check_path_inside(rel, root, fetched)
    if why is None:
        return []
    if sub and why.endswith("does not exist"):
        msg = f"document {doc.id}: {rel} is not on disk; scenarios that index it are skipped"
        return [located.problem(where, msg, strict=True)]
    return [located.problem(where, f"document {doc.id}: {why}")]


def _check_facts(doc: Document | AdversarialDocument, located: Located, loc: Loc) -> list[Problem]:
    problems, seen = [], set()
    for j, fact in enumerate(getattr(doc, "facts", [])):
        if fact.id in seen:
            msg = f"duplicate fact id {fact.id!r} in document {doc.id!r}"
            problems.append(located.problem((*loc, "facts", j, "id"), msg))
        seen.add(fact.id)
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


def document_paths(manifest: Manifest | None) -> set[str]:
    """Repository paths of every manifest document (present on disk or not)."""
    return {rel for _key, _i, _doc, rel in documents(manifest)} if manifest else set()
