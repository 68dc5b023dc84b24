"""The `therock` suite's file, `eval/tasks/therock.json`: real merged fixes in TheRock (AMD's
ROCm build system), each pinned by two commits and nothing else of the repository.

A task names the fix commit (the squash-merged pull request) and its parent, the base the
agent starts from; the prompt is the project's own wording of the problem, never the fix.
`files` are the files the upstream fix changes (the judge's scope, and the diff must touch one
of them), `tests` the upstream test files the fix added or changed. `no_internet` tasks say in
their prompt not to use the internet; web use is then read from the tool record.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

SHA = r"^[0-9a-f]{40}$"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TheRockTask(_Strict):
    id: str = Field(pattern=r"^therock-[a-z0-9][a-z0-9\-]*$")
    title: str = Field(min_length=1)
    pr: int = Field(gt=0, description="The upstream pull request the fix merged as.")
    fix_commit: str = Field(pattern=SHA, description="The merged fix (never fetched for agents).")
    base_commit: str = Field(pattern=SHA, description="The fix's parent: where the agent starts.")
    prompt: str = Field(min_length=1, description="The problem, as the agent is told it.")
    no_internet: bool = Field(False, description="The prompt forbids the internet.")
    files: list[str] = Field(min_length=1, description="Files the upstream fix changes.")
    tests: list[str] = Field(default_factory=list, description="Test files the fix changes.")


class TheRockFile(_Strict):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    schema_: Literal["agenteval.therock/1"] = Field("agenteval.therock/1", alias="schema")
    repository: str = Field(description="owner/name of the upstream repository.")
    tasks: list[TheRockTask] = Field(min_length=1)
