"""Export every file format's JSON Schema to eval/schemas/ (and check they are current).

The benchmarks behind the protocol (agenteval.benchmarks.base) own their records and params
sections: the caller that sees them hands them in (`params`, with their sections composed
on, and `extra`, their input files' models), so this floor imports none of them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from agenteval.schema.agent import AgentConfig
from agenteval.schema.controls import ControlFile
from agenteval.schema.corpus import Manifest
from agenteval.schema.expectations import Expectations
from agenteval.schema.guard import GuardControlFile
from agenteval.schema.params import Params
from agenteval.schema.people import PeopleControlFile
from agenteval.schema.scenario import Scenario
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.sessions import (
    SessionControlFile,
    SessionDataset,
    SessionResults,
    SessionScorecard,
)
from agenteval.schema.simulator_controls import SimulatorControlFile
from agenteval.schema.sources import SourcesFile
from agenteval.schema.suite import Suite
from agenteval.schema.task_records import TaskAttempt, TaskGrade
from agenteval.schema.task_results import TaskExpectations, TaskScorecard
from agenteval.schema.tasks import TaskFile
from agenteval.schema.tiers import TiersFile
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict


def models(
    params: type[BaseModel] = Params, extra: Mapping[str, type[BaseModel]] | None = None
) -> dict[str, type[BaseModel]]:
    found: dict[str, type[BaseModel]] = {
        "scenario": Scenario,
        "manifest": Manifest,
        "suite": Suite,
        "transcript": Transcript,
        "verdict": Verdict,
        "scorecard": Scorecard,
        "sources": SourcesFile,
        "params": params,
        "tiers": TiersFile,
        "expectations": Expectations,
        "controls": ControlFile,
        "people_controls": PeopleControlFile,
        "simulator_controls": SimulatorControlFile,
        "agent": AgentConfig,
        "guard_controls": GuardControlFile,
        "session_dataset": SessionDataset,
        "session_results": SessionResults,
        "session_scorecard": SessionScorecard,
        "session_controls": SessionControlFile,
        "tasks": TaskFile,
        "task_attempt": TaskAttempt,
        "task_grade": TaskGrade,
        "task_scorecard": TaskScorecard,
        "task_expectations": TaskExpectations,
    }
    return found | dict(extra or {})


def render(model: type[BaseModel]) -> str:
    schema = model.model_json_schema(by_alias=True)
    return json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def export(
    folder: Path,
    params: type[BaseModel] = Params,
    extra: Mapping[str, type[BaseModel]] | None = None,
) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in models(params, extra).items():
        path = folder / f"{name}.schema.json"
        path.write_text(render(model), encoding="utf-8")
        written.append(path)
    return written


def stale(
    folder: Path,
    params: type[BaseModel] = Params,
    extra: Mapping[str, type[BaseModel]] | None = None,
) -> list[str]:
    """Names whose exported schema is missing or differs from the models."""
    out = []
    for name, model in models(params, extra).items():
        path = folder / f"{name}.schema.json"
        if not path.is_file() or path.read_text(encoding="utf-8") != render(model):
            out.append(name)
    return out
