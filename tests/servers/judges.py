"""Planted judge models for the fake servers: reply functions with a known bias.

Each answers the turn judge and the scenario judge of `agenteval.judges.llm` in the
verdict's JSON shape (or, for `invalid_json`, never in it), so a test can check what the
evaluation does with a judge whose behaviour it knows exactly.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from typing import Any

from agenteval.scoring import DIMENSIONS

from .common import Reply

ReplyFn = Callable[[Any], Reply]


def is_scenario_request(body: Any) -> bool:
    return "# Scenario judge" in json.dumps(body)


def case_text(body: Any) -> str:
    """The user message of the first request of a judging (the case shown to the judge)."""
    return str(next(m["content"] for m in body["messages"] if m["role"] == "user"))


def turn_json(score: float, reason: str = "planted") -> str:
    scores = {d: {"reasoning": reason, "score": score} for d in DIMENSIONS}
    return json.dumps({"scores": scores, "total": score, "reasked": False})


def scenario_json(status: str) -> str:
    return json.dumps({"status": status, "root_cause": None, "recommended_fix": None})


def lenient() -> ReplyFn:
    """Passes everything: 10 on every dimension, PASS for every scenario."""

    def reply(body: Any) -> Reply:
        return Reply(text=scenario_json("PASS") if is_scenario_request(body) else turn_json(10))

    return reply


def inconsistent(seed: int = 0) -> ReplyFn:
    """A coin flip per request: all 10s and PASS, or all 1s and FAIL."""
    rng = random.Random(seed)
    lock = threading.Lock()

    def reply(body: Any) -> Reply:
        with lock:
            good = rng.random() < 0.5
        if is_scenario_request(body):
            return Reply(text=scenario_json("PASS" if good else "FAIL"))
        return Reply(text=turn_json(10 if good else 1))

    return reply


def invalid_json() -> ReplyFn:
    """Never the verdict's shape: chatter around JSON, duplicate keys, an extra key, a fence."""
    shapes = [
        "Sure! " + turn_json(9),
        turn_json(9)[:-1] + ', "total": 3}',  # the total given twice
        turn_json(9)[:-1] + ', "confidence": 0.9}',
        "```json\n" + turn_json(9) + "\n```",
    ]
    count = iter(range(10**9))
    lock = threading.Lock()

    def reply(body: Any) -> Reply:
        with lock:
            n = next(count)
        return Reply(text=shapes[n % len(shapes)])

    return reply


def length_biased(short: float = 5.0, long: float = 10.0, chars: int = 400) -> ReplyFn:
    """Grades the length of the reply, not its content: long replies pass."""

    def reply(body: Any) -> Reply:
        if is_scenario_request(body):
            return Reply(text=scenario_json("PASS"))
        reply_text = case_text(body).split("## Agent reply\n", 1)[-1].split("\n## ", 1)[0]
        return Reply(text=turn_json(long if len(reply_text) > chars else short))

    return reply
