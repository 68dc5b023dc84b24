"""agenteval's judges as MLflow GenAI scorers, for `mlflow.genai.evaluate` on anyone's traces.

    from agenteval.tracking.scorers import agenteval_scorer
    mlflow.genai.evaluate(data=traces_or_rows, scorers=[agenteval_scorer("code")])

A scorer gets MLflow's (inputs, outputs, expectations, trace) and hands the judge what a run
would: a one-scenario `SuiteItem` whose judged turn carries the expectations as ground truth
(`expected_response` / `expected_answer`, `expected_facts` as phrases that must appear,
`expected_tools`, `guidelines` or `success_criteria`), and a transcript whose earlier turns
are the chat messages of the inputs and whose tool calls are the trace's TOOL spans. It
returns one feedback per scored dimension and the turn's verdict (pass: True), each sourced
to the judge by kind, model and configuration digest. A turn the judge cannot settle is a
feedback with an error, never a score: unmeasured is not failed.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agenteval.controls.run import DEFERRED, grade
from agenteval.fileio import digest_of
from agenteval.judges.base import Judge, make_judge
from agenteval.llm.scrub import Scrubber
from agenteval.params import load_params
from agenteval.schema.scenario import Scenario
from agenteval.schema.status import COMPLETED
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn
from agenteval.schema.verdict import Verdict
from agenteval.scoring import ScoringRules
from agenteval.tracking.assessments import judge_source
from agenteval.tracking.sessions import _reply, _text, _user_messages

if TYPE_CHECKING:
    from mlflow.entities import Feedback

EXPORTED = ("code", "hybrid", "llm")
ANSWER_KEYS = ("expected_response", "expected_answer")
CRITERIA_KEYS = ("success_criteria", "guidelines")
SEVERITY = "high"


def _ground_truth(expectations: Mapping[str, Any]) -> dict[str, Any]:
    truth: dict[str, Any] = {}
    for key in ANSWER_KEYS:
        if expectations.get(key) is not None:
            truth["expected_answer"] = _text(expectations[key])
    facts = expectations.get("expected_facts")
    if isinstance(facts, list) and facts:
        truth["expected_phrases"] = [str(f) for f in facts]
    return truth


def _criteria(expectations: Mapping[str, Any]) -> str | None:
    for key in CRITERIA_KEYS:
        value = expectations.get(key)
        if isinstance(value, list):
            return " ".join(str(v) for v in value)
        if value:
            return str(value)
    return None


def _exchanges(inputs: Any) -> tuple[list[tuple[str, str]], str]:
    """(earlier user/assistant exchanges, the judged user message) from MLflow's inputs."""
    said = _user_messages(inputs)
    earlier: list[tuple[str, str]] = []
    pending: str | None = None
    for m in said:
        if m.get("role") == "user":
            if pending is not None:
                earlier.append((pending, ""))
            pending = _text(m.get("content"))
        elif m.get("role") == "assistant" and pending is not None:
            earlier.append((pending, _text(m.get("content"))))
            pending = None
    if pending is None:
        pending = _text(inputs) if not said else ""
    return earlier, pending


def _tool_calls(trace: Any) -> list[ToolCall]:
    if trace is None:
        return []
    spans = sorted(
        (s for s in trace.data.spans if str(s.span_type) == "TOOL"), key=lambda s: s.start_time_ns
    )
    calls = []
    for s in spans:
        ok = str(s.status.status_code) != "ERROR"
        args = s.inputs if isinstance(s.inputs, dict) else {"input": s.inputs}
        error = None if ok else str(s.status.description or "error")
        calls.append(ToolCall(name=s.name, arguments=args, ok=ok, result=s.outputs, error=error))
    return calls


def case_of(
    inputs: Any, outputs: Any, expectations: Mapping[str, Any] | None, trace: Any
) -> tuple[SuiteItem, Transcript]:
    """MLflow's view of one traced reply as the (SuiteItem, Transcript) pair a run produces."""
    expected = dict(expectations or {})
    earlier, question = _exchanges(inputs)
    turns = [{"turn": n, "objective": u, "user_message": u} for n, (u, _) in enumerate(earlier, 1)]
    judged: dict[str, Any] = {
        "turn": len(turns) + 1,
        "objective": question,
        "user_message": question,
        "ground_truth": _ground_truth(expected),
        "success_criteria": _criteria(expected),
        "expected_tools": expected.get("expected_tools"),
    }
    turns.append({k: v for k, v in judged.items() if v is not None})
    case = {"inputs": inputs, "expectations": expected}
    scenario = Scenario.model_validate(
        {"id": "mlflow_" + digest_of(case)[:12], "category": "mlflow", "severity": SEVERITY,
         "persona": "power_user", "setup": {"index_documents": []}, "turns": turns}
    )  # fmt: skip
    item = SuiteItem(path="mlflow", digest=digest_of(scenario), scenario=scenario)
    reply = outputs if isinstance(outputs, str) else _reply(outputs)
    said = [TranscriptTurn(turn=n, user_message=u, response=r)
            for n, (u, r) in enumerate(earlier, 1)]  # fmt: skip
    said.append(TranscriptTurn(turn=len(said) + 1, user_message=question, response=reply,
                               tool_calls=_tool_calls(trace)))  # fmt: skip
    transcript = Transcript(
        scenario_id=scenario.id, scenario_digest=item.digest, status=COMPLETED,
        target=Participant(kind="mlflow"), simulator=Participant(kind="scripted"), turns=said,
    )  # fmt: skip
    return item, transcript


def feedback_of(verdict: Verdict, prefix: str, rules: ScoringRules) -> list[Feedback]:
    """The judged turn's verdict and dimension scores as MLflow feedback."""
    from mlflow.entities import Feedback

    judge, graded, scrub = verdict.judge, grade(verdict, rules), Scrubber()
    source = judge_source(judge, judge.kind)
    turn = verdict.turns[-1] if verdict.turns else None
    found = []
    if graded.verdict == DEFERRED:
        why = scrub.scrub_text(graded.deferral or "not judged")
        found.append(Feedback(name=prefix, error=f"deferred: {why}", source=source))
    else:
        failing = [d for d, s in graded.scores.items() if s is not None and s < 10]
        rationale = f"turn score {graded.score}; below full marks: {', '.join(failing) or 'none'}"
        found.append(Feedback(name=prefix, value=graded.verdict == "pass", rationale=rationale,
                              source=source))  # fmt: skip
    for dim, score in (turn.scores if turn else {}).items():
        if score is None or turn is None:
            continue
        kind = turn.judged_by.get(dim) or judge.kind
        reason = turn.reasons.get(dim)
        found.append(Feedback(name=f"{prefix}.{dim}", value=float(score), source=judge_source(
            judge, kind), rationale=scrub.scrub_text(reason) if reason else None))  # fmt: skip
    return found


def _judge(kind: str, params: Mapping[str, Any] | None, root: Path | None) -> tuple[Judge, Any]:
    chosen = copy.deepcopy(dict(params) if params is not None else load_params(None))
    chosen["judge"] = {**(chosen.get("judge") or {}), "kind": kind}
    return make_judge(chosen, root or Path.cwd()), chosen


def agenteval_scorer(
    kind: str = "code",
    params: Mapping[str, Any] | None = None,
    root: Path | None = None,
    name: str | None = None,
) -> Any:
    """An MLflow scorer that grades with agenteval's `kind` judge (code, hybrid or llm, the
    model ones configured by params `judge` as in any run)."""
    if kind not in EXPORTED:
        raise ValueError(f"judge.kind: {kind!r} is not one of {', '.join(EXPORTED)}")
    from mlflow.genai.scorers import scorer

    judge, chosen = _judge(kind, params, root)
    rules = ScoringRules.from_params(chosen["judge"])
    prefix = name or f"agenteval_{kind}"

    @scorer(name=prefix)
    def agenteval_judge(
        inputs: Any = None, outputs: Any = None, expectations: Any = None, trace: Any = None
    ) -> list[Feedback]:
        item, transcript = case_of(inputs, outputs, expectations, trace)
        verdict = asyncio.run(judge.judge(item, transcript))
        return feedback_of(verdict, prefix, rules)

    return agenteval_judge
