"""Read a real conversation from where it was recorded, as OpenAI-style chat messages.

Three sources, one shape (``{"role": ..., "content": ..., "tool_calls": [...]}``):

* a chat log (JSON Lines): one message per line, or lines holding a whole request
  (``{"messages": [...]}``; the longest conversation is taken);
* an agenteval transcript (``data/transcripts/<id>/<iteration>.json``) — its setup calls
  also name the documents indexed before the first turn;
* an MLflow trace id: the trace's whole session (:mod:`agenteval.tracking.sessions`).

Unreadable input is a :class:`CaptureError` carrying ``path:line`` problems.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agenteval.schema.input_error import InputError
from agenteval.schema.problems import Problem
from agenteval.schema.transcript import Transcript

ROLES = ("system", "developer", "user", "assistant", "tool", "function")


class CaptureError(InputError):
    """Problems that keep a session from being captured."""


@dataclass
class Captured:
    session_id: str
    title: str | None
    started_at: str | None  # ISO 8601 when the source says when it happened
    messages: list[dict[str, Any]]
    setup_paths: list[str] = field(default_factory=list)


def text_of(content: Any) -> str:
    """A message's text: a string, or the text parts of a content list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p.get("text") for p in content if isinstance(p, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def _message(value: Any, path: str, line: int) -> dict[str, Any]:
    if not isinstance(value, dict) or value.get("role") not in ROLES:
        got = value.get("role") if isinstance(value, dict) else type(value).__name__
        raise CaptureError([Problem(path, line, f"not a chat message (role {got!r})")])
    return value


def from_chat_log(path: Path) -> Captured:
    """Messages of a JSON Lines chat log; every malformed line is named."""
    try:
        lines = path.read_text(encoding="utf-8-sig").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaptureError([Problem(str(path), 1, f"cannot read chat log: {exc}")]) from None
    messages: list[dict[str, Any]] = []
    conversations: list[list[dict[str, Any]]] = []
    problems: list[Problem] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
            if isinstance(value, dict) and isinstance(value.get("messages"), list):
                conversations.append([_message(m, str(path), number) for m in value["messages"]])
            else:
                messages.append(_message(value, str(path), number))
        except json.JSONDecodeError as exc:
            problems.append(Problem(str(path), number, f"not JSON: {exc.msg}"))
        except CaptureError as exc:
            problems.extend(exc.problems)
    if problems:
        raise CaptureError(problems)
    if conversations:
        messages = max(conversations, key=len) + messages
    if not any(m.get("role") == "user" for m in messages):
        raise CaptureError([Problem(str(path), 1, "no user message in this chat log")])
    return Captured(path.stem, None, None, messages)


def _transcript_messages(transcript: Transcript) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in transcript.turns:
        messages.append({"role": "user", "content": turn.user_message})
        if turn.tool_calls:
            calls = [
                {
                    "id": f"call_{turn.turn}_{i}",
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                }
                for i, c in enumerate(turn.tool_calls)
            ]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages.append({"role": "assistant", "content": turn.response})
    return messages


def from_transcript(path: Path) -> Captured:
    try:
        transcript = Transcript.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        detail = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise CaptureError([Problem(str(path), 1, f"not a transcript: {detail}")]) from None
    if not transcript.turns:
        raise CaptureError([Problem(str(path), 1, "the transcript has no turns")])
    setup = [
        str(call.arguments["path"])
        for call in transcript.setup_calls
        if call.name == "index_document" and isinstance(call.arguments.get("path"), str)
    ]
    return Captured(
        f"{transcript.scenario_id}/{transcript.iteration}",
        transcript.scenario_id,
        transcript.started_at,
        _transcript_messages(transcript),
        setup,
    )


def from_mlflow_trace(trace_id: str, uri: str) -> Captured:
    from agenteval.tracking.sessions import read_session
    from agenteval.tracking.store import TrackingError

    try:
        session = read_session(trace_id, uri)
    except TrackingError as exc:
        raise CaptureError([Problem(f"mlflow:{trace_id}", 1, str(exc))]) from None
    if not any(m.get("role") == "user" for m in session.messages):
        raise CaptureError([Problem(f"mlflow:{trace_id}", 1, "no user message in the trace")])
    started = (
        datetime.fromtimestamp(session.started_ms / 1000, UTC).isoformat(timespec="seconds")
        if session.started_ms
        else None
    )
    return Captured(session.session_id, session.title, started, session.messages)


ISSUE_JSON = "number,title,body,author,createdAt,comments"


def from_issue_json(path: Path) -> Captured:
    """An issue as `gh issue view N --json number,title,body,author,createdAt,comments`
    prints it (or the GitHub API's issue with its comments): see `issue_messages`."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaptureError([Problem(str(path), 1, f"not an issue JSON file: {exc}")]) from None
    return issue_messages(data, str(path))


def from_issue(number: int, gh: str = "gh", repo: str | None = None) -> Captured:
    """Issue `number` read through `gh` (the offline stub of the tasks, or GitHub's own CLI
    against the API when online): nothing is requested that the user did not name."""
    import subprocess

    argv = [gh, "issue", "view", str(number), "--json", ISSUE_JSON]
    argv += ["--repo", repo] if repo else []
    shown = f"gh issue view {number}"
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        raise CaptureError([Problem(shown, 1, f"cannot run {gh}: {exc}")]) from None
    if done.returncode != 0:
        why = done.stderr.strip() or f"exit {done.returncode}"
        raise CaptureError([Problem(shown, 1, why)])
    try:
        return issue_messages(json.loads(done.stdout), shown)
    except json.JSONDecodeError as exc:
        raise CaptureError([Problem(shown, 1, f"not JSON: {exc.msg}")]) from None


def issue_messages(data: Any, where: str) -> Captured:
    """The issue's body and its author's later comments are the user's messages; everyone
    else's comments are the replies a reviewer judges the draft from."""
    if not isinstance(data, dict) or not isinstance(data.get("title"), str):
        raise CaptureError([Problem(where, 1, "not an issue: no title")])
    author = _login(data.get("author") or data.get("user"))
    first = f"{data['title']}\n\n{data.get('body') or ''}".strip()
    messages: list[dict[str, Any]] = [{"role": "user", "content": first}]
    for comment in data.get("comments") or []:
        if not isinstance(comment, dict):
            continue
        body = str(comment.get("body") or "").strip()
        who = _login(comment.get("author") or comment.get("user"))
        if body:
            messages.append({"role": "user" if who == author else "assistant", "content": body})
    number = data.get("number")
    session = f"issue-{number}" if number is not None else Path(where).stem
    return Captured(session, data["title"], data.get("createdAt") or data.get("created_at"),
                    messages)  # fmt: skip


def _login(value: Any) -> str | None:
    return value.get("login") if isinstance(value, dict) else None
