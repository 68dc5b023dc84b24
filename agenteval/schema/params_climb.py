"""params.yaml's `climb` section: hillclimbing, its reusable holdout, guard and proposers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agenteval.schema.params_base import EndpointFields, _Section


class HoldoutParams(_Section):
    """`climb.holdout`: Thresholdout (Dwork et al. 2015) guarding the held split's reuse."""

    max_queries: int = Field(
        24, ge=1, description="Held queries the split allows, every one counted; then spent."
    )
    budget: int = Field(
        6,
        ge=1,
        description="Thresholdout's budget B: answers drawn from held (train and held "
        "disagreed); then spent.",
    )
    threshold: float = Field(
        0.1, gt=0, le=1, description="Thresholdout's T: train-held gap taken as sampling noise."
    )
    noise: float = Field(
        0.01, ge=0, le=1, description="Thresholdout's sigma: Laplace scale of its noise."
    )
    seed: int = Field(0, description="Seeds the mechanism's noise (a session replays).")
    # No ledger path: the ledger is eval/climb/holdout_ledger.jsonl, keyed by the held
    # split's content (agenteval.climb.ledger); these limits are fixed when a split opens.


class GuardParams(_Section):
    """`climb.guard`: how near a scenario question an edit's sentence may come."""

    similarity: float = Field(
        0.6,
        gt=0,
        le=1,
        description="Share of a scenario question's BM25 weight one sentence of an edit may "
        "carry before it is refused as that question asked again (tuned on the dev split of "
        "eval/climb/guard_controls.yaml: agenteval climb guard-check).",
    )


class ProposerEndpoint(EndpointFields):
    """`climb.llm`: the endpoint of the llm proposer (sees train failures only)."""

    params: dict[str, Any] | None = Field(None, description="Request fields.")
    prompt: str = Field(
        "eval/prompts/climb_proposer.md", description="The proposer's instructions."
    )
    max_attempts: int = Field(2, ge=1, description="Model calls per round incl. re-asks.")


class ClimbParams(_Section):
    """`agenteval climb`: hillclimb sessions with a train / held / test split."""

    proposer: Literal["search", "llm"] = Field(
        "search", description="search (optuna over the agent's numeric knobs) | llm"
    )
    rounds: int = Field(12, ge=1, description="Most edits proposed in one session.")
    patience: int = Field(2, ge=1, description="Stop after this many flat rounds in a row.")
    iterations: int = Field(3, ge=3, description="Repeats per scenario in every evaluation.")
    conf: float = Field(0.95, gt=0.5, lt=1, description="One-sided confidence of the bounds.")
    margin: float = Field(
        0.05, ge=0, le=1, description="Held non-inferiority margin on the per-scenario pass share."
    )
    text_gain: float = Field(
        0.0,
        ge=0,
        le=1,
        description="A free-text edit is kept only when its held bound exceeds this (held "
        "improves beyond noise); a knob edit when it exceeds -margin (non-inferior).",
    )
    holdout: HoldoutParams = Field(default_factory=HoldoutParams)
    guard: GuardParams = Field(default_factory=GuardParams)
    repro: bool = Field(
        True, description="Run `dvc repro` and commit its outputs with every kept round."
    )
    branch: str | None = Field(None, description="Scratch branch; null: climb/<time>.")
    seed: int = Field(0, description="Seeds the search proposer's sampler.")
    search_trials: int = Field(
        12, ge=1, description="search: new single-knob moves tried on train per round."
    )
    llm: ProposerEndpoint = Field(default_factory=ProposerEndpoint)
