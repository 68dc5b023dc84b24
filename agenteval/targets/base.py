"""What every agent under test looks like to the engine, and the registry keyed by `kind`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agenteval.fileio import sha256_file
from agenteval.registry import build
from agenteval.schema.params import TargetParams
from agenteval.schema.scenario import IndexDocument, Scenario
from agenteval.schema.transcript import Participant, ToolCall, Usage


class SetupFailed(Exception):
    """The scenario could not be prepared; `status` says which unmeasured status applies."""

    def __init__(self, status: str, message: str, calls: list[ToolCall] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.calls = calls or []


@dataclass
class AgentReply:
    response: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None
    # The models that produced this reply as the backend reported them (each once, in
    # order; None for a model call whose reply named none). None: the target cannot say.
    models: list[str | None] | None = None


def distinct(names: list[str | None]) -> list[str | None]:
    """Each name once, in the order first seen."""
    return list(dict.fromkeys(names))


@dataclass(frozen=True)
class SessionContext:
    """What a session may know about the run: never the grades or the ground truth."""

    root: Path
    seed: int
    iteration: int


class AgentSession(Protocol):
    async def setup(self, documents: list[IndexDocument]) -> list[ToolCall]: ...

    async def send(self, message: str) -> AgentReply: ...

    async def close(self) -> None: ...


class Target(Protocol):
    participant: Participant

    async def open_session(self, scenario: Scenario, ctx: SessionContext) -> AgentSession: ...


# Retrieval knobs the builtin agent and the chat harness share (`target.params`).
DEFAULT_KNOBS = {"chunk_size": 400, "top_k": 4, "abstain_threshold": 0.3, "temperature": 0.0}


def agent_files_digest(folder: Path, names: tuple[str, ...]) -> dict[str, str | None]:
    """sha256 of the agent-config files a target reads (None when absent): exactly these, so
    editing a file another kind of target reads leaves this one's identity alone."""
    return {
        name: sha256_file(folder / name) if (folder / name).is_file() else None for name in names
    }


# The files each kind of target reads from its `target.agent` folder (one home: the targets
# digest exactly these, and a run refuses before any work when one is missing).
AGENT_FILES_BY_KIND = {"builtin": ("replies.yaml",), "chat": ("system_prompt.md", "tools.yaml")}
DEFAULT_AGENT = str(TargetParams.model_fields["agent"].default)


class AgentFilesMissing(ValueError):
    """A file the target reads from `target.agent` is not there (named, with the fix)."""


def check_agent_files(params: dict[str, Any], root: Path) -> Path:
    """The target's agent folder, or AgentFilesMissing naming `target.agent` and the file:
    the setting is relative to the working directory, so another project's scenario folder
    run from that project's root finds no eval/agents/ there."""
    section = params.get("target") or {}
    kind = str(section.get("kind") or "builtin")
    setting = str(section.get("agent") or DEFAULT_AGENT)
    folder = root / setting
    for name in AGENT_FILES_BY_KIND.get(kind, ()):
        if not (folder / name).is_file():
            needs = ", ".join(AGENT_FILES_BY_KIND[kind])
            raise AgentFilesMissing(
                f"target.agent: {folder / name} is missing (the {kind} agent reads {needs} "
                f"from target.agent, here {setting!r} under {root}): set target.agent to a "
                "folder holding them, e.g. the agenteval checkout's eval/agents/default"
            )
    return folder


# kind -> "module:factory"; adding a target is adding a module and a line here.
REGISTRY = {
    "builtin": "agenteval.targets.builtin:BuiltinTarget",
    "chat": "agenteval.targets.chat:ChatTarget",
    "mcp": "agenteval.targets.mcp:MCPTarget",
    "claude-code": "agenteval.targets.claude_code:ClaudeCodeTarget",
}


def make_target(params: dict[str, Any], root: Path) -> Target:
    target: Target = build(REGISTRY, "target", params, root)
    return target
