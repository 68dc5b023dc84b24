"""Self-consistency: one transcript judged K times (`judge.repeats`), one verdict kept.

A stochastic judge can grade the same reply PASS once and FAIL the next time; judging it
K times measures that (each sample gets its own response-cache slot, so the samples are
independent). The stored verdict is the first sample, or with `judge.majority: true` the
majority status's sample with the median score. A tie between PASS and FAIL keeps FAIL:
a judge that cannot make up its mind does not pass a reply. Every sample's status and
score stay in `Verdict.samples` for the scorecard's flip rate and score SEM.
"""

from __future__ import annotations

from typing import Any

from agenteval.fileio import digest_of
from agenteval.judges.protocol import Judge
from agenteval.schema.status import Status
from agenteval.schema.suite import SuiteItem
from agenteval.schema.transcript import Transcript, Usage
from agenteval.schema.verdict import Sample, Verdict
from agenteval.scoring import ScenarioInfo, ScoringRules, score_scenario

# Which status wins a tie, most cautious first.
TIE_ORDER = (Status.FAIL, Status.BLOCKED_BY_ARCHITECTURE, Status.PASS)


def kept_index(samples: list[Sample], majority: bool) -> int:
    """The sample a repeated judgment keeps (see the module docstring)."""
    if not majority:
        return 0
    counts = {s: sum(x.status == s for x in samples) for s in TIE_ORDER}
    if not any(counts.values()):
        return 0  # nothing judged: keep the first, whatever went wrong with it
    top = max(counts.values())
    winner = next(s for s in TIE_ORDER if counts[s] == top)
    chosen = [i for i, x in enumerate(samples) if x.status == winner]
    chosen.sort(key=lambda i: -1.0 if samples[i].score is None else float(samples[i].score or 0))
    return chosen[(len(chosen) - 1) // 2]  # the lower median


def add_usage(verdicts: list[Verdict]) -> Usage | None:
    used = [v.usage for v in verdicts if v.usage is not None]
    if not used:
        return None
    fields = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    total = Usage(**{f: sum(getattr(u, f) or 0 for u in used) for f in fields})
    costs = [u.cost_usd for u in used]
    # One unknown cost makes the total unknown: a partial sum would read as the full price.
    total.cost_usd = None if None in costs else round(sum(c or 0.0 for c in costs), 8)
    sources = {u.cost_source for u in used if u.cost_source}
    total.cost_source = "estimated" if "estimated" in sources else next(iter(sources), None)
    return total


class RepeatedJudge:
    def __init__(self, inner: Judge, repeats: int, majority: bool, rules: ScoringRules) -> None:
        if repeats < 2:
            raise ValueError("judge.repeats must be at least 2 to repeat")
        self.inner, self.repeats, self.majority, self.rules = inner, repeats, majority, rules
        base = inner.participant
        settings = {"repeats": repeats, "majority": majority}
        self.participant = base.model_copy(
            update={
                "config_digest": digest_of({"judge": base.config_digest, **settings}),
                "details": {**base.details, **settings},
            }
        )

    async def judge(self, item: SuiteItem, transcript: Transcript, sample: int = 0) -> Verdict:
        # One sample after the other: run.concurrency bounds requests in flight, and
        # repeats must not multiply it.
        verdicts = [
            await self.inner.judge(item, transcript, sample * self.repeats + r)
            for r in range(self.repeats)
        ]
        s = item.scenario
        info = ScenarioInfo(s.id, s.category, s.severity, len(s.turns), item.digest)
        samples = []
        for verdict in verdicts:
            result = score_scenario(info, transcript.status, verdict, self.rules)
            samples.append(Sample(status=result.status, score=result.score))
        index = kept_index(samples, self.majority)
        samples[index].kept = True
        attempts = [v.judge_attempts for v in verdicts if v.judge_attempts is not None]
        return verdicts[index].model_copy(
            update={
                "judge": self.participant,
                "samples": samples,
                "usage": add_usage(verdicts),
                "judge_attempts": sum(attempts) if attempts else None,
            }
        )


def repeated(judge: Judge, params: dict[str, Any]) -> Judge:
    """The configured judge, repeated when judge.repeats >= 2."""
    section = params.get("judge") or {}
    k = int(section.get("repeats") or 1)
    if k < 2:
        return judge
    rules = ScoringRules.from_params(section)
    wrapped: Judge = RepeatedJudge(judge, k, bool(section.get("majority")), rules)
    return wrapped
