"""`agenteval audit`: which scenarios an agent's declared limits make impossible.

An agent config may declare what its architecture cannot do (`target.limits`): how many
earlier turns it keeps, the longest message it accepts intact, the tools it has. Each rule
below turns a limit and a scenario into evidence, without calling any model; a scenario with
evidence is scored BLOCKED_BY_ARCHITECTURE by :mod:`agenteval.scoring` (capped like a FAIL).
Only evidence counts: a limit the scenario files cannot show to bind blocks nothing.

Dependencies between turns, for the history rule: a turn needs an earlier one when they share
a manifest fact or an expected answer (the later one recalls it), and every turn of a
`context_retention` scenario needs the turn before it.
"""

from __future__ import annotations

from dataclasses import dataclass

from agenteval.schema.params import AgentLimits
from agenteval.schema.scenario import Scenario, Turn

CONTEXT_CATEGORY = "context_retention"


@dataclass(frozen=True)
class Blocked:
    """Why one scenario cannot succeed, and the limit that would let it."""

    reason: str
    needs: str


def _recalls(later: Turn, earlier: Turn) -> bool:
    a, b = later.ground_truth, earlier.ground_truth
    if a is None or b is None:
        return False
    if set(a.all_fact_ids) & set(b.all_fact_ids):
        return True
    return bool(a.expected_answer) and a.expected_answer == b.expected_answer


def history_needed(scenario: Scenario) -> tuple[int, int, int] | None:
    """(turn, earlier turn, distance) of the longest reach back any turn needs, if any."""
    best: tuple[int, int, int] | None = None
    turns = scenario.turns
    for i, later in enumerate(turns):
        for j in range(i):
            needs = _recalls(later, turns[j]) or (
                scenario.category == CONTEXT_CATEGORY and j == i - 1
            )
            distance = later.turn - turns[j].turn
            if needs and (best is None or distance > best[2]):
                best = (later.turn, turns[j].turn, distance)
    return best


def blocked_reasons(scenario: Scenario, limits: AgentLimits) -> list[Blocked]:
    """Every piece of evidence that `limits` make `scenario` impossible (empty: possible)."""
    found: list[Blocked] = []
    if limits.history_turns is not None:
        reach = history_needed(scenario)
        if reach is not None and reach[2] > limits.history_turns:
            later, earlier, distance = reach
            found.append(
                Blocked(
                    f"turn {later} needs turn {earlier} ({distance} turn(s) back) but the agent "
                    f"keeps {limits.history_turns} earlier turn(s)",
                    f"history_turns >= {distance}",
                )
            )
    for turn in scenario.turns:
        text = turn.user_message or ""
        if limits.message_chars is not None and len(text) > limits.message_chars:
            found.append(
                Blocked(
                    f"turn {turn.turn}'s message has {len(text)} characters but the agent "
                    f"keeps {limits.message_chars}",
                    f"message_chars >= {len(text)}",
                )
            )
        if limits.tools is not None:
            for tool in turn.expected_tools or []:
                if tool not in limits.tools:
                    found.append(
                        Blocked(
                            f"turn {turn.turn} expects tool {tool!r}, which the agent does not "
                            "have",
                            f"tools include {tool!r}",
                        )
                    )
    return found


def describe(blocked: list[Blocked]) -> list[str]:
    return [b.reason for b in blocked]
