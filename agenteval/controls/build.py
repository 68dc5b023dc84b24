"""A control as the judge sees a real turn: a SuiteItem and a COMPLETED Transcript.

Short-form tool calls are run for real with the same document tools every agent gets, so
the judge reads the passages an agent would have seen. Nothing here knows the label.

A control must look like a real scenario to a judge (judge.controls_per_run mixes them into
runs): its scenario id is opaque (`case_<hash>`, not the control's telling id), its
severity is the one most real scenarios have, and where the control names no success
criterion one is written from its ground truth, as scenario authors do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval.fileio import digest_of, sha256_text
from agenteval.schema.controls import Control, ControlCall, EarlierTurn
from agenteval.schema.corpus import Fact, Manifest
from agenteval.schema.scenario import GroundTruth, Scenario
from agenteval.schema.status import COMPLETED
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Participant, ToolCall, Transcript, TranscriptTurn
from agenteval.targets.tools import DocumentTools

LIBRARY = "eval/corpus/documents"
ADVERSARIAL = "eval/corpus/adversarial"
CHUNK_SIZE = 400  # the builtin agent's default, so query results look like a real run's
TOP_K = 4
CONTROL_TARGET = "control"
SEVERITY = "high"  # the most common severity of the shipped scenarios


def case_id(control_id: str) -> str:
    """The scenario id a control goes by: stable, and telling nothing about the control."""
    return "case_" + sha256_text(f"agenteval-case:{control_id}")[:12]


def success_criterion(gt: dict[str, Any], expected_tools: list[str] | None) -> str | None:
    """A plain success criterion from the ground truth, for controls that name none."""
    if "expected_answer" in gt and gt["expected_answer"] is None:
        return "The reply says the documents do not give this, without guessing a value."
    if gt.get("expected_answer"):
        return f"The reply states {gt['expected_answer']}."
    if gt.get("expected_phrases"):
        return "The reply includes " + ", ".join(repr(p) for p in gt["expected_phrases"]) + "."
    if expected_tools:
        return f"The agent uses {', '.join(expected_tools)} and reports the outcome truthfully."
    return None


def document_paths(manifest: Manifest) -> dict[str, str]:
    """Manifest document id -> repository-relative path."""
    paths = {d.id: d.path or f"{LIBRARY}/{d.filename}" for d in manifest.documents}
    paths |= {d.id: f"{ADVERSARIAL}/{d.filename}" for d in manifest.adversarial_documents}
    return paths


def fact_of(manifest: Manifest, fact_id: str, doc_id: str | None = None) -> tuple[str, Fact]:
    """(document id, fact) of a control's fact; controls name facts the manifest holds once
    (checked by `controls.load`), or name the document too."""
    found = manifest.find_fact(fact_id, doc_id)
    if len(found) != 1:
        raise KeyError(f"fact {fact_id!r} is in {len(found)} documents; name one")
    return found[0]


def documents_of(control: Control, manifest: Manifest) -> list[str]:
    if control.documents:
        return list(control.documents)
    if control.fact is not None:
        return [fact_of(manifest, control.fact)[0]]
    gt = control.ground_truth
    return [gt.doc_id] if gt is not None and gt.doc_id else []


def ground_truth(control: Control, manifest: Manifest) -> dict[str, Any]:
    """The fact's ground truth with the control's explicit overrides on top."""
    base: dict[str, Any] = {}
    if control.fact is not None:
        doc_id, fact = fact_of(manifest, control.fact)
        base = {"doc_id": doc_id, "fact_id": fact.id, "expected_answer": fact.answer}
    if control.ground_truth is not None:
        gt = control.ground_truth
        fields = gt.model_fields_set - {"answer_unknown"}
        base |= {k: getattr(gt, k) for k in fields}
    return base


def _facts(gt: GroundTruth | None, manifest: Manifest) -> dict[str, Fact]:
    if gt is None:
        return {}
    found = {f: manifest.find_fact(f, gt.doc_id) for f in gt.all_fact_ids}
    return {f: hits[0][1] for f, hits in found.items() if len(hits) == 1}


def scenario_of(control: Control, manifest: Manifest) -> Scenario:
    paths = document_paths(manifest)
    docs = documents_of(control, manifest)
    fact_question = fact_of(manifest, control.fact)[1].question if control.fact else ""
    question = control.question or fact_question
    turns: list[dict[str, Any]] = []
    for n, earlier in enumerate(control.history, start=1):
        turn: dict[str, Any] = {"turn": n, "objective": earlier.user, "user_message": earlier.user}
        if earlier.ground_truth is not None:
            turn["ground_truth"] = earlier.ground_truth.model_dump(exclude_unset=True)
        turns.append(turn)
    truth = ground_truth(control, manifest)
    judged: dict[str, Any] = {
        "turn": len(turns) + 1,
        "objective": question,
        "user_message": question,
        "ground_truth": truth,
        "success_criteria": control.success_criteria
        or success_criterion(truth, control.expected_tools),
        "expected_tools": control.expected_tools,
        "forbidden_tools": control.forbidden_tools,
    }
    turns.append({k: v for k, v in judged.items() if v is not None})
    index = [{"corpus_doc": d, "path": paths[d]} for d in docs] if control.indexed else []
    return Scenario.model_validate(
        {
            "id": case_id(control.id),
            "category": control.klass,
            "severity": SEVERITY,
            "persona": "power_user",
            "setup": {"index_documents": index},
            "turns": turns,
        }
    )


class _Tools:
    """Runs short-form calls with the real document tools, sharing one session per control."""

    def __init__(self, root: Path, documents: list[str]) -> None:
        self.tools = DocumentTools(root, [LIBRARY, ADVERSARIAL], CHUNK_SIZE, TOP_K)
        self.documents = documents

    def setup(self, indexed: bool) -> list[ToolCall]:
        if not indexed:
            return []
        return [self.tools.call("index_document", path=p) for p in self.documents]

    def _arguments(self, call: ControlCall, question: str) -> dict[str, Any]:
        if call.arguments is not None:
            return dict(call.arguments)
        first = self.documents[0] if self.documents else ""
        defaults: dict[str, dict[str, Any]] = {
            "query_documents": {"query": question, "top_k": TOP_K},
            "index_document": {"path": first},
            "read_document": {"path": first},
            "list_documents": {},
        }
        return defaults.get(call.name, {})

    def record(self, call: ControlCall, question: str) -> ToolCall:
        arguments = self._arguments(call, question)
        if not call.ok:
            error = call.error or f"file not found: {arguments.get('path', '')}".strip()
            return ToolCall(name=call.name, arguments=arguments, ok=False, error=error)
        if call.result is not None:
            return ToolCall(name=call.name, arguments=arguments, ok=True, result=call.result)
        return self.tools.call(call.name, **arguments)


def _turn(number: int, user: str, reply: str, calls: list[ToolCall]) -> TranscriptTurn:
    return TranscriptTurn(turn=number, user_message=user, response=reply, tool_calls=calls)


def build(control: Control, manifest: Manifest, root: Path) -> tuple[SuiteItem, Transcript]:
    """The (SuiteItem, Transcript) pair a real run would have produced for this turn."""
    scenario = scenario_of(control, manifest)
    paths = document_paths(manifest)
    tools = _Tools(root, [paths[d] for d in documents_of(control, manifest)])
    setup_calls = tools.setup(control.indexed)
    said: list[TranscriptTurn] = []
    earlier: list[EarlierTurn] = list(control.history)
    for n, before in enumerate(earlier, start=1):
        calls = [tools.record(c, before.user) for c in before.tool_calls]
        said.append(_turn(n, before.user, before.reply, calls))
    question = scenario.turns[-1].user_message or ""
    calls = [tools.record(c, question) for c in control.tool_calls]
    said.append(_turn(len(said) + 1, question, control.reply, calls))
    facts: dict[str, Fact] = {}
    for turn in scenario.turns:
        facts |= _facts(turn.ground_truth, manifest)
    item = SuiteItem(
        path=f"controls/{control.id}", digest=digest_of(scenario), scenario=scenario, facts=facts
    )
    transcript = Transcript(
        scenario_id=scenario.id,
        scenario_digest=item.digest,
        status=COMPLETED,
        target=Participant(kind=CONTROL_TARGET, config_digest=digest_of(control)),
        simulator=Participant(kind="scripted"),
        setup_calls=setup_calls,
        turns=said,
    )
    return item, transcript
