"""Judging a QA attempt: the code pre-check first, then the A/B/C protocol on a model judge.

Only A counts as correct. A judge reply is read strictly: it must commit to exactly one of
A, B or C (a bare letter, `A — CORRECT`, `Verdict: B`, or {"verdict": "C"}); anything
else is re-asked a bounded number of times and then recorded as `unparsed` — never as a
letter. The judge must be a different model from the one under test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agenteval.benchmarks.answers import Check, final_answer, precheck
from agenteval.benchmarks.model_judge import judge_setup
from agenteval.benchmarks.qa.records import QAVerdict
from agenteval.benchmarks.questions import QATask
from agenteval.fileio import digest_of
from agenteval.llm import AssistantMessage, LLMError, Message, QuotaExhausted, UserMessage
from agenteval.llm.config import sum_usage
from agenteval.schema.status import COMPLETED, Status
from agenteval.schema.transcript import Transcript

ROLE = "qa.judge"
REASK = "Reply with exactly one letter: A, B or C."
LETTER_ONLY = re.compile(r"^[\s*_`(\[]*([ABC])[\s*_`)\].!]*$")
LEADING = re.compile(r"^[\s*_`(\[]*([ABC])[*_`)\]]*\s*(?:[:.)\]—–-]|\n|$)")
LABELLED = re.compile(
    r"\b(?:final verdict|verdict|grade|classification|label)\s*(?:is\s*)?[:=]?\s*"
    r"[*_`(\[]*([ABC])(?![A-Za-z0-9])",
    re.IGNORECASE,
)
JSON_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_verdict(text: str) -> str | None:
    """The one letter a judge reply commits to, or None when it names none or several."""
    found: set[str] = set()
    for blob in JSON_OBJECT.findall(text):
        try:
            value = json.loads(blob)
        except ValueError:
            continue
        letter = value.get("verdict") if isinstance(value, dict) else None
        if isinstance(letter, str) and letter.strip() in ("A", "B", "C"):
            found.add(letter.strip())
    stripped = text.strip()
    for pattern in (LETTER_ONLY, LEADING):
        match = pattern.match(stripped)
        if match:
            found.add(match.group(1))
    found.update(m.group(1).upper() for m in LABELLED.finditer(text))
    return found.pop() if len(found) == 1 else None


class QAJudge:
    def __init__(self, params: Mapping[str, Any], root: Path) -> None:
        setup = judge_setup(
            params, root, role=ROLE, offline="precheck", default_prompt=None, module=__name__
        )
        self.kind, self.max_attempts = setup.kind, setup.max_attempts
        self.config, self.prompt = setup.config, setup.prompt
        self.participant = setup.participant

    def blank(self, task: QATask, transcript: Transcript) -> QAVerdict:
        return QAVerdict(
            task_id=task.id,
            attempt=transcript.iteration,
            task_digest=digest_of(task),
            transcript_digest=digest_of(transcript),
            judge=self.participant,
            status="unavailable",
        )

    async def grade(self, task: QATask, transcript: Transcript) -> QAVerdict:
        verdict = self.blank(task, transcript)
        if transcript.status != COMPLETED or not transcript.turns:
            skipped = transcript.status == Status.SKIPPED_NO_DOCUMENT
            verdict.status = "unavailable" if skipped else "error"
            verdict.reason = f"{transcript.status}: {transcript.error or 'no reply'}"
            return verdict
        verdict.answer = final_answer(transcript.turns[-1].response)
        check = precheck(verdict.answer, task.answer, task.aliases, task.question)
        if check.letter is not None and (check.firm or self.config is None):
            return _settled(verdict, check)
        if self.config is None:
            verdict.rule = check.rule
            verdict.reason = "the pre-check cannot settle it and qa.judge.kind is precheck"
            return verdict
        verdict.rule = check.rule
        await self._ask(task, verdict, transcript.iteration)
        scrubbed = self.config.endpoint.scrubber().scrub(verdict.model_dump(mode="json"))
        return QAVerdict.model_validate(scrubbed)

    async def _ask(self, task: QATask, verdict: QAVerdict, attempt: int) -> None:
        assert self.config is not None and self.prompt is not None
        truth = task.answer + (
            f" (also accepted: {'; '.join(task.aliases)})" if task.aliases else ""
        )
        case = self.prompt.render(
            {"question": task.question, "truth": truth, "answer": verdict.answer or ""}
        )
        messages: list[Message] = [UserMessage(content=case)]
        client = await self.config.client()
        completions = []
        verdict.source = "judge"
        try:
            for _ in range(self.max_attempts):
                completion = await client.complete(messages, iteration=attempt)
                completions.append(completion)
                verdict.judge_replies.append(completion.text)
                letter = parse_verdict(completion.text)
                if letter is not None:
                    verdict.status, verdict.verdict = "evaluated", letter  # type: ignore[assignment]
                    return
                messages += [AssistantMessage(content=completion.text), UserMessage(content=REASK)]
            verdict.status, verdict.verdict = "unavailable", "unparsed"
            verdict.reason = f"no single A/B/C letter in {self.max_attempts} judge reply(ies)"
        except QuotaExhausted:
            raise  # judging stops and resumes later; no verdict is recorded
        except LLMError as exc:
            verdict.status, verdict.reason = "error", f"{type(exc).__name__}: {exc}"
        finally:
            verdict.usage = sum_usage(completions)


def _settled(verdict: QAVerdict, check: Check) -> QAVerdict:
    verdict.status, verdict.source, verdict.rule = "evaluated", "precheck", check.rule
    verdict.verdict = check.letter  # type: ignore[assignment]
    return verdict
