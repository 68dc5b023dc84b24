"""`agenteval memory run` and the pipeline's run stage: every scenario through the memory
under test, then results.json, report.md and metrics.json (worst first).

Everything is checked before any work: the scenarios (path:line problems), the memory
adapter's configuration and, for `full`, the model endpoint. Each scenario gets a fresh
adapter and its own store in a temporary folder. results.json holds no wall-clock time, so
an unchanged `pr` run writes the same bytes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.benchmarks.memory.checks import shares, standing
from agenteval.benchmarks.memory.model import EndpointModel, make_model
from agenteval.benchmarks.memory.records import MemoryResults, ScenarioResult
from agenteval.benchmarks.memory.replay import BACKEND_FAILED, replay
from agenteval.benchmarks.memory.scenarios import Loaded, load_scenarios
from agenteval.benchmarks.memory.settings import MemoryParams
from agenteval.fileio import write_json, write_text
from agenteval.measured import Coverage
from agenteval.memory.base import make_memory
from agenteval.schema.params import RunParams
from agenteval.schema.transcript import Participant
from agenteval.scratch import temporary_folder


@dataclass(frozen=True)
class Paths:
    out: Path

    @property
    def results(self) -> Path:
        return self.out / "results.json"

    @property
    def report(self) -> Path:
        return self.out / "report.md"

    @property
    def metrics(self) -> Path:
        return self.out / "metrics.json"


def adapter_of(section: MemoryParams) -> dict[str, Any]:
    """`memory.adapter` as the memory kinds read it: its kind and the keys it checks itself."""
    return section.adapter.model_dump(mode="json")


def endpoint_run(run: RunParams) -> dict[str, Any]:
    """The run section as the endpoint's config reads it (a mapping): every key as typed, so
    a null cache_dir stays null (no cache)."""
    return run.model_dump(mode="json")


def preflight(
    section: MemoryParams, run: RunParams, root: Path, ids: Sequence[str]
) -> list[Loaded]:
    """The scenarios to run; raises ValueError / ScenarioError before anything runs."""
    loaded = load_scenarios(root / section.scenarios, root, ids)
    make_memory(adapter_of(section), root)
    if section.suite == "full":
        EndpointModel(section.model, endpoint_run(run), root)
    return loaded


async def _run_all(
    section: MemoryParams, run: RunParams, root: Path, loaded: Sequence[Loaded]
) -> tuple[list[ScenarioResult], Participant, Participant]:
    results: list[ScenarioResult] = []
    memory_participant = model_participant = None
    with temporary_folder("agenteval-memory-") as stores:
        for item in loaded:
            memory = make_memory(adapter_of(section), root)
            model = make_model(section, endpoint_run(run), root, item.scenario)
            memory_participant, model_participant = memory.participant, model.participant
            done = await replay(item.scenario, memory, model, Path(stores) / item.scenario.id)
            checks = [c for p in done.probes for c in p.checks]
            results.append(
                ScenarioResult(
                    id=item.scenario.id,
                    title=item.scenario.title,
                    digest=item.digest,
                    stresses=item.scenario.stresses,
                    metrics=shares(checks),
                    passed=sum(c.ok is True for c in checks),
                    failed=sum(c.ok is False for c in checks),
                    unmeasured=sum(c.ok is None for c in checks),
                    probes=done.probes,
                    chats=done.chats,
                    store=done.store,
                )
            )
    assert memory_participant is not None and model_participant is not None
    return results, memory_participant, model_participant


def run_suite(section: MemoryParams, run: RunParams, root: Path) -> MemoryResults:
    """Every scenario of `section` (its suite, its ids) through the memory under test; `run`
    is how the full suite's endpoint is asked."""
    loaded = preflight(section, run, root, section.ids)
    scenarios, memory, model = asyncio.run(_run_all(section, run, root, loaded))
    scenarios.sort(key=lambda s: standing([c for p in s.probes for c in p.checks]))
    checks = [c for s in scenarios for p in s.probes for c in p.checks]
    counts = {
        "scenarios": len(scenarios),
        "probes": sum(len(s.probes) for s in scenarios),
        "chats": sum(len(s.chats) for s in scenarios),
        "checks": len(checks),
        "passed": sum(c.ok is True for c in checks),
        "failed": sum(c.ok is False for c in checks),
        "unmeasured": sum(c.ok is None for c in checks),
    }
    return MemoryResults(
        suite=section.suite,
        memory=memory,
        model=model,
        scenarios_digest={s.id: s.digest for s in sorted(scenarios, key=lambda s: s.id)},
        metrics=shares(checks),
        counts=counts,
        checks={c.id: c.ok for c in sorted(checks, key=lambda c: c.id)},
        scenarios=scenarios,
    )


def coverage(results: MemoryResults) -> Coverage:
    """How many checks went unmeasured (`45 of 105 checks unmeasured: model backend failed
    (...)`) and why; nothing measured at all: the run exits 3 (agenteval.measured)."""
    c = results.counts
    whys = [k.why for s in results.scenarios for p in s.probes for k in p.checks if k.ok is None]
    backend = next((w for w in whys if w.startswith(BACKEND_FAILED)), None)
    reason = backend.removeprefix("unmeasured: ") if backend else "a judge could not settle them"
    return Coverage(c["unmeasured"], c["checks"], reason, "checks")


def metrics_of(results: MemoryResults) -> dict[str, Any]:
    """The headline numbers (DVC metrics, MLflow metrics): overall and per scenario."""
    found: dict[str, Any] = {k: v for k, v in results.metrics.items() if v is not None}
    found |= {f"checks.{k}": v for k, v in results.counts.items()}
    for s in results.scenarios:
        found |= {f"{s.id}.{k}": v for k, v in s.metrics.items() if v is not None}
    return found


def write_outputs(results: MemoryResults, out: Path) -> Paths:
    from agenteval.benchmarks.memory.report import render

    paths = Paths(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(paths.results, results.model_dump(mode="json"))
    write_json(paths.metrics, metrics_of(results))
    write_text(paths.report, render(results))
    return paths


def load_results(path: Path) -> MemoryResults:
    """A results.json (or the folder holding it); ValueError naming the file when unusable."""
    from pydantic import ValidationError

    file = path / "results.json" if path.is_dir() else path
    try:
        return MemoryResults.model_validate_json(file.read_bytes())
    except OSError as exc:
        raise ValueError(f"{file}:1: cannot read ({exc.strerror or exc})") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "file"
        raise ValueError(
            f"{file}:1: not memory benchmark results: {where}: {first['msg']}"
        ) from None
