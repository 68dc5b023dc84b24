"""Which lane of eval/tiers.yaml a CI trigger runs, and why: `agenteval ci-plan`.

The rules (one home; the workflow `agenteval init-ci` writes only calls them):

* a pull request runs `smoke` when it touches the agent (its folder, params.yaml or a path
  named with --agent-path), otherwise nothing beyond the structural checks;
* a manual dispatch runs the tier it asks for (`smoke` by default);
* a final release tag (v1.4.0) runs `verify`: nothing re-runs; `agenteval ci-verify` checks
  that a full sweep measured its commit or one of its release candidates' (whatever its
  message says: [skip eval] cannot skip the check);
* a pre-release tag (v1.4.0-rc2) runs `smoke`; an annotated one whose message says
  `[full eval]` runs `full`, and `[skip eval]` runs nothing. A lightweight tag has no message
  of its own, so it runs its default lane;
* the weekly schedule runs `backlog`; any other push runs nothing.

The decision is a pure function of what the trigger says (`decide`); reading the tag's message
and the files a pull request changes is git's (`tag_message`, `changed_files`).
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agenteval.schema.tiers import TIERS

SKIP = "skip"
VERIFY = "verify"  # a final tag: no lane re-runs; the measured sweep is checked (ci.verify)
LANES = (*TIERS, VERIFY, SKIP)
SKIP_MARKER = "[skip eval]"
FULL_MARKER = "[full eval]"
# v1.2.3 is a release; anything after the version (v1.2.3-rc1, v1.2.3.dev0, v1.2.3b1) is not.
RELEASE = re.compile(r"^v?\d+(\.\d+)*$")
EVENTS = ("pull_request", "push", "workflow_dispatch", "schedule")


@dataclass(frozen=True)
class Plan:
    lane: str  # smoke | full | backlog | verify | skip
    reason: str

    def outputs(self) -> str:
        """The plan as GITHUB_OUTPUT lines (`lane=...`, `reason=...`)."""
        return f"lane={self.lane}\nreason={self.reason}\n"


@dataclass(frozen=True)
class Trigger:
    event: str
    ref: str = ""
    tier: str | None = None  # a dispatch's input
    tag_message: str | None = None  # None: a lightweight tag (or no tag)
    changed: tuple[str, ...] = ()  # a pull request's changed files
    agent_paths: tuple[str, ...] = ()


def decide(trigger: Trigger) -> Plan:
    """The lane for one trigger; see the module docstring for every rule."""
    if trigger.event not in EVENTS:
        raise ValueError(f"--event: {trigger.event!r} is not one of {', '.join(EVENTS)}")
    if trigger.event == "workflow_dispatch":
        tier = trigger.tier or "smoke"
        if tier not in TIERS:
            raise ValueError(f"--tier: {tier!r} is not one of {', '.join(TIERS)}")
        return Plan(tier, f"dispatch asked for the {tier} tier")
    if trigger.event == "schedule":
        return Plan("backlog", "the weekly schedule runs the backlog lane")
    if trigger.event == "pull_request":
        return _pull_request(trigger)
    if trigger.ref.startswith("refs/tags/"):
        return _tag(trigger.ref.removeprefix("refs/tags/"), trigger.tag_message)
    return Plan(SKIP, f"a push to {trigger.ref or 'a branch'} runs no evaluation lane")


def _pull_request(trigger: Trigger) -> Plan:
    touched = [p for p in trigger.changed if touches(p, trigger.agent_paths)]
    if not touched:
        return Plan(SKIP, "the pull request does not touch the agent: structural checks only")
    more = f" and {len(touched) - 3} more" if len(touched) > 3 else ""
    return Plan("smoke", f"the pull request touches the agent: {', '.join(touched[:3])}{more}")


def _tag(name: str, message: str | None) -> Plan:
    if RELEASE.match(name):
        said = (message or "").lower()
        ignored = " (a release ignores [skip eval])" if SKIP_MARKER in said else ""
        return Plan(VERIFY, f"release tag {name} re-runs nothing: a full sweep must have "
                    f"measured its commit or one of its release candidates{ignored}")  # fmt: skip
    if message is None:
        return Plan("smoke", f"pre-release tag {name} (lightweight: no message to read)")
    lowered = message.lower()
    if SKIP_MARKER in lowered:
        return Plan(SKIP, f"pre-release tag {name}: its message says {SKIP_MARKER}")
    if FULL_MARKER in lowered:
        return Plan("full", f"pre-release tag {name}: its message says {FULL_MARKER}")
    return Plan("smoke", f"pre-release tag {name}")


def touches(path: str, agent_paths: Sequence[str]) -> bool:
    """`path` is one of the agent's: under a listed folder (`eval/agents/default/`), the
    listed file itself, or a match of a listed glob (`src/*.py`)."""
    for pattern in agent_paths:
        folder = pattern.rstrip("/")
        if path == folder or path.startswith(folder + "/") or fnmatch.fnmatch(path, pattern):
            return True
    return False


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, timeout=60, check=False
    )


def tag_message(root: Path, name: str) -> str | None:
    """The message of annotated tag `name`, or None for a lightweight tag. A tag git does
    not know is an error: in CI, fetch it with its annotation first."""
    kind = _git(root, "cat-file", "-t", f"refs/tags/{name}")
    if kind.returncode != 0:
        raise ValueError(
            f"--ref refs/tags/{name}: git knows no such tag here (fetch it first: "
            f"git fetch --force origin refs/tags/{name}:refs/tags/{name})"
        )
    if kind.stdout.strip() != "tag":
        return None
    body = _git(root, "for-each-ref", f"refs/tags/{name}", "--format=%(contents)")
    return body.stdout


def changed_files(root: Path, base: str) -> tuple[str, ...]:
    """Files HEAD changes since its merge base with `base` (a pull request's changes)."""
    done = _git(root, "diff", "--name-only", f"{base}...HEAD")
    if done.returncode != 0:
        raise ValueError(f"--base {base}: {done.stderr.strip() or 'git diff failed'}")
    return tuple(line for line in done.stdout.splitlines() if line)
