"""params.yaml as typed models: the one list of every key a run can be configured with.

Each section is a contract with the DVC stages that read it (see dvc.yaml) and the address of
every `--set` / `dvc exp run -S` override. Unknown keys are refused, so a typo such as
`target.param.top_k` fails before any scenario runs instead of being silently ignored. A
model's defaults are the embedded offline default (builtin agent, scripted user, code judge).

Adding a key is adding a field here with its type, default and a one-line description; the
JSON Schema (`eval/schemas/params.schema.json`) is exported from these models.
"""

from __future__ import annotations

from datetime import date
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from agenteval.schema.params_base import (
    DIMENSION_NAMES,
    EndpointFields,
    _Section,
)
from agenteval.schema.params_benchmarks import (
    SessionsParams,
    TasksParams,
)
from agenteval.schema.params_climb import ClimbParams


class SplitParams(_Section):
    """`suite.split`: the hillclimb split of every scenario file (see agenteval.split)."""

    salt: str = Field(
        "agenteval-split-1",
        description="Salt of the id hash; a new salt deals every unpinned scenario afresh.",
    )
    train: float = Field(0.6, ge=0, le=1, description="Share of each category in train.")
    held: float = Field(0.25, ge=0, le=1, description="Share in held (the keep gate).")
    test: float = Field(0.15, ge=0, le=1, description="Share in test (read once a session).")

    @model_validator(mode="after")
    def _sum_to_one(self) -> SplitParams:
        if abs(self.train + self.held + self.test - 1.0) > 1e-9:
            raise ValueError(
                f"train + held + test must be 1, got {self.train + self.held + self.test}"
            )
        return self


class SuiteParams(_Section):
    """Which scenarios (or benchmark items) a run evaluates, how often, and how they split."""

    kind: Literal[
        "scenarios",
        "qa",
        "retrieval",
        "sessions",
        "tasks",
        "throughput",
        "code_retrieval",
        "memory",
    ] = Field(
        "scenarios",
        description="scenarios (dvc.yaml) | qa (pipelines/qa, section qa) | retrieval "
        "(pipelines/retrieval, section retrieval) | sessions (pipelines/sessions) | tasks "
        "(pipelines/tasks, section tasks) | throughput (pipelines/throughput) | "
        "code_retrieval (pipelines/code_retrieval) | memory (pipelines/memory, section memory).",
    )
    scenarios: str | list[str] = Field(
        "eval/scenarios", description="A folder or a list of folders/files."
    )
    manifest: str = Field(
        "eval/corpus/manifest.json", description="The corpus manifest: documents, pins, facts."
    )
    categories: list[str] = Field(default_factory=list, description="Empty: all categories.")
    ids: list[str] = Field(default_factory=list, description="Empty: all scenarios.")
    iterations: int = Field(1, ge=1, description="Repeats of every scenario.")
    seed: int = Field(0, description="Base seed; every iteration derives its own from it.")
    tier: Literal["smoke", "full", "backlog"] | None = Field(
        None, description="Only this CI lane of the tiers file; null: every scenario."
    )
    tiers: str = Field("eval/tiers.yaml", description="Which lane each scenario is in, and why.")
    strict: bool = Field(
        False,
        description="Refuse the run on any invalid scenario file (and on the reference format's "
        "looser references); false: skip invalid files, list them, exit 2 at the end.",
    )
    split: SplitParams = Field(default_factory=SplitParams)


class BuiltinKnobs(BaseModel):
    """`target.params`: the builtin agent's knobs; for model endpoints also request fields
    (max_tokens, top_p, ...), which is why extra keys are kept here and refused only for
    `kind: builtin` (see `agenteval.params.check_params`)."""

    model_config = ConfigDict(extra="allow")

    chunk_size: int = Field(400, gt=0, description="Characters per indexed chunk.")
    top_k: int = Field(4, gt=0, description="Passages retrieved per query.")
    abstain_threshold: float = Field(
        0.3, ge=0, description="Minimum share of the question's terms a sentence must support."
    )
    temperature: float = Field(
        0.0, ge=0, description="> 0 samples among the top answers (seeded per iteration)."
    )


class AgentLimits(_Section):
    """What the agent's architecture cannot do. Scenarios these limits make impossible are
    listed by `agenteval audit` and scored BLOCKED_BY_ARCHITECTURE (capped like a FAIL)."""

    history_turns: int | None = Field(
        None, ge=0, description="Earlier turns kept in context (0: stateless); null: all."
    )
    message_chars: int | None = Field(
        None, ge=1, description="Longest user message accepted intact; null: no limit."
    )
    tools: list[str] | None = Field(
        None, description="The tools the agent has; null: every tool it is offered."
    )


class TargetParams(EndpointFields):
    """The agent under test: builtin (offline) | chat (any endpoint) | mcp (external agent)."""

    kind: str = Field("builtin", description="builtin | chat | mcp | claude-code")
    model: str | None = Field("builtin-bm25", description="Model name sent to the endpoint.")
    agent: str = Field("eval/agents/default", description="System prompt, tools, phrasings.")
    params: BuiltinKnobs = Field(default_factory=BuiltinKnobs)
    limits: AgentLimits = Field(default_factory=AgentLimits)
    library: list[str] | None = Field(None, description="Folders the agent may discover.")
    max_tool_steps: int | None = Field(None, ge=1, description="chat: tool steps per turn.")
    tool_mode: Literal["native", "context"] | None = Field(
        None,
        description="chat: native tool calls (null) or context: the harness searches and puts "
        "the passages in the prompt, for models without tool calling.",
    )
    command: str | list[str] | None = Field(None, description="mcp: server command (stdio).")
    url: str | None = Field(None, description="mcp: streamable HTTP URL.")
    env: str | list[str] | None = Field(None, description="mcp: variable NAMES passed on.")
    cwd: str | None = Field(None, description="mcp: working folder of the server command.")
    tools: dict[str, str] | None = Field(None, description="mcp: tool renames.")
    arguments: dict[str, str] | None = Field(None, description="mcp: argument renames.")
    call_timeout_s: float | None = Field(
        None, gt=0, description="mcp: seconds per tool call; claude-code: per turn."
    )
    close_timeout_s: float | None = Field(
        None, gt=0, description="mcp: seconds to wait for the server to close (null: 30)."
    )


class SimulatorParams(EndpointFields):
    """Who writes the user's messages: scripted (the scenario's own) or llm (an endpoint)."""

    kind: str = Field("scripted", description="scripted | llm")
    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompts: str | None = Field(None, description="Folder of simulator.md (eval/prompts).")
    rephrase_scripted: bool | None = Field(
        None, description="llm: rewrite scripted user messages too (null/false: send them as is)."
    )


class JudgeParams(EndpointFields):
    """Who grades the transcripts, and the pass rules every judge's scores go through."""

    kind: str = Field(
        "code",
        description="code | llm | hybrid (llm with code's certain findings binding) | mlflow "
        "(an MLflow make_judge judge on the endpoint); the endpoint is also the pairwise judge "
        "of `compare --pairwise` and `controls pairwise`",
    )
    weights: dict[DIMENSION_NAMES, float] = Field(
        default_factory=dict, description="Overrides of the default dimension weights."
    )
    pass_threshold: float = Field(
        6.0, ge=0, le=10, description="A scenario passes at this weighted score or above."
    )
    min_correctness: float = Field(
        4.0, ge=0, le=10, description="... and when every turn's correctness reaches this."
    )
    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompts: str | None = Field(None, description="Folder of the judge prompts (eval/prompts).")
    max_attempts: int | None = Field(None, ge=1, description="Model calls incl. re-asks (null: 3).")
    allow_self_judge: bool | None = Field(
        None, description="true: accept a judge with the agent's own endpoint and model."
    )
    structured_output: bool | None = Field(
        None,
        description="null/true: send the verdict JSON Schema (both protocols); false: "
        "prompt only, for models without structured output.",
    )
    ground_truth_position: Literal["before", "after"] = Field(
        "before", description="Where the turn prompt shows the ground truth, around the reply."
    )
    controls_per_run: int = Field(
        0,
        ge=0,
        description="Held-split controls judged in every judge stage, disguised as "
        "scenarios: the judge's agreement and false-pass rate in this very run (20-30 advised).",
    )
    repeats: int = Field(
        1, ge=1, description="Judgings per transcript; >= 2 reports flip rate and score SEM."
    )
    majority: bool = Field(
        False, description="With repeats >= 2, keep the majority verdict (else the first)."
    )


class PriceParams(_Section):
    """A model's prices in USD per million tokens, keyed by the model name."""

    input_per_mtok: float = Field(ge=0, description="Uncached input tokens.")
    output_per_mtok: float = Field(ge=0, description="Output tokens.")
    cache_read_per_mtok: float | None = Field(None, ge=0, description="Cached input read.")
    cache_write_per_mtok: float | None = Field(None, ge=0, description="Cache writes.")
    as_of: date | None = Field(
        None,
        description="The date of the published rate card these prices come from; reports "
        "name it beside every cost priced with them (harness_counts).",
    )


RetryStatus = Literal[
    "TIMEOUT",
    "BUDGET_EXCEEDED",
    "INFRA_ERROR",
    "SETUP_ERROR",
    "SKIPPED_NO_DOCUMENT",
    "ERRORED",
    "NO_USER_MESSAGE",
]


def _default_retries() -> list[RetryStatus]:
    return ["INFRA_ERROR", "ERRORED", "TIMEOUT"]


class RayParams(_Section):
    """`run.executor: ray`: where the Ray instance is and how units are placed on it."""

    address: str | None = Field(
        None,
        description="null: start a Ray instance on this machine for the run; 'auto': join the "
        "cluster this machine belongs to (`ray start`); 'ray://HEAD:10001': a cluster through "
        "Ray Client. Every node needs agenteval installed and the repository at the same path.",
    )
    num_cpus: int | None = Field(
        None, ge=1, description="CPUs of the instance started here (null: this machine's)."
    )
    cpus_per_unit: float = Field(
        1.0,
        gt=0,
        description="CPU a unit of work reserves; 0.25 runs four I/O-bound model conversations "
        "per CPU.",
    )
    max_retries: int = Field(
        3, ge=0, description="Times a unit is run again after the process running it died."
    )


class MeterParams(_Section):
    """run.meter: `metered` costs from the provider's billing API, read before and after."""

    kind: Literal["openai_costs"] = Field(
        "openai_costs", description="openai_costs: GET {base_url}/organization/costs."
    )
    base_url: str = "https://api.openai.com/v1"
    api_key_env: str = Field(description="Variable holding an admin key that may read costs.")
    project_ids: list[str] = Field(default_factory=list, description="Empty: the organization.")
    lag_s: float = Field(
        90, ge=0, description="Wait before the closing snapshot: the meter trails the calls."
    )


class RunParams(_Section):
    """How inference runs: where, how many requests at once, timeouts, cache, spending."""

    executor: Literal["local", "ray"] = Field(
        "local",
        description="local: the units run in this process's event loop; ray: each unit is a "
        "Ray task (pip install -e '.[ray]'), written here exactly once.",
    )
    ray: RayParams = Field(default_factory=RayParams)
    concurrency: int = Field(
        4, ge=1, description="Requests in flight per endpoint (with ray: across all workers)."
    )
    timeout_s: float = Field(900, gt=0, description="Per scenario, scaled with the work.")
    budget_usd_per_scenario: float | None = Field(
        None, gt=0, description="A scenario beyond it is BUDGET_EXCEEDED; null: no cap."
    )
    budget_usd_total: float | None = Field(
        None, gt=0, description="The run stops, resumable, beyond it; null: no cap."
    )
    meter: MeterParams | None = Field(
        None, description="Billing meter snapshots around inference (metered costs); null: off."
    )
    agent_model: str | None = Field(
        None,
        description="Pin: the model every unit must report having run (the endpoint's reply "
        "`model`, an MCP server's report); a unit that ran anything else is discarded as "
        "INFRA_ERROR with the reason. It does not choose the model. null: not checked.",
    )
    cache: bool = Field(
        True,
        description="Cache model replies (keyed by request, iteration and seed): an unchanged "
        "rerun makes no calls; false asks the model every time.",
    )
    cache_dir: str | None = Field(".cache/agenteval/llm", description="null: no cache.")
    max_attempts: int = Field(5, ge=1, description="HTTP attempts on 429/5xx/timeouts.")
    request_timeout_s: float = Field(60, gt=0, description="Seconds per HTTP request.")
    prices: dict[str, PriceParams] = Field(
        default_factory=dict, description="Turns provider usage into costs (n/a without)."
    )
    retry_statuses: list[RetryStatus] = Field(
        default_factory=_default_retries,
        description="Stored units that ended so are run once more by `agenteval retry`, a "
        "resume, or a repro whose inference inputs changed (attempts recorded); COMPLETED "
        "units never are.",
    )
    estimate_missing_usage: bool | None = Field(
        None, description="Price replies without usage from their length (an estimate)."
    )


class FetchParams(_Section):
    """The DVC `fetch` stage: the pinned external corpora (eval/sources.yaml)."""

    allow_missing: bool = Field(
        False,
        description="false: a pinned file the network keeps away fails the stage (named), so "
        "the next repro tries again; true: the stage lays out the rest and succeeds, and the "
        "scenarios needing the file are SKIPPED_NO_DOCUMENT until this is set back to false.",
    )


class StatsParams(_Section):
    """The `stats` stage (reports/noise.json) and the health report's stability classes."""

    conf: float = Field(0.95, gt=0, lt=1, description="Confidence of every interval.")
    stability_tau: float = Field(
        0.2, gt=0, lt=1, description="Pass share from 0 or 1 within which a scenario is stable."
    )
    bootstrap_resamples: int = Field(2000, ge=100, description="Resamples of a bootstrap.")
    seed: int | None = Field(None, description="Seeds the bootstrap (null: 0).")


TraceMode = Literal["all", "failures", "sample", "none"]
TRACE_MODES: tuple[str, ...] = get_args(TraceMode)
LEGACY_TRACES = {True: "all", False: "none"}  # `traces: true / false` of older params files


class TrackingParams(_Section):
    """MLflow: where runs are logged (docs/tracking.md).

    Which conversations become traces (`traces`): `all`; `failures` (every conversation
    that is not PASS); `sample` (those, plus the `trace_sample` passing ones with the
    smallest salted hash of scenario id and iteration: the same scenarios in every run, and
    a run with fewer passing conversations is traced whole); `none`. A trace costs MLflow
    ~25 ms of CPU (docs/performance.md), hence the default. The policy in force is the run's
    tag `agenteval.traces` and is said in its description; every verdict, traced or not, is
    in the run's table verdicts.json. `true` / `false` are read as `all` / `none`.
    """

    experiment: str = Field("agenteval", description="MLflow experiment of the runs.")
    uri: str | None = Field(None, description="null: sqlite:///<repository root>/mlflow.db")
    enabled: bool = Field(True, description="false: log nothing (agenteval track still can).")
    traces: TraceMode = Field(
        "sample", description="Conversations logged as MLflow traces (see above)."
    )
    trace_sample: int = Field(
        50, ge=0, description="With traces: sample, the passing conversations traced."
    )

    @field_validator("traces", mode="before")
    @classmethod
    def _legacy_bool(cls, value: Any) -> Any:
        return LEGACY_TRACES[value] if isinstance(value, bool) else value


class ControlsParams(_Section):
    """`agenteval controls` and the DVC `controls` stage: the judge measured on labels."""

    folder: str = Field("eval/judge_controls", description="Labelled controls (*.yaml).")
    people: str = Field(
        "eval/people_controls/controls.json",
        description="Turns reviewers labelled in MLflow (`agenteval controls import`): judged "
        "beside the written controls, and mixed in with judge.controls_per_run.",
    )
    split: Literal["dev", "held", "fresh", "all"] = Field(
        "all", description="Controls the DVC stage judges (the CLI's --split overrides it)."
    )
    gated_splits: list[Literal["dev", "held", "fresh"]] = Field(
        default_factory=lambda: ["held", "fresh"],  # type: ignore[arg-type]
        description="Splits whose figures must meet the thresholds when split is all.",
    )
    min_agreement: float = Field(
        0.95, ge=0, le=1, description="Share of judged controls where judge and label agree."
    )
    max_false_passes: int = Field(
        0, ge=0, description="Wrong replies the judge may accept (a gamed judge accepts them)."
    )
    min_coverage: float = Field(0.8, ge=0, le=1, description="Share of controls not deferred.")
    repeats: int = Field(1, ge=1, description="Judgings per control (self-consistency at >= 2).")
    min_self_consistency: float = Field(
        0.9, ge=0, le=1, description="With repeats >= 2: share of items judged identically."
    )
    sample: int | None = Field(
        None,
        ge=1,
        description="Judge only this many controls of the split (a stable "
        "salted-hash choice, half pass and half fail labels); null: all.",
    )
    bootstrap_resamples: int = Field(2000, ge=100, description="Resamples of a bootstrap.")
    conf: float = Field(0.95, gt=0, lt=1, description="Confidence of every interval.")
    seed: int = Field(0, description="Seeds the bootstrap.")


class Params(_Section):
    """params.yaml: every section a run reads."""

    fetch: FetchParams = Field(default_factory=FetchParams)
    suite: SuiteParams = Field(default_factory=SuiteParams)
    target: TargetParams = Field(default_factory=TargetParams)
    simulator: SimulatorParams = Field(default_factory=SimulatorParams)
    judge: JudgeParams = Field(default_factory=JudgeParams)
    run: RunParams = Field(default_factory=RunParams)
    stats: StatsParams = Field(default_factory=StatsParams)
    tracking: TrackingParams = Field(default_factory=TrackingParams)
    controls: ControlsParams = Field(default_factory=ControlsParams)
    tasks: TasksParams = Field(default_factory=TasksParams)
    climb: ClimbParams = Field(default_factory=ClimbParams)
    sessions: SessionsParams = Field(default_factory=SessionsParams)
