"""Coding-task files: `eval/tasks/tasks.json`, its tasks, their checks and reference solutions.

A coding task is decided by what the finished project does: every check of its `expect`
block must hold. A question task is decided on its `must_establish` points (code reads each
point's facts; a judge, when configured, the points code cannot settle) and may not carry an
`expect` block. Every task carries a reference solution (the scripted
harness replays it) and every question plausible wrong answers (the judge must fail them).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SCHEMA = "agenteval.tasks/1"
SUITES = ("core", "adversarial", "full")
TOOL_NAMES = ("read_file", "write_file", "edit_file", "list_files", "search", "run")
TaskKind = Literal["coding", "question"]
ToolName = Literal["read_file", "write_file", "edit_file", "list_files", "search", "run"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TestsPass(_Strict):
    """The project's own suite, run with `python -m pytest` in the finished copy."""

    __test__ = False  # not a pytest test class, whatever its name says

    args: list[str] = Field(default_factory=list, description="Extra pytest arguments.")
    clean: list[str] = Field(
        default_factory=list,
        description="Paths removed before the run, so it starts cold (caches the agent warmed).",
    )
    editable: list[str] = Field(
        default_factory=list,
        description="Test files the agent is asked to change; every other test file and test "
        "configuration comes from the snapshot (a change is tests_tampered).",
    )


class Probe(_Strict):
    """A command run inside the finished project whose output must match."""

    command: str = Field(min_length=1, description="Run with bash -c in the project folder.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra variables.")
    stdout: str | None = Field(None, description="Exact output (trailing whitespace ignored).")
    contains: list[str] = Field(default_factory=list, description="Substrings that must appear.")
    matches: str | None = Field(None, description="A regular expression (multiline) to find.")
    exit_code: int | None = Field(0, description="Required exit status; null: any.")

    @model_validator(mode="after")
    def _says_what_to_match(self) -> Probe:
        if self.stdout is None and not self.contains and self.matches is None:
            raise ValueError("a probe needs stdout, contains or matches")
        return self


class Mutant(_Strict):
    """A broken version of one file: a text replacement, or the file as the snapshot had it."""

    path: str = Field(min_length=1)
    replace: str | None = Field(None, description="Text that must occur in the file.")
    with_: str | None = Field(None, alias="with", description="What replaces it.")
    snapshot: bool = Field(False, description="Put back the snapshot's version of the file.")

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @model_validator(mode="after")
    def _one_kind(self) -> Mutant:
        textual = self.replace is not None and self.with_ is not None
        if textual == self.snapshot:
            raise ValueError("a mutant is either replace + with, or snapshot: true")
        return self


class KillsMutants(_Strict):
    """The agent's tests must fail on every mutant (written tests that test something)."""

    tests: list[str] = Field(
        default_factory=list, description="pytest arguments selecting the tests; []: all."
    )
    mutants: list[Mutant] = Field(min_length=1)


class Expect(_Strict):
    tests_pass: TestsPass | None = None
    probe: list[Probe] = Field(default_factory=list)
    unchanged: list[str] = Field(
        default_factory=list, description="Files byte-identical to the snapshot (present)."
    )
    kills_mutants: KillsMutants | None = None
    hidden: list[Literal["durations", "config", "linecount", "weekly", "textstats"]] = Field(
        default_factory=list,
        description="Probes the evaluator makes at grading time from a seed, with inputs "
        "neither the prompt nor the copy shows (agenteval.benchmarks.tasks.hidden).",
    )
    labels: dict[int, list[str]] = Field(
        default_factory=dict,
        description="Issue number -> the labels it must carry at the end, exactly (the "
        "fixture's plus those the agent added through the offline gh); no other issue may "
        "gain a label.",
    )

    @model_validator(mode="after")
    def _checks_something(self) -> Expect:
        checks = [self.tests_pass, self.probe, self.unchanged, self.kills_mutants, self.labels]
        if not any(checks):
            raise ValueError("an expect block needs at least one check")
        return self


class Step(_Strict):
    """One tool call of a reference solution, exactly as an agent would make it."""

    tool: ToolName
    args: dict[str, Any] = Field(default_factory=dict)


class Reference(_Strict):
    steps: list[Step] = Field(default_factory=list)
    answer: str = Field(min_length=1, description="The final answer the solution gives.")


class Fact(_Strict):
    """What one sentence of a question's answer must assert for code to find a point there.

    Every entry of `says` must occur in that sentence, asserted (not negated, hedged or
    quoted); an entry that is a list is any one of its spellings. A rival offered in the
    clause of one of them (a list of every label, "a bug or a feature request") takes the
    commitment back. Read by agenteval.benchmarks.tasks.points."""

    says: list[str | list[str]] = Field(min_length=1)
    rivals: list[str] = Field(
        default_factory=list, description="Terms that, beside an entry, make it one candidate."
    )


class Point(_Strict):
    """One `must_establish` point: the text the judge reads and the facts code checks."""

    point: str = Field(min_length=1)
    facts: list[Fact] = Field(
        default_factory=list,
        description="Each must be asserted; none: code cannot read the point (the judge does).",
    )


class Task(_Strict):
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9\-]*$")
    kind: TaskKind
    title: str = Field(min_length=1)
    prompt: str = Field(min_length=1, description="Exactly what the agent is asked.")
    setup: str | None = Field(None, description="A named setup (agenteval.benchmarks.tasks).")
    expect: Expect | None = None
    must_establish: list[Point] = Field(
        default_factory=list,
        description="Question tasks: points the answer must establish (a plain string is a "
        "point only a judge can read).",
    )
    reference: Reference
    wrong_answers: list[str] = Field(
        default_factory=list, description="Question tasks: plausible answers that must fail."
    )

    @field_validator("must_establish", mode="before")
    @classmethod
    def _plain_points(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"point": v} if isinstance(v, str) else v for v in value]
        return value

    @property
    def points(self) -> list[str]:
        """The `must_establish` points as the judge reads them."""
        return [p.point for p in self.must_establish]

    @model_validator(mode="after")
    def _kind_rules(self) -> Task:
        if self.kind == "question":
            if self.expect is not None:
                raise ValueError("a question task is decided by the judge: remove its expect")
            if not self.must_establish:
                raise ValueError("a question task needs must_establish points")
            if not self.wrong_answers:
                raise ValueError("a question task needs plausible wrong_answers")
        else:
            if self.expect is None:
                raise ValueError("a coding task needs an expect block")
            if self.must_establish or self.wrong_answers:
                raise ValueError("must_establish and wrong_answers belong to question tasks")
        return self


class TaskFile(_Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["agenteval.tasks/1"] = Field("agenteval.tasks/1", alias="schema")
    toybox: str = Field("eval/tasks/toybox", description="The project every task copies.")
    github: str | None = Field(
        None,
        description="The offline gh's fixture (issues and pull requests, JSON) served to every "
        "task's agent; None: no gh on PATH.",
    )
    suites: dict[str, list[str]] = Field(description="Suite name -> task ids, in run order.")
    tasks: list[Task] = Field(min_length=1)
