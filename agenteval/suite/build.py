"""Resolve the selected scenarios with their manifest facts into one file, with digests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.corpus.pins import corpus_digest, documents
from agenteval.fileio import digest_of, sha256_file
from agenteval.schema.corpus import Fact, Manifest
from agenteval.schema.problems import Problem
from agenteval.schema.scenario import Scenario
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.suite.validate import LoadedScenario, validate


class SuiteError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


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
        item_facts = {f: facts[f][1] for f in sorted(wanted) if f in facts}
        files = scenario_documents(scenario, result.manifest, root)
        items.append(
            SuiteItem(
                path=loaded.path,
                digest=digest_of(scenario),
                scenario=scenario,
                facts=item_facts,
                missing_documents=missing,
                documents=files,
                ground_truth_digest=ground_truth_digest(item_facts, files),
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
    return digest_of({"facts": {k: f.model_dump(mode="json") for k, f in facts.items()},
                      "documents": files})  # fmt: skip
