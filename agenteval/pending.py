"""What a run would send again: units with no usable transcript, or a status that may
succeed now (`run.retry_statuses`). Retrying is asked for by name (`agenteval retry`,
`agenteval run --resume`); the engine re-sends exactly these, and the commands list them."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from agenteval.layout import load_transcript
from agenteval.schema.suite import Suite
from agenteval.schema.transcript import Transcript


def is_retryable(stored: Transcript, retry_statuses: frozenset[str]) -> bool:
    """Run it again: a resumable stop, or a status that may succeed now (run.retry_statuses).
    Anything else, COMPLETED above all, is final and reused as it is."""
    return stored.resumable or stored.status in retry_statuses


def retry_summary(transcripts: list[Transcript], retry_statuses: frozenset[str]) -> str | None:
    """`2 ERRORED, 1 TIMEOUT (run.retry_statuses)`: the units a retry would send again, by
    status; None when there are none. Retrying is asked for by name (`agenteval retry`,
    `agenteval run --resume`), so a run says what there is to retry."""
    again = Counter(t.status for t in transcripts if is_retryable(t, retry_statuses))
    if not again:
        return None
    counts = ", ".join(f"{n} {status}" for status, n in sorted(again.items()))
    return f"{counts} (run.retry_statuses)"


@dataclass(frozen=True)
class Pending:
    """A unit that a run would send again, and why: no usable transcript, or its status."""

    scenario_id: str
    iteration: int
    reason: str

    def __str__(self) -> str:
        return f"{self.scenario_id}#{self.iteration}: {self.reason}"


def pending_units(suite: Suite, out: Path, retry_statuses: frozenset[str]) -> list[Pending]:
    """The units of `suite` whose stored transcript in `out` is missing, unreadable or
    retryable. Read from the files alone: a transcript made by another agent or scenario
    content is found stale only by a run (which builds the agent), and a run of inference
    after a change of its inputs re-sends those anyway."""
    found = []
    for item in suite.items:
        for iteration in range(suite.iterations):
            stored = load_transcript(out, item.scenario.id, iteration)
            if stored is None:
                reason = "no transcript"
            elif is_retryable(stored, retry_statuses):
                reason = stored.status + (f" ({stored.error})" if stored.error else "")
            else:
                continue
            found.append(Pending(item.scenario.id, iteration, reason))
    return found
