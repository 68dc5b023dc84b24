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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Protocol = Literal["openai", "anthropic"]
DIMENSION_NAMES = Literal[
    "correctness",
    "tool_selection",
    "context_retention",
    "completeness",
    "efficiency",
    "personality",
    "error_recovery",
]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EndpointFields(_Section):
    """A model endpoint: what to call and how. The key is read from the variable named."""

    model: str | None = Field(None, description="Model name sent to the endpoint.")
    base_url: str | None = Field(None, description="e.g. http://127.0.0.1:8000/v1")
    api_key_env: str | None = Field(
        None, description="NAME of the environment variable holding the key (never the key)."
    )
    protocol: Protocol | None = Field(None, description="openai (compatible) | anthropic")


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
        "code", description="code | llm | hybrid (llm with code's certain findings binding)"
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


class TrackingParams(_Section):
    """MLflow: where runs are logged (docs/tracking.md)."""

    experiment: str = Field("agenteval", description="MLflow experiment of the runs.")
    uri: str | None = Field(None, description="null: sqlite:///<repository root>/mlflow.db")
    enabled: bool = Field(True, description="false: log nothing (agenteval track still can).")
    traces: bool = Field(True, description="Conversations as MLflow traces.")


class ControlsParams(_Section):
    """`agenteval controls` and the DVC `controls` stage: the judge measured on labels."""

    folder: str = Field("eval/judge_controls", description="Labelled controls (*.yaml).")
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


class QAJudgeParams(EndpointFields):
    """`qa.judge`: the A/B/C judge. The code pre-check always runs first; what it cannot
    settle goes to the model (`kind: llm`) or stays unavailable (`kind: precheck`)."""

    kind: Literal["precheck", "llm"] = Field("precheck", description="precheck | llm")
    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompt: str = Field("eval/prompts/judge_qa.md", description="The A/B/C instructions.")
    max_attempts: int = Field(2, ge=1, description="Model calls per answer incl. re-asks.")


class QAParams(_Section):
    """`suite.kind: qa`: questions with short ground-truth answers, k attempts each."""

    tasks: str = Field("eval/qa/tasks.jsonl", description="Task file (JSONL or GAIA metadata).")
    format: Literal["jsonl", "gaia"] = Field("jsonl", description="jsonl | gaia (metadata.jsonl)")
    levels: list[int] = Field(default_factory=list, description="Empty: all levels (1, 2, 3).")
    ids: list[str] = Field(default_factory=list, description="Empty: all tasks.")
    k: int = Field(1, ge=1, description="Attempts per task (pass@k, pass^k, avg@k).")
    attempt_strategy: Literal["independent"] = Field(
        "independent", description="independent: every attempt its own seed and cache key."
    )
    judge: QAJudgeParams = Field(default_factory=QAJudgeParams)


class RetrievalPipelineParams(_Section):
    """One retrieval pipeline the benchmark scores."""

    name: str = Field(min_length=1, description="Label in reports and the gate.")
    kind: Literal["bm25", "dense"] = Field(
        "bm25", description="bm25 (bm25s) | dense (an offline embedding model, `dense` extra)"
    )
    chunk_size: int = Field(400, gt=0, description="Characters per chunk.")
    model: str | None = Field(None, description="dense: embedding model (offline package).")
    dedup: bool = Field(True, description="Collapse chunks with identical text in a ranking.")


def _default_pipelines() -> list[RetrievalPipelineParams]:
    return [
        RetrievalPipelineParams(name="bm25", kind="bm25"),
        RetrievalPipelineParams(name="bm25-800", kind="bm25", chunk_size=800),
        RetrievalPipelineParams(name="dense", kind="dense", model="all-MiniLM-L6-v2"),
    ]


class RetrievalParams(_Section):
    """`suite.kind: retrieval`: labelled evidence quotes over pinned documents."""

    questions: str = Field("eval/retrieval/questions.yaml", description="Labelled questions.")
    library: list[str] = Field(
        default_factory=lambda: ["eval/corpus/documents", "data/corpora"],
        description="Folders indexed for every question.",
    )
    pipelines: list[RetrievalPipelineParams] = Field(
        default_factory=_default_pipelines, description="Pipelines scored side by side."
    )
    depth: int = Field(20, ge=1, description="Ranked chunks scored per question.")
    answers: bool = Field(True, description="Ask the target and classify every wrong answer.")
    hard_cases: bool = Field(True, description="Run the hard cases (replaced, copied, ...).")


class SessionsJudgeParams(EndpointFields):
    """`sessions.judge`: the model that grades replayed answers against the reference."""

    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompt: str = Field("eval/prompts/judge_session.md", description="The grading rubric.")
    max_attempts: int = Field(3, ge=1, description="Model calls per answer incl. re-asks.")
    structured_output: bool | None = Field(
        None, description="null/true: send the judgment's JSON Schema; false: prompt only."
    )


class SessionsControlsParams(_Section):
    """`sessions.controls`: planted answers with known grades, judged in every run."""

    file: str = Field("eval/sessions/controls.yaml", description="The shipped control cases.")
    split: Literal["dev", "held", "all"] = Field(
        "held", description="Which controls a run judges (tune the prompt on dev only)."
    )
    min_band_agreement: float = Field(
        0.75, ge=0, le=1, description="Share of planted answers graded inside their band."
    )
    min_order_agreement: float = Field(
        1.0, ge=0, le=1, description="Share of (better, worse) pairs graded in that order."
    )


class SessionsParams(_Section):
    """`agenteval sessions`: replay real Claude Code requests and grade against them."""

    transcripts: str | None = Field(
        None,
        description="Transcripts folder; null: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects.",
    )
    project: str | None = Field(None, description="Only this project folder (or repository).")
    since: str | None = Field(None, description="Only requests on or after this date (ISO).")
    limit: int | None = Field(10, ge=1, description="The most recent cases kept; null: all.")
    dataset: str | None = Field(
        None, description="A pinned dataset.json to replay instead of reading transcripts."
    )
    dataset_sha256: str | None = Field(
        None, pattern=r"^[0-9a-f]{64}$", description="The dataset's pin (sha256 of the file)."
    )
    out: str = Field(
        "runs/sessions-pipeline",
        description="The private folder (git- and DVC-ignored) the pipeline writes text to.",
    )
    pass_grade: int | None = Field(
        None, ge=0, le=5, description="Lowest passing grade; null: scoring.SESSION_PASS_GRADE."
    )
    log_text: bool = Field(
        False, description="Also log prompts and answers to MLflow (default: scores, ids, digests)."
    )
    judge: SessionsJudgeParams = Field(default_factory=SessionsJudgeParams)
    controls: SessionsControlsParams = Field(default_factory=SessionsControlsParams)


class TasksJudgeParams(EndpointFields):
    """`tasks.judge`: grades instructions, quality, reasoning and honesty (1-5) and decides
    question tasks; `none` leaves every grade unjudged (coding tasks are decided by code)."""

    kind: Literal["none", "llm"] = Field("none", description="none | llm")
    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompt: str = Field("eval/prompts/judge_tasks.md", description="The judge's instructions.")
    max_attempts: int = Field(2, ge=1, description="Model calls per attempt incl. re-asks.")


class ClaudeCodeParams(_Section):
    """`tasks.claude`: Claude Code as the harness (`claude -p --output-format stream-json`)."""

    command: str = Field("claude", description="The Claude Code executable.")
    extra_args: list[str] = Field(default_factory=list, description="Appended to the command.")
    home_files: list[str] = Field(
        default_factory=lambda: ["~/.claude/.credentials.json", "~/.claude.json"],
        description="Its login, put back read-only into the sandbox's empty home.",
    )


class TasksParams(_Section):
    """`suite.kind: tasks`: coding tasks graded by what the finished project does."""

    file: str = Field("eval/tasks/tasks.json", description="The task file.")
    suite: str = Field("core", description="core | adversarial | full (or any suite in file).")
    ids: list[str] = Field(default_factory=list, description="Only these tasks; []: all.")
    harness: Literal["scripted", "chat", "claude-code"] = Field(
        "scripted",
        description="scripted (reference solutions) | chat (target endpoint) | claude-code",
    )
    repeats: int = Field(1, ge=1, description="Runs of the suite (draws for the gate).")
    run_timeout_s: float = Field(1800, gt=0, description="Wall-clock cap per task, any harness.")
    command_timeout_s: float = Field(120, gt=0, description="Per shell command the agent runs.")
    check_timeout_s: float = Field(300, gt=0, description="Per check command (tests, probes).")
    max_steps: int = Field(40, ge=1, description="chat: tool calls per task.")
    concurrency: int = Field(1, ge=1, description="Tasks in flight (each in its own copy).")
    work_root: str | None = Field(None, description="Where copies live; null: the temp folder.")
    sandbox: Literal["bwrap", "none"] = Field(
        "bwrap",
        description="bwrap: the agent's commands and the checks see only the task's copy "
        "(refused where bwrap cannot run) | none: unconfined, recorded as such.",
    )
    sandbox_network: bool = Field(False, description="Network inside the sandbox.")
    sandbox_hide: list[str] = Field(
        default_factory=list, description="More folders hidden from the agent (other checkouts)."
    )
    sandbox_expose: list[str] = Field(
        default_factory=list, description="Folders put back read-only (a tool under the home)."
    )
    judge: TasksJudgeParams = Field(default_factory=TasksJudgeParams)
    claude: ClaudeCodeParams = Field(default_factory=ClaudeCodeParams)


class LoopbackScript(_Section):
    """`throughput.endpoints[].script`: what the scripted loopback endpoint promises."""

    ttft_ms: float = Field(25.0, gt=0, description="Time to the first token.")
    tokens_per_s: float = Field(250.0, gt=0, description="Pace of the tokens after it.")
    reply_words: int = Field(24, ge=1, description="Words after the label line.")
    fail_every: int = Field(0, ge=0, description="Every Nth request gets a 503; 0: none.")
    usage: bool = Field(True, description="Report usage (false: counts are the tokenizer's).")


class ThroughputEndpoint(EndpointFields):
    """One endpoint of the sweep: the scripted loopback, the local model, or a URL."""

    name: str = Field(min_length=1, description="Label in reports and the gate.")
    kind: Literal["loopback", "local", "url"] = Field(
        "loopback", description="loopback (scripted, offline) | local (serve-local) | url"
    )
    script: LoopbackScript | None = Field(None, description="loopback: the script.")

    @model_validator(mode="after")
    def _url_names_a_model(self) -> ThroughputEndpoint:
        if self.kind == "url" and not (self.model and self.base_url):
            raise ValueError(f"endpoint {self.name!r}: kind url needs model and base_url")
        return self


def _loopback_endpoints() -> list[ThroughputEndpoint]:
    return [
        ThroughputEndpoint(name="loopback-openai", kind="loopback", protocol="openai"),
        ThroughputEndpoint(name="loopback-anthropic", kind="loopback", protocol="anthropic"),
    ]


class ThroughputParams(_Section):
    """`suite.kind: throughput`: email triage streamed at a sweep of concurrency levels."""

    workload: str = Field("eval/throughput/emails.yaml", description="The pinned emails.")
    prompt: str = Field("eval/throughput/prompt.md", description="The triage instructions.")
    ids: list[str] = Field(default_factory=list, description="Empty: every email.")
    endpoints: list[ThroughputEndpoint] = Field(default_factory=_loopback_endpoints, min_length=1)
    concurrency: list[int] = Field(
        default_factory=lambda: [1, 4, 16, 64], min_length=1, description="Levels swept."
    )
    repeats: int = Field(2, ge=1, description="Repeats of each level (intervals need 2+).")
    warmup: int = Field(2, ge=0, description="Requests sent first and excluded.")
    max_tokens: int = Field(96, ge=1)
    temperature: float = Field(0.0, ge=0)
    timeout_s: float = Field(120.0, gt=0, description="Per request, the whole stream.")
    max_attempts: int = Field(3, ge=1, description="Tries per request (retries counted).")
    tokenizer: str = Field(
        "auto", description="auto (the local model's GGUF for kind local) | none | a .gguf"
    )

    @model_validator(mode="after")
    def _levels_and_names(self) -> ThroughputParams:
        if any(c < 1 for c in self.concurrency):
            raise ValueError(f"concurrency levels must be at least 1, got {self.concurrency}")
        names = [e.name for e in self.endpoints]
        if len(set(names)) != len(names):
            raise ValueError(f"endpoint names repeat: {names}")
        return self


class SWEBenchParams(_Section):
    enabled: bool = Field(False, description="Try SWE-bench Verified through `datasets`.")
    instances: list[str] = Field(default_factory=list, description="Empty: every instance.")


class CodeRetrievalParams(_Section):
    """`suite.kind: code_retrieval`: the code index over real fixes of pinned histories."""

    commits: str = Field(
        "eval/code_retrieval/commits.yaml", description="Pinned fix commits and the replay."
    )
    depth: int = Field(200, ge=10, description="Chunks ranked per query.")
    max_lines: int = Field(60, ge=5, description="Longest chunk, in lines.")
    max_bytes: int = Field(1_000_000, ge=1024, description="Larger files are not indexed.")
    incremental: bool = Field(True, description="Replay commits and compare with a fresh index.")
    robustness: bool = Field(True, description="Damaged saved indexes and hostile trees.")
    compare_queries: int = Field(
        10, ge=1, description="Queries whose rankings are compared in those checks."
    )
    swebench: SWEBenchParams = Field(default_factory=SWEBenchParams)


class MemoryAdapterParams(_Section):
    """`memory.adapter`: the memory under test, by `kind`; each kind checks its own keys
    (agenteval.memory.reference.DEFAULTS, agenteval.memory.mcp)."""

    model_config = ConfigDict(extra="allow")

    kind: str = Field("reference", description="reference (SQLite, offline) | mcp (a server)")


class MemoryModelParams(EndpointFields):
    """`memory.model`: the model that extracts, consolidates and answers in the full suite."""

    params: dict[str, Any] | None = Field(None, description="Request fields (max_tokens...).")
    prompts: str = Field(
        "eval/memory/prompts", description="Folder of extract.md, consolidate.md, answer.md."
    )


class MemoryParams(_Section):
    """`agenteval memory`: does memory keep up with a person over months of chats?"""

    suite: Literal["pr", "full"] = Field(
        "pr", description="pr: scripted model answers, offline; full: memory.model answers."
    )
    scenarios: str = Field("eval/memory/scenarios", description="Folder of scenario files.")
    ids: list[str] = Field(default_factory=list, description="Only these scenarios; empty: all.")
    baseline: str | None = Field(
        "eval/memory/baselines/pr.json", description="The gate's baseline (a real run's results)."
    )
    adapter: MemoryAdapterParams = Field(default_factory=MemoryAdapterParams)
    model: MemoryModelParams = Field(default_factory=MemoryModelParams)


class HoldoutParams(_Section):
    """`climb.holdout`: Thresholdout (Dwork et al. 2015) guarding the held split's reuse."""

    max_queries: int = Field(
        24, ge=1, description="Held queries the split allows, every one counted; then spent."
    )
    budget: int = Field(
        6,
        ge=1,
        description="Thresholdout's budget B: answers drawn from held (train and held "
        "disagreed); then spent.",
    )
    threshold: float = Field(
        0.1, gt=0, le=1, description="Thresholdout's T: train-held gap taken as sampling noise."
    )
    noise: float = Field(
        0.01, ge=0, le=1, description="Thresholdout's sigma: Laplace scale of its noise."
    )
    seed: int = Field(0, description="Seeds the mechanism's noise (a session replays).")
    # No ledger path: the ledger is eval/climb/holdout_ledger.jsonl, keyed by the held
    # split's content (agenteval.climb.ledger); these limits are fixed when a split opens.


class GuardParams(_Section):
    """`climb.guard`: how near a scenario question an edit's sentence may come."""

    similarity: float = Field(
        0.6,
        gt=0,
        le=1,
        description="Share of a scenario question's BM25 weight one sentence of an edit may "
        "carry before it is refused as that question asked again (tuned on the dev split of "
        "eval/climb/guard_controls.yaml: agenteval climb guard-check).",
    )


class ProposerEndpoint(EndpointFields):
    """`climb.llm`: the endpoint of the llm proposer (sees train failures only)."""

    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompt: str = Field(
        "eval/prompts/climb_proposer.md", description="The proposer's instructions."
    )
    max_attempts: int = Field(2, ge=1, description="Model calls per round incl. re-asks.")


class ClimbParams(_Section):
    """`agenteval climb`: hillclimb sessions with a train / held / test split."""

    proposer: Literal["search", "llm"] = Field(
        "search", description="search (optuna over the agent's numeric knobs) | llm"
    )
    rounds: int = Field(12, ge=1, description="Most edits proposed in one session.")
    patience: int = Field(2, ge=1, description="Stop after this many flat rounds in a row.")
    iterations: int = Field(3, ge=3, description="Repeats per scenario in every evaluation.")
    conf: float = Field(0.95, gt=0.5, lt=1, description="One-sided confidence of the bounds.")
    margin: float = Field(
        0.05, ge=0, le=1, description="Held non-inferiority margin on the per-scenario pass share."
    )
    text_gain: float = Field(
        0.0,
        ge=0,
        le=1,
        description="A free-text edit is kept only when its held bound exceeds this (held "
        "improves beyond noise); a knob edit when it exceeds -margin (non-inferior).",
    )
    holdout: HoldoutParams = Field(default_factory=HoldoutParams)
    guard: GuardParams = Field(default_factory=GuardParams)
    repro: bool = Field(
        True, description="Run `dvc repro` and commit its outputs with every kept round."
    )
    branch: str | None = Field(None, description="Scratch branch; null: climb/<time>.")
    seed: int = Field(0, description="Seeds the search proposer's sampler.")
    search_trials: int = Field(
        12, ge=1, description="search: new single-knob moves tried on train per round."
    )
    llm: ProposerEndpoint = Field(default_factory=ProposerEndpoint)


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
    qa: QAParams = Field(default_factory=QAParams)
    retrieval: RetrievalParams = Field(default_factory=RetrievalParams)
    tasks: TasksParams = Field(default_factory=TasksParams)
    throughput: ThroughputParams = Field(default_factory=ThroughputParams)
    code_retrieval: CodeRetrievalParams = Field(default_factory=CodeRetrievalParams)
    climb: ClimbParams = Field(default_factory=ClimbParams)
    sessions: SessionsParams = Field(default_factory=SessionsParams)
    memory: MemoryParams = Field(default_factory=MemoryParams)
