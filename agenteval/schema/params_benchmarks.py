"""params.yaml sections of the benchmarks beyond scenarios (`suite.kind` other than
`scenarios`): sessions and tasks. A benchmark moved behind the protocol
(agenteval.benchmarks.base) keeps its section in its own folder (`settings.py`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agenteval.schema.params_base import EndpointFields, _Section


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
    max_line_bytes: int = Field(
        1_000_000, ge=1, description="A transcript line longer than this drops its case."
    )
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
    suite: str = Field(
        "core", description="core | adversarial | full | everyday (or any suite in file)."
    )
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
    agent_env: list[str] = Field(
        default_factory=list,
        description="Variables passed to the agent besides PATH, HOME, LANG, LC_ALL, LC_CTYPE, "
        "TERM, TMPDIR and TZ (an allow-list; a secret-looking name or value is still dropped).",
    )
    gateway_url: str | None = Field(
        None,
        description="A model gateway already running (agenteval tasks gateway); null: a chat "
        "or claude-code run whose target.base_url names an upstream starts its own.",
    )
    therock_url: str | None = Field(
        None,
        description="Where the therock suite clones TheRock from (e.g. "
        "https://github.com/ROCm/TheRock); null: the suite is refused, naming this key.",
    )
    judge: TasksJudgeParams = Field(default_factory=TasksJudgeParams)
    claude: ClaudeCodeParams = Field(default_factory=ClaudeCodeParams)
