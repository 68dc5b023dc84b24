"""A benchmark behind one protocol, and the one registry of benchmarks.

A benchmark is its folder: its name, its typed settings section (its `params.yaml` section,
defaults stated there once), its steps (each the DVC stage of the same name in
`pipelines/<name>/dvc.yaml`, a typed `run(settings, context, layout)` and the failures it
maps to exit statuses), its metrics and its gate. The few facts it needs from outside its
section travel in `RunContext`. `REGISTRY` names every benchmark as `"module:attr"`, resolved
on first use like the agents' (agenteval.targets.base); adding one is its folder,
`pipelines/<name>/` and one line here. The stage runner (`python -m stages.benchmark NAME
STEP`) and the CLI's bench commands run a step through `agenteval.benchmarks.runner`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeVar, get_args

from pydantic import BaseModel, Field, create_model

from agenteval.benchmarks.verdict import GateResult
from agenteval.fileio import read_json
from agenteval.layout import Layout
from agenteval.measured import Coverage
from agenteval.registry import resolve
from agenteval.schema.params import (
    Params,
    PriceParams,
    RunParams,
    StatsParams,
    SuiteParams,
    TargetParams,
)

# name -> "module:attr" of its Benchmark; its settings are the params.yaml section `name`.
REGISTRY: dict[str, str] = {
    "throughput": "agenteval.benchmarks.throughput.benchmark:BENCHMARK",
    "code_retrieval": "agenteval.benchmarks.code_retrieval.benchmark:BENCHMARK",
    "retrieval": "agenteval.benchmarks.retrieval.benchmark:BENCHMARK",
    "qa": "agenteval.benchmarks.qa.benchmark:BENCHMARK",
    "memory": "agenteval.benchmarks.memory.benchmark:BENCHMARK",
}

S = TypeVar("S", bound=BaseModel)
S_contra = TypeVar("S_contra", bound=BaseModel, contravariant=True)


@dataclass(frozen=True)
class Failure:
    """A failure a step may end in, and the exit status it means."""

    errors: type[Exception] | tuple[type[Exception], ...]
    status: int
    label: str = ""  # said before the error ("stopped")


@dataclass(frozen=True)
class Outcome:
    """What a step did: lines for the terminal, the units it measured (a run that measured
    nothing exits 3, agenteval.measured), and its status (a failed gate: 1)."""

    lines: tuple[str, ...] = ()
    coverage: Coverage | None = None
    status: int = 0


@dataclass(frozen=True)
class RunContext:
    """The few facts a benchmark needs from outside its own section."""

    root: Path
    target: TargetParams  # the agent under test: the one self-judge rule compares with it
    concurrency: int  # run.concurrency: requests in flight when a step calls a model
    key_env: Mapping[str, str]  # role -> NAME of the variable holding its key
    prices: Mapping[str, PriceParams]
    commit: str | None  # the repository's HEAD (agenteval.stamps.head), None outside git
    lock: Path | None = None  # the pipeline's dvc.lock, recorded by track; None: a CLI run
    # suite (its seed, iterations, corpus manifest) and stats (the intervals' confidence):
    # the shared sections a benchmark's suite of items and its figures are made with.
    suite: SuiteParams = field(default_factory=SuiteParams)
    stats: StatsParams = field(default_factory=StatsParams)
    progress: bool = False  # a progress bar on stderr (a terminal's, never a log's)
    run: RunParams = field(default_factory=RunParams)  # how a step that asks a model runs
    # The params as loaded and validated: what the track step logs and digests into the
    # run's key (agenteval.benchmarks.tracking) and what the scenario pipeline's step_infer
    # (still a mapping) is handed; never re-read for settings.
    logged: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Step(Generic[S]):
    name: str  # the DVC stage's name in pipelines/<benchmark>/dvc.yaml
    run: Callable[[S, RunContext, Layout], Outcome]
    failures: tuple[Failure, ...] = ()


class Benchmark(Protocol[S]):
    """One benchmark: `name` is its params section, its `suite.kind`, its results' `kind`."""

    name: str
    Settings: type[S]
    steps: tuple[Step[S], ...]
    schemas: Mapping[str, type[BaseModel]]  # its input files' JSON Schemas (eval/schemas/)

    def metrics(self, layout: Layout) -> dict[str, Any]: ...

    def gate(
        self, current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None
    ) -> GateResult: ...


@dataclass(frozen=True)
class Definition(Generic[S]):
    """A Benchmark as most are written: its metrics the step's reports/metrics.json, its
    gate its own rule (`rule(current, baseline, tolerance)`, None: the rule's default)."""

    name: str
    Settings: type[S]
    steps: tuple[Step[S], ...]
    schemas: Mapping[str, type[BaseModel]]
    rule: Callable[[Mapping[str, Any], Mapping[str, Any], float | None], GateResult]
    # What its gate reads beside a results file, from the folder holding it (QA: details/);
    # benchmarks.gate.load_run asks any benchmark for it, None: nothing.
    beside: Callable[[Path], Mapping[str, Any]] | None = None

    def metrics(self, layout: Layout) -> dict[str, Any]:
        found: dict[str, Any] = read_json(layout.metrics)
        return found

    def gate(
        self, current: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float | None
    ) -> GateResult:
        return self.rule(current, baseline, tolerance)


def benchmark(name: str) -> Benchmark[Any]:
    """The registered benchmark `name` (LookupError naming the known ones)."""
    if name not in REGISTRY:
        raise LookupError(f"unknown benchmark {name!r} (known: {', '.join(sorted(REGISTRY))})")
    found: Benchmark[Any] = resolve(REGISTRY[name])
    return found


def step_of(bench: Benchmark[Any], name: str) -> Step[Any]:
    for step in bench.steps:
        if step.name == name:
            return step
    known = ", ".join(s.name for s in bench.steps)
    raise LookupError(f"benchmark {bench.name} has no step {name!r} (steps: {known})")


def params_model(names: tuple[str, ...] | None = None) -> type[Params]:
    """Params with every registered benchmark's section (or only `names`'): the model the
    loader validates a benchmark pipeline's params.yaml with, and the JSON Schema and
    docs/configuration.md are generated from. A name `suite.kind` does not list yet is added
    to it here, so a new benchmark is its folder and its registry line."""
    chosen = tuple(REGISTRY) if names is None else names
    sections: dict[str, Any] = {}
    for name in chosen:
        settings = benchmark(name).Settings
        sections[name] = (settings, Field(default_factory=settings))
    kinds = get_args(SuiteParams.model_fields["kind"].annotation)
    if added := tuple(n for n in chosen if n not in kinds):
        field = SuiteParams.model_fields["kind"]
        widened: Any = Literal[(*kinds, *added)]
        kind = Field(field.default, description=field.description)
        suite = create_model("SuiteParams", __base__=SuiteParams, kind=(widened, kind))
        sections["suite"] = (suite, Field(default_factory=suite))
    made: type[Params] = create_model("Params", __base__=Params, __doc__=Params.__doc__, **sections)
    return made


def schemas() -> dict[str, type[BaseModel]]:
    """The input files' JSON Schemas of every registered benchmark, by exported name."""
    return {k: v for name in REGISTRY for k, v in benchmark(name).schemas.items()}


def context(
    params: Mapping[str, Any], root: Path, lock: Path | None, progress: bool = False
) -> RunContext:
    """The RunContext of validated `params` (a loader's output for a registered benchmark),
    typed once more with that benchmark's model."""
    from agenteval.stamps import head

    typed = params_model((params["suite"]["kind"],)).model_validate(params)
    roles = {"target": typed.target, "simulator": typed.simulator, "judge": typed.judge}
    return RunContext(
        root=root,
        target=typed.target,
        concurrency=typed.run.concurrency,
        key_env={role: s.api_key_env for role, s in roles.items() if s.api_key_env},
        prices=typed.run.prices,
        commit=head(root),
        lock=lock,
        suite=typed.suite,
        stats=typed.stats,
        progress=progress,
        run=typed.run,
        logged=params,
    )


def with_target(ctx: RunContext, **changes: Any) -> dict[str, Any]:
    """The params as loaded, with `changes` made to the target's section: what a benchmark
    that asks its target through the scenario pipeline (agenteval.pipeline.step_infer, which
    still takes the loaded mapping) hands it, e.g. a wider corpus library. Checked against
    TargetParams so a change cannot add a key the models refuse."""
    target = dict(ctx.logged["target"]) | changes
    TargetParams.model_validate(target)
    return dict(ctx.logged) | {"target": target}


def settings_of(bench: Benchmark[S], params: Mapping[str, Any]) -> S:
    """The benchmark's typed section of validated `params`."""
    return bench.Settings.model_validate(params[bench.name])
