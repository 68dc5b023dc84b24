"""Measure the configured judge on the labelled controls: load, judge, report, write."""

from __future__ import annotations

import asyncio
import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.controls.build import documents_of
from agenteval.controls.load import (
    LoadedControl,
    load_controls,
    load_tuning,
    sample,
    select,
    tuned_by,
)
from agenteval.controls.probes import PROBES, compare, filler, probe_pair
from agenteval.controls.report import build_report, render_markdown
from agenteval.controls.run import Outcome, judge_controls, pairs_of
from agenteval.fileio import digest_of, read_json, write_json, write_text
from agenteval.judges.base import Judge, make_judge
from agenteval.schema.corpus import Manifest
from agenteval.scoring import ScoringRules

REPORT_JSON = "controls.json"
REPORT_MD = "controls.md"


@dataclass(frozen=True)
class Measured:
    report: dict[str, Any]
    json_path: Path
    md_path: Path


def chosen_controls(
    params: dict[str, Any], root: Path, split: str, n: int | None
) -> tuple[Manifest, list[LoadedControl]]:
    """The manifest and the controls of a split (a stable sample of n when n is given)."""
    section = params["controls"]
    manifest = Manifest.model_validate(read_json(root / params["suite"]["manifest"]))
    loaded = load_controls(root / section["folder"], manifest, root)
    controls = sample(select(loaded, split), n, int(section.get("seed", 0)))
    if not controls:
        raise ValueError(f"split {split!r} has no controls")
    return manifest, controls


def measure_judge(
    params: dict[str, Any],
    root: Path,
    out: Path,
    split: str | None = None,
    repeats: int | None = None,
    n: int | None = None,
    probes: bool = False,
) -> Measured:
    """Judge the selected controls with `make_judge(params, root)`; write the two reports.

    `n` judges a stable sample of the split; `probes` re-judges it under every bias probe.
    Raises ControlsError (bad control files), ValueError (bad split) before any judging.
    """
    section = dict(params["controls"])
    chosen = split or section["split"]
    k = int(repeats or section["repeats"])
    manifest, controls = chosen_controls(params, root, chosen, n or section.get("sample"))
    folder = root / section["folder"]
    every_class = {c.control.klass for c in load_controls(folder, manifest, root)}
    tuned = tuned_by(load_tuning(folder, every_class, root))
    judge = make_judge(params, root)
    rules = ScoringRules.from_params(params.get("judge") or {})
    concurrency = int((params.get("run") or {}).get("concurrency", 4))
    pairs = pairs_of(controls, manifest, root)

    def judged(with_judge: Judge, these: list[Any], times: int = 1) -> list[Outcome]:
        run = judge_controls(with_judge, controls, manifest, root, rules, repeats=times,
                             concurrency=concurrency, pairs=these)  # fmt: skip
        return asyncio.run(run)

    outcomes = judged(judge, pairs, k)
    digest = digest_of([c.control.model_dump(mode="json", by_alias=True) for c in controls])
    report = build_report(outcomes, judge.participant, chosen, section, digest, tuned)
    people = with_people(judge, params, root, rules, concurrency)
    if people is not None:
        report["people"] = people
    if probes:
        report["probes"] = _probes(params, root, controls, manifest, pairs, outcomes, judged)
    json_path, md_path = out / REPORT_JSON, out / REPORT_MD
    write_json(json_path, report)
    write_text(md_path, render_markdown(report))
    return Measured(report, json_path, md_path)


def with_people(
    judge: Judge, params: dict[str, Any], root: Path, rules: ScoringRules, concurrency: int
) -> dict[str, Any] | None:
    """The judge's agreement with people (eval/people_controls/), None when nobody reviewed."""
    from agenteval.controls.people import judge_people, load_people, people_file, people_report

    people = load_people(people_file(params, root))
    if not people:
        return None
    outcomes = asyncio.run(judge_people(judge, people, rules, concurrency))
    return people_report(outcomes, params["controls"])


def _probes(
    params: dict[str, Any],
    root: Path,
    controls: list[LoadedControl],
    manifest: Manifest,
    pairs: list[Any],
    base: list[Outcome],
    judged: Any,
) -> dict[str, Any]:
    conf = float(params["controls"]["conf"])
    fill = filler(manifest, root)
    results = {}
    for probe in PROBES:
        if probe == "truth_after":
            flipped = copy.deepcopy(params)
            flipped["judge"]["ground_truth_position"] = "after"
            outcomes = judged(make_judge(flipped, root), pairs)
        else:
            probed = [
                probe_pair(probe, pair, documents_of(c.control, manifest), fill)
                for c, pair in zip(controls, pairs, strict=True)
            ]
            outcomes = judged(make_judge(params, root), probed)
        results[probe] = compare(base, outcomes, conf)
    return results
