"""Thresholdout: answering repeated questions about the held split without overfitting it.

Dwork, Feldman, Hardt, Pitassi, Reingold & Roth, "The reusable holdout: Preserving validity in
adaptive data analysis", Science 349(6248), 2015 (the Thresholdout algorithm). For each query
the mechanism compares the training estimate with the holdout estimate: when they agree
within a noisy threshold it answers with the *training* value (the holdout taught nothing);
otherwise it answers with the holdout value plus Laplace noise and spends one unit of its
budget. With threshold T and noise rate sigma:

    T_hat = T + gamma,  gamma ~ Lap(2 sigma)              (drawn again after every overfit)
    per query: eta ~ Lap(4 sigma)
        |held - train| > T_hat + eta  ->  answer held + xi, xi ~ Lap(sigma); budget -= 1
        otherwise                     ->  answer train

Here a query is one round's paired improvement (mean per-scenario difference of candidate
and parent), so the held split speaks only when it disagrees with train. The mechanism also
counts every query (`max_queries`, the m its guarantees grow with as log m). Past either
limit the split is spent. Pure: the noise of draw k comes from numpy's generator seeded with
(seed, k), so a ledger saved after any query continues exactly where it stopped.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np


class HoldoutSpent(Exception):
    """The held split has answered all it may: a new salt (a fresh split) is needed."""


@dataclass(frozen=True)
class Answer:
    value: float
    source: Literal["train", "held"]
    noise: float  # xi added to the held value (0 when train answered)


@dataclass
class Thresholdout:
    threshold: float
    noise: float
    budget: int
    max_queries: int
    seed: int = 0
    queries: int = 0  # every query asked
    overfits: int = 0  # answers drawn from held: budget used
    draws: int = 0  # Laplace draws so far (the generator's position)
    gamma: float | None = None  # the current threshold noise

    def _laplace(self, scale: float) -> float:
        rng = np.random.default_rng([self.seed, self.draws])
        self.draws += 1
        return float(rng.laplace(0.0, scale)) if scale > 0 else 0.0

    def spent_reason(self) -> str | None:
        if self.queries >= self.max_queries:
            return f"{self.queries} of {self.max_queries} held queries used"
        if self.overfits >= self.budget:
            return (
                f"Thresholdout's budget is used: held disagreed with train {self.overfits} "
                f"time(s) of {self.budget}"
            )
        return None

    def query(self, train: float, held: float) -> Answer:
        """Answer one query; raises HoldoutSpent when the split has nothing left to give."""
        reason = self.spent_reason()
        if reason is not None:
            raise HoldoutSpent(reason)
        if self.gamma is None:
            self.gamma = self._laplace(2 * self.noise)
        self.queries += 1
        eta = self._laplace(4 * self.noise)
        if abs(held - train) > self.threshold + self.gamma + eta:
            xi = self._laplace(self.noise)
            self.overfits += 1
            self.gamma = self._laplace(2 * self.noise)
            return Answer(held + xi, "held", xi)
        return Answer(train, "train", 0.0)

    def state(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> Thresholdout:
        return cls(**state)
