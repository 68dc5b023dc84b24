"""Judge `code`: grades what code can check and records everything else as not judged.

Correctness (expected answers with the numeric precision table, names, required phrases,
must-abstain turns, lazy refusals), completeness over several facts, tool selection from
expected/forbidden tools, efficiency (tool loops and repeats) and error recovery after a
failed tool call. Context retention and personality need a reader: left to an LLM judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agenteval.corpus.retrieval import tokenize
from agenteval.fileio import code_of, digest_of
from agenteval.judges.numbers import (
    best_deviation,
    precision_score,
    quantities,
    strip_dates,
    strip_quantities,
)
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.status import NO_OPINION, Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn
from agenteval.schema.verdict import TurnVerdict, Verdict
from agenteval.scoring import TOOL_LOOP_REPEATS

ABSTAIN = re.compile(
    r"not (in|mentioned in|stated in|included in|covered (in|by)|found in|available in) the "
    r"(documents?|files?|report|text|sources?)|\b(i )?(do not|don't|cannot|can't|could not|"
    r"couldn't|did not|didn't) (know|find|locate|see)\b|\bno (information|mention|data|record)\b|"
    r"\b(isn't|is not|wasn't|was not) (mentioned|stated|specified|provided|included)\b|"
    r"\bunable to (find|locate)\b|\bnot specified\b|\bdoes not (say|mention|state|specify)\b|"
    r"\b(file|document) (is|was) empty\b|\bnothing to report\b|\bhas no (text|content)\b",
    re.IGNORECASE,
)
FAILURE_ACKNOWLEDGED = re.compile(
    r"\b(could not|couldn't|cannot|can't|unable|not found|does not exist|doesn't exist|"
    r"no such|empty|missing|failed|error|no text)\b",
    re.IGNORECASE,
)
KIND = "code"


@dataclass(frozen=True)
class Mark:
    score: float
    reason: str


class CodeJudge:
    def __init__(self, params: dict[str, Any] | None = None, root: Path | None = None) -> None:
        self.participant = Participant(
            kind=KIND,
            model=None,
            protocol=None,
            config_digest=digest_of({"kind": KIND, "code": code_of(__name__)}),
            details={"code": code_of(__name__)},
        )

    async def judge(self, item: SuiteItem, transcript: Transcript) -> Verdict:
        return judge_transcript(item, transcript, self.participant)


def judge_transcript(item: SuiteItem, transcript: Transcript, judge: Participant) -> Verdict:
    scenario = item.scenario
    verdict = Verdict(
        scenario_id=scenario.id,
        iteration=transcript.iteration,
        scenario_digest=item.digest,
        transcript_digest=digest_of(transcript),
        judge=judge,
        status=NO_OPINION,
    )
    if transcript.status != "COMPLETED":
        verdict.status = transcript.status
        return verdict
    by_number = {t.turn: t for t in transcript.turns}
    for turn in scenario.turns:
        said = by_number.get(turn.turn)
        if said is None:
            verdict.status, verdict.error = Status.ERRORED, f"turn {turn.turn} missing"
            return verdict
        verdict.turns.append(judge_turn(scenario, turn, said, item))
    unjudged = [t.turn for t in verdict.turns if t.scores.get("correctness") is None]
    if unjudged:
        verdict.status = Status.NOT_JUDGED
        verdict.root_cause = f"turns {unjudged}: correctness not checkable by code"
    else:
        verdict.root_cause = _root_cause(verdict.turns)
    return verdict


def _root_cause(turns: list[TurnVerdict]) -> str | None:
    weak = [
        f"turn {t.turn}: {t.reasons['correctness']}"
        for t in turns
        if (t.scores.get("correctness") or 0) < 4 and "correctness" in t.reasons
    ]
    return "; ".join(weak) or None


def judge_turn(
    scenario: Scenario, turn: Turn, said: TranscriptTurn, item: SuiteItem
) -> TurnVerdict:
    marks: dict[str, Mark | None] = {
        "correctness": correctness(turn, said),
        "tool_selection": tool_selection(scenario, turn, said.tool_calls),
        "context_retention": None,
        "completeness": completeness(turn, said.response, item),
        "efficiency": efficiency(said.tool_calls),
        "personality": None,
        "error_recovery": error_recovery(said),
    }
    return TurnVerdict(
        turn=turn.turn,
        scores={d: (m.score if m else None) for d, m in marks.items()},
        judged_by={d: KIND for d, m in marks.items() if m},
        reasons={d: m.reason for d, m in marks.items() if m},
        simulator_fault=said.simulator_fault,
    )


def abstains(text: str) -> bool:
    return bool(ABSTAIN.search(text))


def answer_match(expected: str, response: str) -> Mark:
    """Numbers by the precision table, dates literally, other content words by presence."""
    text_part, dates = strip_dates(expected)
    found = quantities(response, ranges=False)
    score, reasons = 10.0, []
    for quantity in quantities(text_part):
        deviation = best_deviation(quantity, found)
        grade = precision_score(deviation)
        if grade < 10:
            shown = "absent" if deviation == float("inf") else f"{deviation:.1%} off"
            reasons.append(f"number {quantity.low:g} {shown}")
        score = min(score, grade)
    lowered = response.lower()
    for date in dates:
        if date.lower() not in lowered:
            score = 0.0
            reasons.append(f"date/time {date!r} absent")
    words = [w for w in tokenize(strip_quantities(text_part)) if not w.isdigit()]
    present = set(tokenize(response))
    missing = [w for w in words if w not in present]
    if words and missing:
        share = 1 - len(missing) / len(words)
        score = min(score, 4.0 if share >= 0.5 else 0.0)
        reasons.append(f"missing {', '.join(missing)}")
    return Mark(score, "; ".join(reasons) or f"matches {expected!r}")


def correctness(turn: Turn, said: TranscriptTurn) -> Mark | None:
    gt = turn.ground_truth
    queried = any(c.name == "query_documents" for c in said.tool_calls)
    response = said.response
    marks: list[Mark] = []
    if gt is not None and gt.answer_unknown:
        if abstains(response):
            return Mark(10.0, "correctly said the answer is not in the documents")
        return Mark(0.0, "answered although the answer is not in the documents")
    if gt is not None and gt.expected_answer:
        if abstains(response):
            why = "lazy refusal: refused without querying" if not queried else "refused"
            return Mark(0.0, f"{why}; expected {gt.expected_answer!r}")
        marks.append(answer_match(gt.expected_answer, response))
    if gt is not None and gt.expected_phrases:
        missing = [p for p in gt.expected_phrases if p.lower() not in response.lower()]
        marks.append(
            Mark(
                0.0 if missing else 10.0,
                f"missing phrases {missing}" if missing else "phrases present",
            )
        )
    if not marks and turn.expected_tools:
        called = {c.name for c in said.tool_calls if c.ok}
        lacking = sorted(set(turn.expected_tools) - called)
        reason = f"did not call {lacking}" if lacking else "performed the requested tool action"
        marks.append(Mark(0.0 if lacking else 10.0, reason))
    if not marks:
        return None
    worst = min(marks, key=lambda m: m.score)
    return worst


def completeness(turn: Turn, response: str, item: SuiteItem) -> Mark | None:
    gt = turn.ground_truth
    if gt is None:
        return None
    facts = [item.facts[f] for f in gt.all_fact_ids if f in item.facts and item.facts[f].answer]
    if len(facts) >= 2:
        hits = [f.id for f in facts if answer_match(f.answer or "", response).score >= 8]
        share = len(hits) / len(facts)
        return Mark(round(10 * share, 2), f"{len(hits)}/{len(facts)} facts covered")
    phrases = gt.expected_phrases or []
    if len(phrases) >= 2:
        hits_p = [p for p in phrases if p.lower() in response.lower()]
        return Mark(
            round(10 * len(hits_p) / len(phrases), 2), f"{len(hits_p)}/{len(phrases)} phrases"
        )
    return None


def tool_selection(scenario: Scenario, turn: Turn, calls: list[ToolCall]) -> Mark | None:
    forbidden = scenario.forbidden_for(turn)
    if not turn.expected_tools and not forbidden:
        return None
    called = [c.name for c in calls]
    used_forbidden = sorted(set(called) & set(forbidden))
    if used_forbidden:
        return Mark(0.0, f"called forbidden tool(s) {used_forbidden}")
    expected = set(turn.expected_tools or [])
    present = expected & set(called)
    if present == expected:
        return Mark(10.0, "called the expected tools" if expected else "avoided forbidden tools")
    share = len(present) / len(expected)
    return Mark(4.0 if share >= 0.5 else 0.0, f"missing tool(s) {sorted(expected - present)}")


def _signature(call: ToolCall) -> str:
    return f"{call.name}:{digest_of(call.arguments)}"


def efficiency(calls: list[ToolCall]) -> Mark:
    sigs = [_signature(c) for c in calls]
    run = TOOL_LOOP_REPEATS
    for i in range(len(sigs) - run + 1):
        if len(set(sigs[i : i + run])) == 1:
            return Mark(0.0, f"tool loop: {calls[i].name} called {run}+ times in a row")
    for i in range(len(sigs) - 3):
        a, b = sigs[i], sigs[i + 1]
        if a != b and sigs[i + 2] == a and sigs[i + 3] == b:
            return Mark(0.0, f"tool loop: {calls[i].name}/{calls[i + 1].name} alternating")
    repeats = len(sigs) - len(set(sigs))
    if repeats == 0:
        return Mark(10.0, f"{len(calls)} tool call(s), none repeated")
    return Mark(7.0 if repeats <= 2 else 4.0, f"{repeats} repeated tool call(s)")


def error_recovery(said: TranscriptTurn) -> Mark | None:
    failed = [c for c in said.tool_calls if not c.ok]
    empty = [
        c
        for c in said.tool_calls
        if c.name == "index_document"
        and c.ok
        and isinstance(c.result, dict)
        and c.result.get("chunk_count") == 0
    ]
    if not failed and not empty:
        return None
    if FAILURE_ACKNOWLEDGED.search(said.response):
        return Mark(10.0, "told the user about the failed/empty tool result")
    return Mark(0.0, "a tool failed or returned nothing and the reply did not say so")
