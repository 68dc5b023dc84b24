"""Resolve the selected scenarios with their manifest facts into one file, with digests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.corpus.pins import corpus_digest
from agenteval.fileio import digest_of
from agenteval.schema.problems import Problem
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.suite.tiers import load_tiers
from agenteval.suite.validate import LoadedScenario, validate


class SuiteError(Exception):
    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def _selected(item: LoadedScenario, categories: list[str], ids: list[str]) -> bool:
    scenario = item.scenario
    return (not categories or scenario.category in categories) and (not ids or scenario.id in ids)


def _in_tier(chosen: list[LoadedScenario], tier: str, root: Path, rel: str) -> list[LoadedScenario]:
    """The scenarios of one lane (see agenteval.schema.tiers); the file's errors stop the run."""
    if not (root / rel).is_file():
        raise SuiteError([Problem("params.yaml", 1, f"suite.tier {tier!r}: no tiers file {rel}")])
    tiers, problems = load_tiers(root / rel, rel)
    if tiers is None:
        raise SuiteError([p for p in problems if p.severity == "error"])
    keep = set(tiers.lane(tier, [item.scenario.id for item in chosen]))
    if not keep:
        raise SuiteError([Problem(rel, 1, f"tier {tier!r} selects none of the chosen scenarios")])
    return [item for item in chosen if item.scenario.id in keep]


def build_suite(params: dict[str, Any], root: Path) -> Suite:
    """Validate, select and resolve; any validation error stops the run (warnings do not)."""
    section = params["suite"]
    kind = section.get("kind", "scenarios")
    if kind != "scenarios":
        where = {"qa": "agenteval qa / pipelines/qa", "retrieval": "agenteval retrieval / "
                 "pipelines/retrieval"}.get(kind, "its own command")  # fmt: skip
        raise SuiteError([Problem("params.yaml", 1, f"suite.kind {kind!r} runs with {where}")])
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
    if section.get("tier"):
        rel = str(section.get("tiers") or "eval/tiers.yaml")
        chosen = _in_tier(chosen, str(section["tier"]), root, rel)
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
