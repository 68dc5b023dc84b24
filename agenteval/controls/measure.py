"""Measure the configured judge on the labelled controls: load, judge, report, write."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.controls.load import load_controls, select
from agenteval.controls.report import build_report, render_markdown
from agenteval.controls.run import judge_controls
from agenteval.fileio import digest_of, read_json, write_json, write_text
from agenteval.judges.base import make_judge
from agenteval.schema.corpus import Manifest
from agenteval.scoring import ScoringRules

REPORT_JSON = "controls.json"
REPORT_MD = "controls.md"


@dataclass(frozen=True)
class Measured:
    report: dict[str, Any]
    json_path: Path
    md_path: Path


def measure_judge(
    params: dict[str, Any],
    root: Path,
    out: Path,
    split: str | None = None,
    repeats: int | None = None,
) -> Measured:
    """Judge the selected controls with `make_judge(params, root)`; write the two reports.

    Raises ControlsError (bad control files), ValueError (bad split) before any judging.
    """
    section = dict(params["controls"])
    chosen = split or section["split"]
    k = int(repeats or section["repeats"])
    manifest = Manifest.model_validate(read_json(root / params["suite"]["manifest"]))
    loaded = load_controls(root / section["folder"], manifest, root)
    controls = select(loaded, chosen)
    if not controls:
        raise ValueError(f"split {chosen!r} has no controls")
    judge = make_judge(params, root)
    rules = ScoringRules.from_params(params.get("judge") or {})
    concurrency = int((params.get("run") or {}).get("concurrency", 4))
    outcomes = asyncio.run(
        judge_controls(judge, controls, manifest, root, rules, repeats=k, concurrency=concurrency)
    )
    digest = digest_of([c.control.model_dump(mode="json", by_alias=True) for c in controls])
    report = build_report(outcomes, judge.participant, chosen, section, digest)
    json_path, md_path = out / REPORT_JSON, out / REPORT_MD
    write_json(json_path, report)
    write_text(md_path, render_markdown(report))
    return Measured(report, json_path, md_path)
