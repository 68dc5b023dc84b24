"""The keep rule: train better beyond noise AND held judged through Thresholdout.

The unit is the scenario: its pass share is PASS iterations over iterations run, so an edit
that turns failures into unmeasured runs (NOT_JUDGED, errors) gains nothing. Candidate and
parent are paired by scenario (same ids, same seeds); the differences' one-sided lower bound
at `conf` is the t bound mean - t_{conf, n-1} * s / sqrt(n), which is the low end of the
two-sided (2 conf - 1) interval of `stats.mean_ci`.

    keep  <=>  train.low > 0  and  held bound > floor

where the held bound is computed from what Thresholdout releases: when held agrees with
train the answer is train's own estimate (and its bound), otherwise the held estimate plus
the mechanism's noise, with the held interval's half-width below it. The floor depends on
the edit (`KeepRule`): a knob edit must leave held non-inferior (floor -`climb.margin`); a
free-text edit - a prompt, a phrasing, where memorised answers would hide - must improve
held beyond noise (floor `climb.text_gain`, 0 by default), and its bound also gives up what
the answer cannot rule out: Thresholdout's threshold T when train answered (held is only
known to lie within T of train, so a train gain below T says nothing of held) and the
mechanism's Laplace noise at `conf` when held answered. An edit that helps train alone is not
kept.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agenteval.climb.artifacts import PARAMS_FILE, Change, Spec
from agenteval.climb.holdout import Answer, Thresholdout
from agenteval.schema.scorecard import Scorecard
from agenteval.schema.status import Status
from agenteval.stats import mean_ci

JUDGED = (Status.PASS, Status.FAIL, Status.BLOCKED_BY_ARCHITECTURE)


def pass_shares(card: Scorecard, ids: Sequence[str]) -> dict[str, float]:
    """{scenario: PASS iterations / iterations run}; a scenario never run counts 0."""
    runs: dict[str, list[bool]] = {sid: [] for sid in ids}
    for result in card.scenarios:
        if result.id in runs:
            runs[result.id].append(result.status == Status.PASS)
    return {sid: (sum(v) / len(v) if v else 0.0) for sid, v in runs.items()}


def judged_pass_rate(card: Scorecard, ids: Sequence[str]) -> float | None:
    wanted = set(ids)
    judged = [r for r in card.scenarios if r.id in wanted and r.status in JUDGED]
    return sum(r.status == Status.PASS for r in judged) / len(judged) if judged else None


def lower_bound(diffs: Sequence[float], conf: float) -> float:
    """One-sided `conf` lower bound of the mean (Student t); the mean itself without spread."""
    return mean_ci(list(diffs), conf=2 * conf - 1, method="t").low


@dataclass(frozen=True)
class Delta:
    """Candidate minus parent over one split."""

    mean: float  # mean per-scenario pass-share difference
    low: float  # its one-sided lower bound
    n: int
    parent: float  # mean pass share
    candidate: float
    parent_judged: float | None  # judged pass rate (PASS / judged iterations)
    candidate_judged: float | None
    improved: list[str]
    worsened: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def paired_delta(parent: Scorecard, candidate: Scorecard, ids: Sequence[str], conf: float) -> Delta:
    if len(ids) < 2:
        raise ValueError(f"a paired bound needs at least 2 scenarios, got {len(ids)}")
    before, after = pass_shares(parent, ids), pass_shares(candidate, ids)
    diffs = [after[s] - before[s] for s in ids]
    mean = sum(diffs) / len(diffs)
    return Delta(
        mean=round(mean, 6),
        low=round(lower_bound(diffs, conf), 6),
        n=len(ids),
        parent=round(sum(before.values()) / len(ids), 6),
        candidate=round(sum(after.values()) / len(ids), 6),
        parent_judged=judged_pass_rate(parent, ids),
        candidate_judged=judged_pass_rate(candidate, ids),
        improved=sorted(s for s, d in zip(ids, diffs, strict=True) if d > 0),
        worsened=sorted(s for s, d in zip(ids, diffs, strict=True) if d < 0),
    )


def train_improves(train: Delta) -> bool:
    return train.low > 0


@dataclass(frozen=True)
class KeepRule:
    """What held must show for an edit of one kind to be kept."""

    name: str  # knob | free text
    floor: float  # the held bound must exceed this
    demand: str  # what passing means, for the round's reason
    # Improvement must clear what the released answer cannot rule out: Thresholdout's
    # threshold when train answered (held is only known to be within it), the mechanism's
    # Laplace noise at `conf` when held answered. Non-inferiority does not ask for it.
    beyond_mechanism: bool = False

    def describe(self, bound: float) -> str:
        """ "held improved beyond noise (free text rule: bound +0.031 > +0.000)" or "held is
        not ..." when the bound does not clear the floor."""
        passed = bound > self.floor
        sign = ">" if passed else "<="
        verdict = "held" if passed else "held is not"
        rule = f"{self.name} rule: bound {bound:+.3f} {sign} {self.floor:+.3f}"
        return f"{verdict} {self.demand} ({rule})"


def keep_rule(change: Change, spec: Spec, climb: Mapping[str, Any]) -> KeepRule:
    """The knob rule for an edit that only moves knobs, the free-text rule for anything else."""
    knob_only = bool(spec.knobs) and all(
        path == PARAMS_FILE for path, (old, new) in change.files.items() if old != new
    )
    if knob_only:
        return KeepRule("knob", -float(climb["margin"]), "non-inferior")
    return KeepRule("free text", float(climb["text_gain"]), "improved beyond noise", True)


@dataclass(frozen=True)
class HeldVerdict:
    released: float  # what Thresholdout answered
    source: str  # train | held
    bound: float  # the bound computed from the answer
    kept: bool  # the bound clears the rule's floor
    rule: str
    allowance: float  # taken off for the mechanism (free-text rule), 0 otherwise


def laplace_quantile(scale: float, conf: float) -> float:
    """The one-sided `conf` quantile of Laplace(0, scale): scale * ln(1 / (2 (1 - conf)))."""
    return scale * math.log(1 / (2 * (1 - conf))) if scale > 0 else 0.0


def held_verdict(
    train: Delta, held: Delta, mechanism: Thresholdout, rule: KeepRule, conf: float
) -> HeldVerdict:
    """One held query (counted, maybe spending budget; raises HoldoutSpent when spent)."""
    answer: Answer = mechanism.query(train.mean, held.mean)
    source = train if answer.source == "train" else held
    allowance = 0.0
    if rule.beyond_mechanism:
        by_train = answer.source == "train"
        allowance = mechanism.threshold if by_train else laplace_quantile(mechanism.noise, conf)
    bound = round(answer.value - (source.mean - source.low) - allowance, 6)
    return HeldVerdict(round(answer.value, 6), answer.source, bound, bound > rule.floor,
                       rule.name, round(allowance, 6))  # fmt: skip
