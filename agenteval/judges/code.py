"""Judge `code`: grades what code can check and records everything else as not judged.

Correctness by commitment (`judges.correctness`: expected answers with the numeric
precision table and the automatic-zero rule, names as entities, exact years, dates,
versions and identifiers, must-abstain turns, refusals), completeness over several facts,
tool selection from expected/forbidden tools (a failed call is not a call), efficiency
(tool loops and repeats) and error recovery after a failed or empty tool call. Context
retention and personality need a reader: left to an LLM judge. A dimension code cannot
settle is deferred: no score, and the reason recorded.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agenteval.fileio import code_of, digest_of
from agenteval.judges.abstention import grade_unknown
from agenteval.judges.correctness import Question, finding, grade_answer
from agenteval.judges.correctness import Result as Mark
from agenteval.judges.reading import abstains
from agenteval.schema.scenario import Scenario, Turn
from agenteval.schema.status import NO_OPINION, Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn
from agenteval.schema.verdict import TurnVerdict, Verdict
from agenteval.scoring import (
    MINOR_SCORE,
    PARTIAL_SCORE,
    SCORE_MAX,
    SCORE_MIN,
    TOOL_LOOP_REPEATS,
)

# Saying that a tool failed means saying what failed: "no errors in that figure" or
# "nothing is missing" mention the words without telling the user anything.
FAILURE_TOLD = re.compile(
    r"\b(?:could not|couldn't|cannot|can't|unable to|wasn't able to|was not able to|"
    r"failed to)\s+(?:find|open|locate|read|index|access|load)\b"
    r"|\b(?:doesn't|does not|didn't|did not)\s+exist\b|\bnot found\b|\bno such (?:file|document)\b"
    r"|\b(?:is|was) empty\b|\bhas no (?:text|content)\b|\bno (?:indexable |readable )?text\b"
    r"|\b(?:returned|gave|raised) an? error\b|\bthe (?:search|tool|call|index(?:ing)?) failed\b",
    re.IGNORECASE,
)
FAILURE_DENIED = re.compile(
    r"\bno errors?\b|\bnothing (?:is |was )?missing\b|\bwithout (?:any )?errors?\b", re.I
)
KIND = "code"
# A grade (Mark) is a score with the rule of findings.CODE_FINDINGS it was given by, or a
# deferral (score None) with the reason.


class CodeJudge:
    def __init__(self, params: dict[str, Any] | None = None, root: Path | None = None) -> None:
        self.participant = Participant(
            kind=KIND,
            model=None,
            protocol=None,
            config_digest=digest_of({"kind": KIND, "code": code_of(__name__)}),
            details={"code": code_of(__name__)},
        )

    async def judge(self, item: SuiteItem, transcript: Transcript, sample: int = 0) -> Verdict:
        return judge_transcript(item, transcript, self.participant)  # deterministic


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
    unjudged = [t for t in verdict.turns if t.scores.get("correctness") is None]
    if unjudged:
        verdict.status = Status.NOT_JUDGED
        why = "; ".join(
            f"turn {t.turn}: {t.reasons.get('correctness', 'correctness not checkable by code')}"
            for t in unjudged
        )
        verdict.root_cause = f"correctness deferred: {why}"
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
        "correctness": correctness(turn, said, item),
        "tool_selection": tool_selection(scenario, turn, said.tool_calls),
        "context_retention": None,
        "completeness": completeness(turn, said, item),
        "efficiency": efficiency(said.tool_calls),
        "personality": None,
        "error_recovery": error_recovery(said),
    }
    return TurnVerdict(
        turn=turn.turn,
        scores={d: (m.score if m else None) for d, m in marks.items()},
        judged_by={d: KIND for d, m in marks.items() if m and m.score is not None},
        reasons={d: m.reason for d, m in marks.items() if m},
        findings={d: m.rule for d, m in marks.items() if m and m.rule and m.score is not None},
        simulator_fault=said.simulator_fault,
    )


def question_of(turn: Turn, said: TranscriptTurn, item: SuiteItem | None) -> str:
    """What was asked: the user's message and the manifest questions of the turn's facts."""
    texts = [said.user_message]
    if turn.user_message and turn.user_message != said.user_message:
        texts.append(turn.user_message)
    gt = turn.ground_truth
    if gt is not None and item is not None:
        texts += [fact.question for fact in item.facts_of(gt)]
    return "\n".join(texts)


def evidence_of(said: TranscriptTurn) -> str:
    """The text the tools returned in this turn (what the agent could have read)."""
    texts = []
    for call in said.tool_calls:
        result = call.result if call.ok and isinstance(call.result, dict) else {}
        texts += [r.get("text", "") for r in result.get("results", []) if isinstance(r, dict)]
        if isinstance(result.get("text"), str):
            texts.append(result["text"])
    return "\n".join(texts)


def subjects_of(turn: Turn, item: SuiteItem | None) -> str:
    """The ids of the documents in play (the turn's and the scenario's): a reply naming the
    company whose report it reads ("Fenwick & Orla offers ...") names the asked entity."""
    ids = [turn.ground_truth.doc_id] if turn.ground_truth and turn.ground_truth.doc_id else []
    if item is not None:
        ids += [d.corpus_doc or "" for d in item.scenario.setup.index_documents]
        ids += [
            d.path.rsplit("/", 1)[-1].split(".")[0] for d in item.scenario.setup.index_documents
        ]
    return " ".join(i for i in ids if i)


def documents_of(said: TranscriptTurn, item: SuiteItem | None) -> list[str]:
    """The files the scenario indexed and the turn indexed or read: where a source the
    reply names must be (paths relative to the repository root, the working directory)."""
    paths = [d.path for d in item.scenario.setup.index_documents] if item is not None else []
    for call in said.tool_calls:
        path = (call.arguments or {}).get("path")
        if call.ok and call.name in ("index_document", "read_document") and isinstance(path, str):
            paths.append(path)
    return paths


def _queried(calls: list[ToolCall]) -> bool:
    return any(c.ok and c.name in ("query_documents", "read_document") for c in calls)


def correctness(turn: Turn, said: TranscriptTurn, item: SuiteItem | None = None) -> Mark | None:
    gt = turn.ground_truth
    response = said.response
    question = question_of(turn, said, item)
    queried = _queried(said.tool_calls)
    marks: list[Mark] = []
    if gt is not None and gt.answer_unknown:
        # The documents go along so a hedged figure can be told from one they hold.
        unknown = Question(question, None, True, queried, evidence_of(said),
                           documents=documents_of(said, item))  # fmt: skip
        return grade_unknown(unknown, response)
    if gt is not None and gt.expected_answer:
        asked = Question(question, gt.expected_answer, False, queried, evidence_of(said),
                         subjects_of(turn, item), documents_of(said, item))  # fmt: skip
        marks.append(grade_answer(asked, response))
    if gt is not None and gt.expected_phrases:
        missing = [p for p in gt.expected_phrases if p.lower() not in response.lower()]
        if missing:
            marks.append(finding("phrases_missing", f"missing phrases {missing}"))
        else:
            marks.append(finding("phrases_present", "phrases present"))
    if not marks and turn.expected_tools:
        called = {c.name for c in said.tool_calls if c.ok}
        lacking = sorted(set(turn.expected_tools) - called)
        if lacking:
            marks.append(finding("action_missing", f"did not call {lacking}"))
        elif abstains(response):
            return finding("action_denied", "the action succeeded but the reply says it did not")
        else:
            marks.append(finding("action_done", "performed the requested tool action"))
    if not marks:
        return None
    scored = [m for m in marks if m.score is not None]
    if scored and min(m.score for m in scored if m.score is not None) == SCORE_MIN:
        return min(scored, key=lambda m: m.score or 0.0)
    deferred = [m for m in marks if m.score is None]
    return deferred[0] if deferred else min(scored, key=lambda m: m.score or 0.0)


def completeness(turn: Turn, said: TranscriptTurn, item: SuiteItem) -> Mark | None:
    gt = turn.ground_truth
    if gt is None:
        return None
    response = said.response
    facts = [fact for fact in item.facts_of(gt) if fact.answer]
    if len(facts) >= 2:
        queried = _queried(said.tool_calls)
        results = [
            grade_answer(Question(f.question, f.answer, False, queried), response) for f in facts
        ]
        if any(r.score is None for r in results):
            return Mark(None, "a fact's coverage cannot be settled by code")
        hits = sum((r.score or 0) >= 8 for r in results)
        share = round(SCORE_MAX * hits / len(facts), 2)
        return finding("coverage", f"{hits}/{len(facts)} facts covered", share)
    phrases = gt.expected_phrases or []
    if len(phrases) >= 2:
        hits_p = [p for p in phrases if p.lower() in response.lower()]
        share = round(SCORE_MAX * len(hits_p) / len(phrases), 2)
        return finding("coverage", f"{len(hits_p)}/{len(phrases)} phrases", share)
    return None


def tool_selection(scenario: Scenario, turn: Turn, calls: list[ToolCall]) -> Mark | None:
    forbidden = scenario.forbidden_for(turn)
    if not turn.expected_tools and not forbidden:
        return None
    attempted = [c.name for c in calls]
    used_forbidden = sorted(set(attempted) & set(forbidden))
    if used_forbidden:  # trying a forbidden tool is using it, whether or not it worked
        return finding("forbidden_tool", f"called forbidden tool(s) {used_forbidden}")
    expected = set(turn.expected_tools or [])
    present = expected & {c.name for c in calls if c.ok}  # a failed call is not a call
    if present == expected:
        why = "called the expected tools" if expected else "avoided forbidden tools"
        return finding("tools_used", why)
    share = len(present) / len(expected)
    failed = sorted((expected - present) & set(attempted))
    why = f"missing tool(s) {sorted(expected - present)}"
    if failed:
        why += f" (called {failed}, but every such call failed)"
    return finding("missing_tool", why, PARTIAL_SCORE if share >= 0.5 else SCORE_MIN)


def _signature(call: ToolCall) -> str:
    return f"{call.name}:{digest_of(call.arguments)}"


def efficiency(calls: list[ToolCall]) -> Mark:
    sigs = [_signature(c) for c in calls]
    run = TOOL_LOOP_REPEATS
    for i in range(len(sigs) - run + 1):
        if len(set(sigs[i : i + run])) == 1:
            why = f"tool loop: {calls[i].name} called {run}+ times in a row"
            return finding("tool_loop", why)
    for i in range(len(sigs) - 3):
        a, b = sigs[i], sigs[i + 1]
        if a != b and sigs[i + 2] == a and sigs[i + 3] == b:
            why = f"tool loop: {calls[i].name}/{calls[i + 1].name} alternating"
            return finding("tool_loop", why)
    repeats = len(sigs) - len(set(sigs))
    if repeats == 0:
        return finding("no_repeats", f"{len(calls)} tool call(s), none repeated")
    score = MINOR_SCORE if repeats <= 2 else PARTIAL_SCORE
    return finding("repeats", f"{repeats} repeated tool call(s)", score)


def _told_failure(response: str) -> bool:
    for sentence in re.split(r"(?<=[.!?;])\s+", response):
        if FAILURE_TOLD.search(sentence) and not FAILURE_DENIED.search(sentence):
            return True
    return False


def error_recovery(said: TranscriptTurn) -> Mark | None:
    calls = said.tool_calls
    failed = [i for i, c in enumerate(calls) if not c.ok]
    empty = [
        i
        for i, c in enumerate(calls)
        if c.name == "index_document"
        and c.ok
        and isinstance(c.result, dict)
        and c.result.get("chunk_count") == 0
    ]
    if not failed and not empty:
        return None
    if _told_failure(said.response):
        return finding("failure_told", "told the user what failed or came back empty")
    retried = all(any(c.ok and c.name == calls[i].name for c in calls[i + 1 :]) for i in failed)
    if failed and not empty and retried:
        return finding("retried", "recovered by retrying, without telling the user what failed")
    return finding(
        "failure_hidden", "a tool failed or returned nothing and the reply did not say so"
    )
