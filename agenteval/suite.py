"""Resolve the selected scenarios with their manifest facts into one file, with digests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import digest_of, sha256_file
from agenteval.problems import Problem
from agenteval.schema.corpus import Manifest
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.validate import ADVERSARIAL_DIR, DOCUMENTS_DIR, LoadedScenario, validate


class SuiteError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def corpus_digest(manifest: Manifest | None, root: Path, sources: Path | None = None) -> str:
    """Digest of the corpus bytes: manifest pins (or the files' own sha256) plus external pins."""
    files: dict[str, str | None] = {}
    if manifest is not None:
        for folder, docs in (
            (DOCUMENTS_DIR, manifest.documents),
            (ADVERSARIAL_DIR, manifest.adversarial_documents),
        ):
            for doc in docs:
                path = root / folder / doc.filename
                files[str(folder / doc.filename)] = doc.sha256 or (
                    sha256_file(path) if path.is_file() else None
                )
    external = sources if sources is not None else root / "eval/sources.yaml"
    pins = sha256_file(external) if external.is_file() else None
    return digest_of({"documents": files, "sources": pins})


def _selected(item: LoadedScenario, categories: list[str], ids: list[str]) -> bool:
    scenario = item.scenario
    return (not categories or scenario.category in categories) and (not ids or scenario.id in ids)


def build_suite(params: dict[str, Any], root: Path) -> Suite:
    """Validate, select and resolve; any validation error stops the run (warnings do not)."""
    section = params["suite"]
    paths = section.get("scenarios") or "eval/scenarios"
    targets = [root / p for p in ([paths] if isinstance(paths, str) else paths)]
    manifest_path = root / section.get("manifest", "eval/corpus/manifest.json")
    result = validate(targets, root=root, manifest_path=manifest_path)
    errors = [p for p in result.problems if p.severity == "error"]
    if errors:
        raise SuiteError(errors)
    categories, ids = list(section.get("categories") or []), list(section.get("ids") or [])
    chosen = [item for item in result.scenarios if _selected(item, categories, ids)]
    unknown = sorted(set(ids) - {item.scenario.id for item in chosen})
    if unknown:
        raise SuiteError([Problem("params.yaml", 1, f"suite.ids: unknown scenario(s) {unknown}")])
    facts = result.manifest.fact_index() if result.manifest else {}
    items = []
    for loaded in sorted(chosen, key=lambda it: it.scenario.id):
        scenario = loaded.scenario
        wanted = {f for t in scenario.turns if t.ground_truth for f in t.ground_truth.all_fact_ids}
        missing = [d.path for d in scenario.setup.index_documents if not (root / d.path).is_file()]
        items.append(
            SuiteItem(
                path=loaded.path,
                digest=digest_of(scenario),
                scenario=scenario,
                facts={f: facts[f][1] for f in sorted(wanted) if f in facts},
                missing_documents=missing,
            )
        )
    iterations = int(section.get("iterations", 1))
    if iterations < 1:
        raise SuiteError([Problem("params.yaml", 1, "suite.iterations must be >= 1")])
    return Suite(
        iterations=iterations,
        seed=int(section.get("seed", 0)),
        scenario_set_digest=digest_of(sorted((i.scenario.id, i.digest) for i in items)),
        corpus_digest=corpus_digest(result.manifest, root),
        items=items,
    )
