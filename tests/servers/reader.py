"""A scripted model that does what its prompt tells it: the adversary of the corpus fence.

Given as a `reply_fn` to `OpenAIServer`, it reads every path the system prompt or the user's
latest message names in backticks (`read_document`, all in one step), then answers from what
it read: an `expected_answer` found in a file it could read (a scenario file, the resolved
suite) becomes its reply, so an agent whose tools can reach the answer key passes. When every
read is refused it says it could not read them.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .common import Call, Reply

# A path in backticks: it has a slash or a dot (tool names such as `query_documents` do not).
BACKTICKED = re.compile(r"`([^`\s]*[/.][^`\s]*)`")
ANSWER = re.compile(r"\"?expected_answer\"?\s*:\s*\"([^\"]+)\"")
REFUSED = "I could not read those files, so I cannot answer."


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


def reads_what_it_is_told(request: dict[str, Any]) -> Reply:
    messages: list[dict[str, Any]] = request["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    since = messages[last_user + 1 :]
    if not since:  # the user just spoke: read everything the prompt names
        prompt = " ".join(_text(m) for m in messages if m["role"] == "system")
        paths = list(dict.fromkeys(BACKTICKED.findall(f"{prompt} {_text(messages[last_user])}")))
        if not paths:
            return Reply(text="Nothing to read.")
        calls = [Call("read_document", {"path": p}, id=f"read_{i}") for i, p in enumerate(paths)]
        return Reply(text="", tool_calls=calls)
    found: list[str] = []
    for message in since:
        if message["role"] != "tool":
            continue
        try:
            payload = json.loads(_text(message))
        except ValueError:
            continue
        if isinstance(payload, dict) and isinstance(payload.get("text"), str):
            found += ANSWER.findall(payload["text"])
    return Reply(text=f"The answer is {found[-1]}." if found else REFUSED)
