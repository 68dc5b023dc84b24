"""Read a conversation back out of MLflow traces, as OpenAI-style chat messages.

Given one trace id: when the trace belongs to a session (trace metadata
`mlflow.trace.session`, as agenteval and MLflow's chat integrations write it), every trace of
that session in its experiment, oldest first, is one exchange; otherwise the trace alone is.
An exchange's user message is the last user message of the root span's inputs (`messages`,
or a plain `question` / `query` / `input` string), its reply the assistant message of the
outputs (`messages`, `choices[0].message`, or a string), and its tool calls the TOOL spans.
A trace whose inputs already hold the whole conversation (several user messages, as a chat
completion request does) is read as that conversation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agenteval.tracking.records import SESSION_KEY
from agenteval.tracking.store import TrackingError, mlflow_client, sqlite_path

SEARCH_PAGE = 200


@dataclass(frozen=True)
class CapturedSession:
    session_id: str
    title: str | None
    started_ms: int | None
    messages: list[dict[str, Any]]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content, ensure_ascii=False)


def _user_messages(inputs: Any) -> list[dict[str, Any]]:
    if isinstance(inputs, dict):
        messages = inputs.get("messages")
        if isinstance(messages, list):
            return [m for m in messages if isinstance(m, dict)]
        for key in ("question", "query", "input", "prompt"):
            if isinstance(inputs.get(key), str):
                return [{"role": "user", "content": inputs[key]}]
    if isinstance(inputs, str):
        return [{"role": "user", "content": inputs}]
    return []


def _reply(outputs: Any) -> str:
    if isinstance(outputs, str):
        return outputs
    if not isinstance(outputs, dict):
        return ""
    if isinstance(outputs.get("messages"), list):
        said = [m for m in outputs["messages"] if isinstance(m, dict)]
        return _text(said[-1].get("content")) if said else ""
    choices = outputs.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return _text((choices[0].get("message") or {}).get("content"))
    return _text(outputs.get("output") or outputs.get("answer") or "")


def _exchange(trace: Any) -> list[dict[str, Any]]:
    spans = list(trace.data.spans)
    root = next((s for s in spans if s.parent_id is None), None)
    if root is None:
        return []
    said = _user_messages(root.inputs)
    users = [m for m in said if m.get("role") == "user"]
    if len(users) > 1:  # the request carries the whole conversation so far
        history = [m for m in said if m.get("role") in ("user", "assistant", "tool")]
    else:
        history = [{"role": "user", "content": _text(users[-1].get("content"))}] if users else []
    tools = sorted((s for s in spans if str(s.span_type) == "TOOL"), key=lambda s: s.start_time_ns)
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": s.name, "arguments": json.dumps(s.inputs or {}, default=str)},
        }
        for i, s in enumerate(tools)
    ]
    if calls:
        history.append({"role": "assistant", "content": None, "tool_calls": calls})
    reply = _reply(root.outputs)
    if reply:
        history.append({"role": "assistant", "content": reply})
    return history


def _session_traces(client: Any, trace: Any, session: str) -> list[Any]:
    experiment = trace.info.experiment_id
    found, token = [], None
    while True:
        page = client.search_traces(
            locations=[experiment],
            filter_string=f"metadata.`{SESSION_KEY}` = '{session.replace(chr(39), '')}'",
            order_by=["timestamp_ms ASC"],
            max_results=SEARCH_PAGE,
            page_token=token,
        )
        found.extend(page)
        token = page.token
        if not token:
            return found


def _in_turn_order(traces: list[Any]) -> list[Any]:
    """By agenteval's turn tag where every trace has one: traces logged within the same
    millisecond tie on their timestamp, and the search returns ties in any order."""
    turns = [(t.info.tags or {}).get("agenteval.turn", "") for t in traces]
    if not all(turn.isdigit() for turn in turns):
        return traces
    return [t for _, t in sorted(zip(turns, traces, strict=True), key=lambda x: int(x[0]))]


def read_session(trace_id: str, uri: str) -> CapturedSession:
    """The conversation `trace_id` belongs to; TrackingError when it cannot be read."""
    store = sqlite_path(uri)
    if store is not None and not store.is_file():
        # MLflow would create an empty database just to say the trace is not there.
        raise TrackingError(f"MLflow trace {trace_id}: no tracking database at {store}")
    from mlflow.exceptions import MlflowException

    with mlflow_client(uri) as client:
        try:
            trace = client.get_trace(trace_id)
            session = (trace.info.trace_metadata or {}).get(SESSION_KEY)
            traces = _session_traces(client, trace, session) if session else [trace]
            full = _in_turn_order([client.get_trace(t.info.trace_id) for t in traces])
        except MlflowException as exc:
            raise TrackingError(f"MLflow trace {trace_id} ({uri}): {exc.message}") from None
    messages = [m for t in full for m in _exchange(t)]
    title = (trace.info.tags or {}).get("agenteval.scenario_id") or session
    return CapturedSession(session or trace_id, title, trace.info.request_time, messages)
