"""The judge's prompt values: rubric numbers and the case blocks a judge prompt shows.

Prompts are edited like configuration, so they hold words only: every number they cite
(weights, thresholds, the numeric precision table, score anchors) is rendered here from the
code that enforces it. Loading and rendering prompt files is `agenteval.llm.prompts`.
"""

from __future__ import annotations

import json

from agenteval.findings import BINDING_FINDINGS, CODE_FINDINGS
from agenteval.schema.scenario import Turn
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import ToolCall, Transcript, TranscriptTurn
from agenteval.schema.verdict import TurnVerdict
from agenteval.scoring import (
    AUTO_ZERO_DEVIATION,
    CRITICAL_SEVERITY,
    DIMENSIONS,
    MINOR_SCORE,
    OPTIONAL_DIMENSIONS,
    PARTIAL_SCORE,
    PRECISION_TABLE,
    REASK_CAP,
    SCORE_MAX,
    SCORE_MIN,
    TOOL_LOOP_REPEATS,
    ScoringRules,
)

# Where the turn case shows the ground truth: before the agent's reply (the default) or
# after it (the bias probe that checks whether the order changes the grades).
TRUTH_POSITIONS = ("before", "after")

# Score anchors of the rubric's scoring guides. Intermediate values are allowed; these are
# the levels each guide describes. "partial" is also the cap on context retention when the
# agent asks again for something already established.
RUBRIC_ANCHORS: dict[str, float] = {
    "full": SCORE_MAX,
    "minor": MINOR_SCORE,
    "partial": PARTIAL_SCORE,
    "none": SCORE_MIN,
}


def number(value: float) -> str:
    """4.0 -> "4", 5.99 -> "5.99": how a person writes a threshold."""
    return f"{value:g}"


def percent(share: float) -> str:
    return f"{share * 100:g}%"


def precision_table() -> str:
    """The precision table as it applies with a specific expected figure: its rows up to
    the automatic-zero limit, then zero (the rubric's further rows are capped out by it)."""
    rows = ["| Deviation from the expected figure | Highest correctness allowed |", "|---|---|"]
    lower = "exact"
    for limit, cap in PRECISION_TABLE:
        if limit > AUTO_ZERO_DEVIATION:
            break
        span = f"up to {percent(limit)}" if lower == "exact" else f"{lower} to {percent(limit)}"
        rows.append(f"| {span} | {number(cap)} |")
        lower = f"over {percent(limit)}"
    rows.append(f"| over {percent(AUTO_ZERO_DEVIATION)} | {number(SCORE_MIN)} (automatic zero) |")
    return "\n".join(rows)


def weights_table(rules: ScoringRules) -> str:
    total = sum(rules.weights.get(d, 0.0) for d in DIMENSIONS) or 1.0
    rows = ["| Dimension | Weight |", "|---|---|"]
    rows += [f"| {d} | {percent(rules.weights.get(d, 0.0) / total)} |" for d in DIMENSIONS]
    return "\n".join(rows)


def _binding_line(rule: str) -> str:
    """What a binding rule does to a model's score, in the prompt's words (from scoring)."""
    found = CODE_FINDINGS[rule]
    if found.score is None:  # graded: the meaning says how ("at most ...")
        return f"{found.dimension} {found.meaning}"
    return f"{found.dimension} {number(found.score)} for {found.meaning}"


def code_checks() -> str:
    """The prompt's paragraph on what code does with the judge's scores.

    One text for the `llm` and `hybrid` judges, true for both: the same prompt lets the two
    be compared (and a hybrid rerun reuse an llm run's cached answers), and a judge that
    knows its numbers are checked has no reason to grade them differently. Rendered from
    findings.BINDING_FINDINGS, so it names every rule that binds and nothing else.
    """
    rows = ";\n".join(f"- {_binding_line(rule)}" for rule in BINDING_FINDINGS) + "."
    return (
        "The evaluation's code grades some things itself, and defers what it cannot settle:\n"
        f"{rows}\n"
        "In a hybrid evaluation each of these findings sets the highest score its dimension "
        "can get, replacing yours when yours is higher; in every evaluation your grades and "
        "the code's are kept side by side for review. Grade every dimension as the rubric "
        "says regardless: everything code cannot check is yours alone."
    )


def rubric_values(rules: ScoringRules) -> dict[str, str]:
    """Every number the judge prompts cite, taken from the code that enforces it."""
    total = sum(rules.weights.get(d, 0.0) for d in DIMENSIONS) or 1.0
    values = {f"anchor_{name}": number(v) for name, v in RUBRIC_ANCHORS.items()}
    values |= {f"weight_{d}": percent(rules.weights.get(d, 0.0) / total) for d in DIMENSIONS}
    values |= {
        "score_min": number(SCORE_MIN),
        "score_max": number(SCORE_MAX),
        "pass_threshold": number(rules.pass_threshold),
        "min_correctness": number(rules.min_correctness),
        "fail_cap": number(rules.fail_cap),
        "precision_table": precision_table(),
        "precision_zero_beyond": percent(AUTO_ZERO_DEVIATION),
        "tool_loop_repeats": str(TOOL_LOOP_REPEATS),
        "reask_cap": number(REASK_CAP),
        "weights_table": weights_table(rules),
        "dimensions": ", ".join(DIMENSIONS),
        "optional_dimensions": " and ".join(OPTIONAL_DIMENSIONS),
        "critical_severity": CRITICAL_SEVERITY,
        "code_checks": code_checks(),
    }
    return values


# -- what the judge reads -----------------------------------------------------------------
# Tool results are trimmed in judge input: enough to check a quoted figure against what the
# agent saw, without paying for every retrieved passage on every turn.
MAX_RESULT_CHARS = 1500
MAX_EARLIER_REPLY_CHARS = 1500


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + " [...]"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def scenario_block(item: SuiteItem) -> str:
    """What the judge knows about the scenario: the same fields for every case.

    Blind on purpose: no id, category, description or expected outcome. They carry no
    grading rule the ground truth and success criteria do not, an author's narration ("a
    tempting wrong answer") primes the judge, and a labelled control mixed into a run
    (judge.controls_per_run) must look exactly like a real scenario.
    """
    s = item.scenario
    docs = ", ".join(d.path for d in s.setup.index_documents) or "none (the agent must find them)"
    lines = [
        f"- severity: {s.severity or 'unspecified'}",
        f"- persona: {s.persona}",
        f"- documents indexed before the first turn: {docs}",
    ]
    return "## Scenario\n" + "\n".join(lines)


def ground_truth_block(item: SuiteItem, turn: Turn) -> str:
    lines = [f"- objective: {turn.objective}"]
    gt = turn.ground_truth
    if gt is not None:
        if gt.answer_unknown:
            lines.append("- expected answer: NOT in the documents; the agent must say so")
        elif gt.expected_answer:
            lines.append(f"- expected answer: {gt.expected_answer}")
        for fact_id in gt.all_fact_ids:
            fact = item.fact(fact_id, gt.doc_id)
            if fact is not None:
                answer = fact.answer if fact.answer is not None else "(not in the document)"
                lines.append(f"- fact {fact_id}: {fact.question} -> {answer}")
        for label, value in (
            ("expected phrases", gt.expected_phrases),
            ("expected behaviour", gt.expected_behavior),
            ("note for the judge", gt.note),
        ):
            if value:
                lines.append(f"- {label}: {value}")
    if turn.success_criteria:
        lines.append(f"- success criteria: {' '.join(turn.success_criteria.split())}")
    if turn.expected_tools:
        lines.append(f"- tools expected: {', '.join(turn.expected_tools)}")
    forbidden = item.scenario.forbidden_for(turn)
    if forbidden:
        lines.append(f"- tools forbidden: {', '.join(forbidden)}")
    return "## Ground truth for this turn\n" + "\n".join(lines)


def tool_calls_block(calls: list[ToolCall]) -> str:
    if not calls:
        return "## Tool calls in this turn\n(none)"
    lines = []
    for n, call in enumerate(calls, start=1):
        outcome = _json(call.result) if call.ok else f"ERROR: {call.error}"
        lines.append(
            f"{n}. {call.name}({_json(call.arguments)}) -> {_clip(outcome, MAX_RESULT_CHARS)}"
        )
    return "## Tool calls in this turn\n" + "\n".join(lines)


def earlier_turns_block(turns: list[TranscriptTurn]) -> str:
    if not turns:
        return "## Earlier turns\n(none: this is the first turn)"
    parts = []
    for said in turns:
        tools = ", ".join(c.name for c in said.tool_calls) or "no tools"
        reply = _clip(said.response.strip(), MAX_EARLIER_REPLY_CHARS)
        parts.append(f"Turn {said.turn} user: {said.user_message}\n({tools})\nAgent: {reply}")
    return "## Earlier turns\n" + "\n\n".join(parts)


def turn_case(
    item: SuiteItem, transcript: Transcript, said: TranscriptTurn, truth: str = "before"
) -> str:
    """The turn judge's user message for one turn of the transcript."""
    turn = next(t for t in item.scenario.turns if t.turn == said.turn)
    earlier = [t for t in transcript.turns if t.turn < said.turn]
    exchange = [
        f"## This turn ({said.turn})\nUser message: {said.user_message}",
        tool_calls_block(said.tool_calls),
        f"## Agent reply\n{said.response}",
    ]
    truth_block = [ground_truth_block(item, turn)]
    ordered = truth_block + exchange if truth == "before" else exchange + truth_block
    return "\n\n".join([scenario_block(item), earlier_turns_block(earlier), *ordered])


def scenario_case(item: SuiteItem, transcript: Transcript, turns: list[TurnVerdict]) -> str:
    """The scenario judge's user message: the conversation with each turn's grades."""
    graded = {t.turn: t for t in turns}
    parts = [scenario_block(item)]
    for said, turn in zip(transcript.turns, item.scenario.turns, strict=False):
        verdict = graded.get(said.turn)
        lines = [
            f"## Turn {said.turn}",
            f"Objective: {turn.objective}",
            f"User: {said.user_message}",
            tool_calls_block(said.tool_calls).split("\n", 1)[1],
            f"Agent: {_clip(said.response.strip(), MAX_EARLIER_REPLY_CHARS)}",
        ]
        if said.simulator_fault:
            lines.append(f"(simulated user fault, not counted: {said.simulator_fault})")
        if verdict is not None:
            for dim in DIMENSIONS:
                score = verdict.scores.get(dim)
                shown = "not judged" if score is None else number(score)
                if score is not None and verdict.judged_by.get(dim) == "code":
                    shown += " (set by code)"
                lines.append(f"- {dim}: {shown}; {verdict.reasons.get(dim, '')}".rstrip("; "))
        parts.append("\n".join(lines))
    return "\n\n".join(parts)
