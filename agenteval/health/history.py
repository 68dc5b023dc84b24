"""The runs a health report reads: one history per model, pooled per scenario.

`agenteval health RUN... --strong RUN... --weak RUN...` names up to three models, weakest
first: the runs given with `--weak`, the main history (the positional runs, e.g. the last N
nightlies) and the runs given with `--strong`. Each run is a run directory, a scorecard file
or an MLflow run id (:func:`agenteval.gate.runs.load_side`).

Every iteration of a scenario is pooled with the other iterations of the same model only when
it measured the same scenario content: the digest each scenario has in the newest run that
holds it (the last main run first) is the reference, and older versions are left out and
counted. All runs must share the measuring instrument (judge, simulator, corpus); otherwise
classes would mix scales.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agenteval.gate.runs import (
    InputError,
    LoadedRun,
    agent_differences,
    instrument_differences,
    load_side,
)
from agenteval.uncertainty import ScenarioTally, tally

ORDER = ("weak", "main", "strong")  # weakest to strongest


class NotComparable(Exception):
    """The runs do not measure with the same instrument (or one model's runs disagree)."""


@dataclass
class Model:
    """One model's runs and their iterations pooled per scenario."""

    name: str
    runs: list[LoadedRun]
    tallies: dict[str, ScenarioTally] = field(default_factory=dict)

    @property
    def agent(self) -> str:
        target = self.runs[0].card.config.get("target") or {}
        return f"{target.get('kind')} / {target.get('model')}"

    def run_dirs(self) -> list[Path | None]:
        return [run_dir(run) for run in self.runs]


@dataclass
class History:
    models: list[Model]  # weakest first; always holds "main"
    digests: dict[str, str | None]  # scenario id -> the content every pooled iteration measured
    warnings: list[str] = field(default_factory=list)

    @property
    def main(self) -> Model:
        return next(m for m in self.models if m.name == "main")

    @property
    def strongest(self) -> Model:
        return self.models[-1]

    def ids(self) -> list[str]:
        return list(self.digests)


def run_dir(run: LoadedRun) -> Path | None:
    """The folder holding a run's data/ (transcripts), when the run was read from disk."""
    if run.source.startswith("mlflow:"):
        return None
    card = Path(run.source)
    return card.parent.parent if card.parent.name == "reports" else card.parent


def _reference_digests(models: Sequence[Model]) -> dict[str, str | None]:
    ordered = [m for m in models if m.name == "main"] + [m for m in models if m.name != "main"]
    found: dict[str, str | None] = {}
    for model in ordered:
        for run in reversed(model.runs):
            for sid, t in tally(run.card).items():
                found.setdefault(sid, t.digest)
    return dict(sorted(found.items()))


def _pool(model: Model, digests: dict[str, str | None]) -> int:
    """Pool the model's iterations per scenario; returns how many were left out as stale."""
    stale = 0
    for run in model.runs:
        for sid, t in tally(run.card).items():
            if t.digest != digests.get(sid):
                stale += t.runs
                continue
            pooled = model.tallies.setdefault(sid, ScenarioTally(sid, t.category, t.digest))
            pooled.runs += t.runs
            pooled.outcomes += t.outcomes
            pooled.scores += t.scores
            pooled.statuses += t.statuses
    return stale


def _check_instrument(models: Sequence[Model], allow_drift: bool) -> list[str]:
    first = models[0].runs[0]
    problems = []
    for model in models:
        for run in model.runs:
            diffs = instrument_differences(first.card.config, run.card.config)
            if diffs:
                problems.append(f"{run.source} vs {first.source}: {'; '.join(diffs[:4])}")
    if problems and not allow_drift:
        raise NotComparable(
            "the runs measure with different instruments (judge, simulator or corpus): "
            + " | ".join(problems)
            + " (pass --allow-instrument-drift to pool them anyway, with a warning)"
        )
    return [f"instrument differs: {p}" for p in problems]


def _check_model(model: Model) -> list[str]:
    first = model.runs[0].card.config
    warnings = []
    for run in model.runs[1:]:
        diffs = agent_differences(first, run.card.config)
        named = [d for d in diffs if d.startswith(("target.kind:", "target.model:"))]
        if named:
            raise NotComparable(f"{model.name} runs are not one agent model: {run.source}: {named}")
        if diffs:
            what = f"{run.source} ran another agent configuration"
            warnings.append(f"{model.name}: {what}: {diffs[0]}")
    return warnings


def load_history(
    main: Sequence[str],
    strong: Sequence[str] = (),
    weak: Sequence[str] = (),
    allow_drift: bool = False,
) -> History:
    """Read every run; InputError for an unreadable one, NotComparable for mixed instruments."""
    if not main:
        raise InputError("health needs at least one run of the main model")
    given = {"weak": weak, "main": main, "strong": strong}
    models = [Model(name, [load_side(arg) for arg in given[name]]) for name in ORDER if given[name]]
    warnings = _check_instrument(models, allow_drift)
    for model in models:
        warnings += _check_model(model)
    digests = _reference_digests(models)
    for model in models:
        stale = _pool(model, digests)
        if stale:
            warnings.append(
                f"{model.name}: {stale} iteration(s) measured an older version of a scenario "
                "and were left out"
            )
    return History(models, digests, warnings)


def describe(model: Model) -> dict[str, Any]:
    return {
        "agent": model.agent,
        "runs": [run.source for run in model.runs],
        # Iterations per scenario (the most any scenario has): what stability classes need.
        "iterations": max((t.runs for t in model.tallies.values()), default=0),
    }
