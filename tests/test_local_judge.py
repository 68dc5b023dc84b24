"""SmolLM2-135M as a hybrid judge on a code-certain held control (the `local_model` lane).

A 135M model is a weak judge, so nothing here asserts what it thinks. What must hold
whatever it says: every control ends judged (by the model, or by code alone where the
model's reply stayed invalid and a certain finding fails the turn), or ERRORED after the
re-asks (the verdict keeps the raw reply); and the code-certain control is never passed:
the code finding binds. The full held figures are measured with `agenteval controls` (see
docs/hybrid-judge.md) and reported as they are.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from test_local_model import needs_model

from agenteval.controls.measure import chosen_controls
from agenteval.controls.run import judge_controls, pairs_of
from agenteval.judges.base import make_judge
from agenteval.judges.code import CodeJudge, judge_transcript
from agenteval.params import load_params
from agenteval.scoring import ScoringRules
from agenteval.serve import local as serve_local
from agenteval.serve.local import local_server

ROOT = Path(__file__).resolve().parents[1]


@needs_model
@pytest.mark.local_model
@pytest.mark.timeout(1200)
def test_local_model_as_hybrid_judge_never_passes_a_code_certain_control() -> None:
    from agenteval.controls.run import code_certain

    params = load_params(ROOT / "params.yaml")
    manifest, held = chosen_controls(params, ROOT, "held", None)
    rules = ScoringRules()
    code = CodeJudge().participant
    pairs = dict(zip((c.control.id for c in held), pairs_of(held, manifest, ROOT), strict=True))
    certain = next(
        c
        for c in held
        if code_certain(c.control, judge_transcript(*pairs[c.control.id], code), rules)
    )
    # One control: the rule under test is that a certain code finding binds whatever the
    # model says; a second (passing) control doubled the lane's CPU (~60 s) and asserted
    # nothing the first does not.
    chosen = [certain]
    with local_server(n_ctx=4096) as url:
        params["judge"].update(
            {"kind": "hybrid", "model": serve_local.DEFAULT_ALIAS, "protocol": "openai",
             "base_url": url, "max_attempts": 2,
             "params": {"temperature": 0.0, "seed": 0, "max_tokens": 400}}
        )  # fmt: skip
        params["run"].update({"cache_dir": None, "max_attempts": 1, "request_timeout_s": 300})
        judge = make_judge(params, ROOT)
        outcomes = asyncio.run(
            judge_controls(
                judge,
                chosen,
                manifest,
                ROOT,
                rules,
                concurrency=1,
                pairs=[pairs[c.control.id] for c in chosen],
            )
        )
    for outcome in outcomes:
        graded = outcome.first
        print(f"\n{outcome.id}: label {outcome.label}, judge {graded.verdict} ({graded.score})")
        if graded.verdict == "deferred":
            assert graded.deferral and graded.deferral.startswith("ERRORED: JudgeOutputError")
        elif graded.scores["personality"] is None:
            # The model's reply stayed invalid; a certain code finding settled the FAIL.
            assert outcome.certain and graded.verdict == "fail"
        else:
            assert graded.score is not None
    assert outcomes[0].certain and outcomes[0].first.verdict != "pass"
