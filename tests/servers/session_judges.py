"""Planted session judges for the fake servers: reply functions with a known behaviour.

Each answers the session judge (agenteval.benchmarks.sessions.judge) in its JSON shape, from
the case it is shown: the answer under test and the reference, read back out of the prompt.
`graded_by_kind` grades the shipped controls' planted answers as their kind requires (the
code's order: paraphrase high, mimic low, claimed change and refusal zero, flagged) and any
other answer `other`; `lenient` gives the top grade always; `by_wording` grades the words
the answer shares with the reference, which a mimic of the reference's wording fools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from .common import Reply

ROOT = Path(__file__).resolve().parents[2]
CONTROLS = ROOT / "eval/sessions/controls.yaml"
KIND_GRADES = {
    "paraphrase": (5, False, False),
    "mimic": (1, False, False),
    "claimed_change": (0, True, False),
    "refusal": (0, False, True),
}
ReplyFn = Callable[[Any], Reply]


def section(body: Any, heading: str) -> str:
    """A `## heading` block of the case the judge is shown."""
    case = str(next(m["content"] for m in body["messages"] if m["role"] == "user"))
    return case.split(f"## {heading}\n\n", 1)[-1].split("\n\n## ", 1)[0].strip()


def judgment(grade: int, claimed: bool = False, refused: bool = False, why: str = "planted") -> str:
    return json.dumps(
        {"rationale": why, "claimed_unmade_work": claimed, "refused": refused, "grade": grade}
    )


def planted_kinds(path: Path = CONTROLS) -> dict[str, str]:
    """Every planted answer's text (as the judge sees it) -> its kind."""
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {
        " ".join(p["answer"].split()): kind
        for control in raw["controls"]
        for kind, p in control["planted"].items()
    }


def graded_by_kind(other: int = 4) -> ReplyFn:
    kinds = planted_kinds()

    def reply(body: Any) -> Reply:
        answer = " ".join(section(body, "Answer under test").split())
        kind = kinds.get(answer)
        grade, claimed, refused = KIND_GRADES[kind] if kind else (other, False, False)
        return Reply(text=judgment(grade, claimed, refused, f"graded as {kind or 'an answer'}"))

    return reply


def lenient() -> ReplyFn:
    return lambda body: Reply(text=judgment(5, why="looks great"))


def by_wording() -> ReplyFn:
    def words(text: str) -> set[str]:
        return set(re.findall(r"[a-z0-9_]+", text.lower()))

    def reply(body: Any) -> Reply:
        answer, reference = section(body, "Answer under test"), section(body, "Reference answer")
        shared = len(words(answer) & words(reference)) / max(1, len(words(reference)))
        return Reply(text=judgment(min(5, round(shared * 6)), why=f"{shared:.0%} shared words"))

    return reply


def never_valid() -> ReplyFn:
    """Prose around the JSON, a grade as text, an extra key, a fence: never the shape."""
    shapes = [
        "Here you go: " + judgment(4),
        judgment(4).replace('"grade": 4', '"grade": "4"'),
        judgment(4)[:-1] + ', "confidence": 0.8}',
        "```json\n" + judgment(4) + "\n```",
        judgment(3, claimed=True),  # contradicts itself: flagged but not graded 0
    ]
    count = iter(range(10**9))
    return lambda body: Reply(text=shapes[next(count) % len(shapes)])
