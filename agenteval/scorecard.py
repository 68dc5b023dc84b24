"""Build the scorecard and flat metrics from the suite, transcripts and verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agenteval import __version__
from agenteval.layout import load_transcript, load_verdict
from agenteval.params import section_digest, without_placement
from agenteval.schema.params import AgentLimits
from agenteval.schema.scorecard import PassCount, ScenarioResult, Scorecard
from agenteval.schema.status import COMPLETED, Status
from agenteval.schema.suite import Suite
from agenteval.schema.transcript import Transcript
from agenteval.schema.verdict import Verdict
from agenteval.scoring import ScenarioInfo, ScoringRules, dimension_means, score_scenario, summarize
from agenteval.suite.audit import blocked_reasons, describe


def _config(
    suite: Suite,
    params: dict[str, Any],
    rules: ScoringRules,
    transcripts: list[Transcript],
    verdicts: list[Verdict],
) -> dict[str, Any]:
    target = transcripts[0].target.model_dump(mode="json") if transcripts else params["target"]
    # The declared limits decide which scenarios are BLOCKED: part of what the agent is.
    target = target | {"limits": _limits(params).model_dump(mode="json", exclude_none=True)}
    simulator = (
        transcripts[0].simulator.model_dump(mode="json") if transcripts else params["simulator"]
    )
    judge = (
        verdicts[0].judge.model_dump(mode="json") if verdicts else {"kind": params["judge"]["kind"]}
    )
    return {
        "agenteval_version": __version__,
        "target": target,
        "simulator": simulator,
        "judge": judge | {"rules": rules.describe()},
        "scenario_set_digest": suite.scenario_set_digest,
        "corpus_digest": suite.corpus_digest,
        "params_digest": section_digest(
            without_placement(params), "suite", "target", "simulator", "judge", "run"
        ),
        "iterations": suite.iterations,
        "seed": suite.seed,
        "seeds": suite.seeds(),
        "scenarios": {i.scenario.id: i.digest for i in suite.items},
        "ground_truth": {i.scenario.id: i.ground_truth_digest for i in suite.items},
        "split": (suite.split or {}) | {"scenarios": {i.scenario.id: i.split for i in suite.items}},
    }


def _usage(transcripts: list[Transcript]) -> dict[str, Any]:
    """Token and cost totals where known; unknown cost stays None (n/a), never 0."""
    tokens_in = tokens_out = 0
    costs: list[float] = []
    unknown_cost = 0
    for transcript in transcripts:
        for turn in transcript.turns:
            if turn.usage is None:
                continue
            tokens_in += turn.usage.input_tokens or 0
            tokens_out += turn.usage.output_tokens or 0
            if turn.usage.cost_usd is None:
                unknown_cost += 1
            else:
                costs.append(turn.usage.cost_usd)
    return {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": round(sum(costs), 6) if costs else None,
        "turns_without_cost": unknown_cost,
    }


def _limits(params: dict[str, Any]) -> AgentLimits:
    return AgentLimits.model_validate((params.get("target") or {}).get("limits") or {})


def build_scorecard(
    suite: Suite, transcripts_dir: Path, verdicts_dir: Path, params: dict[str, Any]
) -> Scorecard:
    rules = ScoringRules.from_params(params["judge"])
    limits = _limits(params)
    results: list[ScenarioResult] = []
    transcripts: list[Transcript] = []
    verdicts: list[Verdict] = []
    for item in suite.items:
        scenario = item.scenario
        info = ScenarioInfo(
            scenario.id,
            scenario.category,
            scenario.severity,
            len(scenario.turns),
            item.digest,
            item.ground_truth_digest,
        )
        blocked = describe(blocked_reasons(scenario, limits))
        for iteration in range(suite.iterations):
            transcript = load_transcript(transcripts_dir, scenario.id, iteration)
            verdict = load_verdict(verdicts_dir, scenario.id, iteration)
            if transcript is None:
                unrun = score_scenario(info, Status.NOT_RUN, None, rules, iteration)
                unrun.split = item.split
                results.append(unrun)
                continue
            transcripts.append(transcript)
            if verdict is not None and verdict.transcript_digest:
                verdicts.append(verdict)
            result = score_scenario(info, transcript.status, verdict, rules, iteration, blocked)
            result.split = item.split
            if transcript.status != COMPLETED and transcript.error:
                result.warnings.append(transcript.error)  # why it was not measured
            results.append(result)
    return Scorecard(
        summary=summarize(results, rules),
        config=_config(suite, params, rules, transcripts, verdicts),
        scenarios=results,
        pass_counts=pass_counts(results),
        dimension_means=dimension_means(results),
        usage=_usage(transcripts),
        invalid=list(suite.invalid),
    )


def pass_counts(results: list[ScenarioResult]) -> dict[str, PassCount]:
    counts: dict[str, PassCount] = {}
    for r in results:
        entry = counts.setdefault(r.id, PassCount(k=0, n=0, runs=0))
        entry.runs += 1
        if r.status in (Status.PASS, Status.FAIL, Status.BLOCKED_BY_ARCHITECTURE):
            entry.n += 1
            entry.k += r.status == Status.PASS
    return counts


def metrics_of(card: Scorecard) -> dict[str, float | int]:
    """Flat numbers for `dvc metrics` and MLflow; absent values are left out, never NaN."""
    summary = card.summary.model_dump()
    by_category = summary.pop("by_category")
    flat: dict[str, float | int] = {k: v for k, v in summary.items() if v is not None}
    for name, cat in sorted(by_category.items()):
        for key in ("pass_rate", "judged_pass_rate", "avg_score", "total"):
            if cat[key] is not None:
                flat[f"category.{name}.{key}"] = cat[key]
    for dim, value in card.dimension_means.items():
        flat[f"dimension.{dim}"] = value
    for key in ("input_tokens", "output_tokens", "cost_usd"):
        if card.usage.get(key) is not None:
            flat[f"usage.{key}"] = card.usage[key]
    flat["invalid_scenario_files"] = len(card.invalid)
    return flat
