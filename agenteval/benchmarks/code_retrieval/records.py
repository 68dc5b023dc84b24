"""The code retrieval benchmark's pinned fix commits (eval/code_retrieval/commits.yaml).

Each entry names a commit of a repository's history whose message describes a fix; the
message is the query, and what the commit changed at its parent is the relevance. The
commit id pins it: a history that lacks it is refused, never silently replaced.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FixCommit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    commit: str = Field(pattern=r"^[0-9a-f]{40}$", description="The fix commit (full id).")
    why: str = Field(min_length=1, description="Why its message describes a fix.")


class PinnedRepository(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
    path: str = Field(".", description="The git repository, relative to the project root.")
    extensions: list[str] = Field(default_factory=lambda: [".py"])
    exclude: list[str] = Field(
        default_factory=lambda: ["tests/"], description="Path prefixes neither indexed nor scored."
    )
    fixes: list[FixCommit] = Field(min_length=1)
    replay: list[str] = Field(
        default_factory=list,
        description="Commits replayed, oldest first, for the incremental re-index check.",
    )


class PinnedCommits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    repositories: list[PinnedRepository] = Field(min_length=1)
