"""Which conversations of a run become MLflow traces (`tracking.traces`, `tracking.trace_sample`).

    policy = trace_policy(params["tracking"])
    chosen = policy.choose(card.scenarios)        # {(scenario id, iteration), ...}
    note = policy.describe(card.scenarios, chosen)

A trace costs MLflow ~25 ms of CPU however little it holds (docs/performance.md), so a large
run traces what a reader opens: every conversation that did not PASS and a sample of the
passing ones. The sample is the `trace_sample` passing conversations with the smallest salted
sha256 of (scenario id, iteration): the same scenarios in every run, so two runs of one suite
are compared on the same examples, and a run with fewer passing conversations than that is
traced whole. Every verdict, traced or not, is in the run's verdict table
(`tracking.verdicts`). Pure: nothing here imports MLflow.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval.schema.params import LEGACY_TRACES, TRACE_MODES, TrackingParams
from agenteval.schema.scorecard import ScenarioResult, Scorecard
from agenteval.schema.status import Status

POLICY_TAG = "agenteval.traces"  # the policy in force, e.g. "sample:50"
TRACED_TAG = "agenteval.traced"  # "<traced> of <conversations>"
SAMPLE_SALT = "agenteval-trace-sample-1"  # a new salt draws another sample

Key = tuple[str, int]  # (scenario id, iteration)


@dataclass(frozen=True)
class TracePolicy:
    mode: str  # one of TRACE_MODES
    sample: int  # passing conversations traced under `sample`

    def choose(self, results: Iterable[ScenarioResult]) -> set[Key]:
        """The conversations to trace."""
        found = list(results)
        if self.mode == "all":
            return {(r.id, r.iteration) for r in found}
        if self.mode == "none":
            return set()
        chosen = {(r.id, r.iteration) for r in found if r.status != Status.PASS}
        if self.mode == "sample":
            passing = [(r.id, r.iteration) for r in found if r.status == Status.PASS]
            chosen |= set(sorted(passing, key=sample_rank)[: self.sample])
        return chosen

    @property
    def tag(self) -> str:
        return f"sample:{self.sample}" if self.mode == "sample" else self.mode

    def describe(self, results: Sequence[ScenarioResult], chosen: set[Key]) -> str:
        """One line for the run's description: what is traced, and that the rest is not."""
        total = len(results)
        passing = sum(r.status == Status.PASS for r in results)
        traced_pass = sum((r.id, r.iteration) in chosen for r in results if r.status == "PASS")
        head = f"Traces ({POLICY_TAG}={self.tag}): {len(chosen)} of {total} conversations"
        if self.mode == "none":
            return f"{head}; none traced."
        if len(chosen) == total:
            return f"{head}, every one."
        if self.mode == "failures":
            why = f"every conversation not PASS, none of the {passing} PASS"
        else:
            why = (
                f"every conversation not PASS and {traced_pass} of {passing} PASS "
                "(a fixed hash sample: the same scenarios in every run)"
            )
        return f"{head}: {why}. A SAMPLE, not the whole run: every verdict is in verdicts.json."


def policy_tags(policy: TracePolicy, card: Scorecard, chosen: set[Key]) -> dict[str, str]:
    """The run's tags saying which policy traced how many of its conversations."""
    return {POLICY_TAG: policy.tag, TRACED_TAG: f"{len(chosen)} of {len(card.scenarios)}"}


def sample_rank(key: Key) -> str:
    """Order of the passing conversations in the sample: a salted hash, stable across runs."""
    scenario, iteration = key
    return hashlib.sha256(f"{SAMPLE_SALT}\0{scenario}\0{iteration}".encode()).hexdigest()


def trace_policy(section: Mapping[str, Any], override: str | bool | None = None) -> TracePolicy:
    """The policy of a `tracking` params section; `override` (a mode, or the older true /
    false) wins over its `traces` key."""
    defaults = TrackingParams.model_fields
    mode: Any = section.get("traces", defaults["traces"].default) if override is None else override
    if isinstance(mode, bool):
        mode = LEGACY_TRACES[mode]
    if mode not in TRACE_MODES:
        raise ValueError(f"tracking.traces: {mode!r} is not one of {', '.join(TRACE_MODES)}")
    sample = section.get("trace_sample", defaults["trace_sample"].default)
    return TracePolicy(str(mode), int(sample))
