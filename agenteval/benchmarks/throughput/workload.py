"""The email-triage workload: the pinned emails, the prompt, and reading a label back.

A reply's label is read from its `LABEL:` line: exactly one of the six labels must appear
there. A line naming two labels ("urgent or billing") is a list of candidates, not an
answer, and is graded `ambiguous`; no such line, or no label on it, is `unparsed`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from agenteval.benchmarks.throughput.records import TRIAGE_LABELS, TriageEmail, TriageWorkload
from agenteval.fileio import digest_of, sha256_file
from agenteval.schema.input_error import InputError
from agenteval.schema.located import Located, load_located
from agenteval.schema.problems import Problem

LABEL_LINE = re.compile(r"label\s*[:=\-]\s*(.*)", re.IGNORECASE)
LABEL_WORD = re.compile(r"\b(" + "|".join(TRIAGE_LABELS) + r")\b", re.IGNORECASE)


class WorkloadError(InputError, ValueError):
    """Problems of the throughput workload."""

    separator = "; "


@dataclass(frozen=True)
class Workload:
    emails: list[TriageEmail]
    prompt: str
    digest: str  # of the emails, labels and prompt: a baseline on other work is refused


def load_workload(root: Path, emails_file: str, prompt_file: str, ids: list[str]) -> Workload:
    path = root / emails_file
    located = load_located(path, emails_file)
    if not isinstance(located, Located):
        raise WorkloadError([located])
    try:
        workload = TriageWorkload.model_validate(located.data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            where = ".".join(str(p) for p in error["loc"])
            line = located.line(error["loc"])
            problems.append(Problem(emails_file, line, f"{where}: {error['msg']}"))
        raise WorkloadError(problems) from None
    known = [e.id for e in workload.emails]
    if len(set(known)) != len(known):
        doubled = sorted({i for i in known if known.count(i) > 1})
        raise WorkloadError([Problem(emails_file, 1, f"email ids repeated: {doubled}")])
    unknown = sorted(set(ids) - set(known))
    if unknown:
        raise WorkloadError([Problem(emails_file, 1, f"throughput.ids not in the file: {unknown}")])
    chosen = [e for e in workload.emails if not ids or e.id in ids]
    prompt = (root / prompt_file).read_text(encoding="utf-8")
    digest = digest_of(
        {"emails": [e.model_dump() for e in chosen], "prompt": sha256_file(root / prompt_file)}
    )
    return Workload(chosen, prompt, digest)


def messages_for(email: TriageEmail, prompt: str) -> list[dict[str, str]]:
    text = f"From: {email.sender}\nSubject: {email.subject}\n\n{email.body.strip()}"
    return [{"role": "system", "content": prompt}, {"role": "user", "content": text}]


def read_label(reply: str) -> str:
    """The label a reply commits to, or `unparsed` / `ambiguous`."""
    for line in reply.splitlines():
        found = LABEL_LINE.search(line)
        if found is None:
            continue
        named = {w.lower() for w in LABEL_WORD.findall(found.group(1))}
        if len(named) == 1:
            return str(named.pop())
        return "ambiguous" if named else "unparsed"
    return "unparsed"
