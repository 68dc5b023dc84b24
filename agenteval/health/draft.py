"""A scenario draft from a captured conversation, scrubbed, under eval/scenarios/drafts/.

Each user message becomes a turn: the message, scrubbed, is kept as `user_message` and its
first sentence becomes the `objective`; the tools the agent called before the next user
message become that turn's `expected_tools` candidates. `source: session` and
`captured_from` ({session_id, title, captured_at}) say where it came from; `ground_truth`,
`success_criteria` and `difficulty_rationale` are left empty for a person (which is why no
lane runs a draft: see agenteval.suite.validate.DRAFTS). What the agent replied is kept as
comments at the top, for that person to judge from.

Nothing is written when the finished text still holds a secret, a personal detail, an
absolute path or a user name (:meth:`agenteval.health.redact.DraftScrubber.leaks`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from agenteval.fileio import write_text
from agenteval.health.capture import Captured, text_of
from agenteval.health.redact import DraftScrubber
from agenteval.schema.scenario import Scenario

DRAFTS_DIR = Path("eval/scenarios/drafts")
OBJECTIVE_CHARS = 100
REPLY_CHARS = 200
ID_WORDS = 5


class DraftError(Exception):
    """The draft cannot be written (it would leak, or it exists already)."""


@dataclass
class CapturedTurn:
    user: str
    tools: list[str]
    replies: list[str]


def _tool_names(message: dict[str, Any]) -> list[str]:
    names = []
    for call in message.get("tool_calls") or []:
        if isinstance(call, dict):
            nested = call.get("function")
            function: dict[str, Any] = nested if isinstance(nested, dict) else call
            if isinstance(function.get("name"), str):
                names.append(function["name"])
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and isinstance(legacy.get("name"), str):
        names.append(legacy["name"])
    return names


def turns_of(messages: list[dict[str, Any]]) -> list[CapturedTurn]:
    """One turn per non-empty user message; assistant output before the first is dropped."""
    turns: list[CapturedTurn] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = text_of(message.get("content")).strip()
            if text:
                turns.append(CapturedTurn(text, [], []))
        elif role == "assistant" and turns:
            for name in _tool_names(message):
                if name not in turns[-1].tools:
                    turns[-1].tools.append(name)
            reply = text_of(message.get("content")).strip()
            if reply:
                turns[-1].replies.append(reply)
    return turns


# Words that say nothing about the task, left out of generated ids.
STOP_WORDS = frozenset(
    "a an and are at be can could do does for from hi hello i in is it me my of on or please "
    "the this to what when which who why with would you your".split()
)


def objective_of(message: str) -> str:
    """The message's first question, else its last sentence (requests tend to follow the
    greeting), cut at a word near OBJECTIVE_CHARS."""
    sentences = [s.strip() for s in re.split(r"(?<=[.?!])\s+|\n+", message.strip()) if s.strip()]
    questions = [s for s in sentences if s.endswith("?")]
    chosen = questions[0] if questions else (sentences[-1] if sentences else message.strip())
    if len(chosen) <= OBJECTIVE_CHARS:
        return chosen
    return chosen[:OBJECTIVE_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def draft_id(objective: str, taken: set[str]) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", objective.lower()) if w not in STOP_WORDS]
    words = words[:ID_WORDS]
    base = "_".join(["session", *words]) if words else "session_draft"
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}_{n}", n + 1
    return candidate


def build_draft(
    captured: Captured,
    scrubber: DraftScrubber,
    *,
    taken_ids: set[str],
    category: str = "real_world",
    persona: str = "casual_user",
    scenario_id: str | None = None,
) -> tuple[dict[str, Any], list[CapturedTurn]]:
    """The draft scenario as a mapping (already scrubbed) and the scrubbed turns it came from."""
    texts = [text_of(m.get("content")) for m in captured.messages]
    texts += [json.dumps(m.get("tool_calls") or []) for m in captured.messages]
    scrubber.learn([*texts, captured.session_id, captured.title or "", *captured.setup_paths])
    turns = [
        CapturedTurn(scrubber.text(t.user), t.tools, [scrubber.text(r) for r in t.replies])
        for t in turns_of(captured.messages)
    ]
    if not turns:
        raise DraftError("the conversation has no user message to turn into a scenario")
    sid = scenario_id or draft_id(objective_of(turns[0].user), taken_ids)
    title = scrubber.text(captured.title) if captured.title else objective_of(turns[0].user)
    scenario: dict[str, Any] = {
        "id": sid,
        "name": title,
        "category": category,
        "description": f"Drafted from a real session of {len(turns)} user turn(s); review "
        "every field before promoting it.",
        "persona": persona,
        "source": "session",
        "captured_from": {
            "session_id": scrubber.text(captured.session_id),
            "title": title,
            "captured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
        "difficulty_rationale": None,
        "setup": {"index_documents": [{"path": scrubber.text(p)} for p in captured.setup_paths]},
        "turns": [
            {
                "turn": i,
                "objective": objective_of(t.user),
                "user_message": t.user,
                "expected_tools": list(t.tools),
                "ground_truth": None,
                "success_criteria": None,
            }
            for i, t in enumerate(turns, start=1)
        ],
    }
    Scenario.model_validate(scenario)  # a draft always parses; only its gaps are left open
    return scenario, turns


def _comment(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= REPLY_CHARS else line[:REPLY_CHARS].rsplit(" ", 1)[0] + " …"


def render_draft(scenario: dict[str, Any], turns: list[CapturedTurn]) -> str:
    head = [
        "# DRAFT captured from a real session: no lane runs it until it is promoted.",
        "# Before `agenteval promote`: give every turn a ground_truth (or success_criteria),",
        "# write difficulty_rationale (why this case is hard), keep only the expected_tools",
        "# the task needs, and check that the scrubbing kept nothing personal.",
        "# What the agent replied (scrubbed):",
    ]
    for i, turn in enumerate(turns, start=1):
        said = _comment(turn.replies[-1]) if turn.replies else "(no reply)"
        head.append(f"#   turn {i}: {said}")
    body = yaml.safe_dump(scenario, sort_keys=False, allow_unicode=True, width=100)
    return "\n".join(head) + "\n" + body


def write_draft(text: str, scrubber: DraftScrubber, path: Path, *, overwrite: bool = False) -> Path:
    leaks = scrubber.leaks(text)
    if leaks:
        raise DraftError(
            f"draft not written: after scrubbing it still holds {', '.join(leaks)}; "
            "the source was left untouched"
        )
    if path.exists() and not overwrite:
        raise DraftError(f"{path} exists (pass --force to replace it)")
    write_text(path, text)
    return path
