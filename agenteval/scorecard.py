"""Build the scorecard and flat metrics from the suite, transcripts and verdicts."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from agenteval import __version__
from agenteval.costs import cost_metrics, rate_cards, run_cost, unit_cost
from agenteval.fileio import read_json
from agenteval.layout import load_transcript, load_verdict
from agenteval.params import section_digest, without_placement
from agenteval.schema.params import AgentLimits
from agenteval.schema.scorecard import (
    Calibration,
    Cost,
    PassCount,
    ScenarioResult,
    Scorecard,
    SelfConsistency,
)
from agenteval.schema.status import COMPLETED, Status
from agenteval.schema.suite import Suite, SuiteItem
from agenteval.schema.transcript import Transcript, Usage
from agenteval.schema.verdict import Verdict
from agenteval.scoring import ScenarioInfo, ScoringRules, dimension_means, score_scenario, summarize
from agenteval.stamps import code_stamp, commits_of
from agenteval.suite.audit import blocked_reasons, describe

METER_FILE = "meter.json"  # beside the transcripts: the billing meter's delta (run.meter)


def _config(
    suite: Suite,
    params: dict[str, Any],
    rules: ScoringRules,
    first: Transcript | None,
    first_verdict: Verdict | None,
    served: set[str],
) -> dict[str, Any]:
    target = target_config(params, first)
    simulator = first.simulator.model_dump(mode="json") if first else params["simulator"]
    judge = (
        first_verdict.judge.model_dump(mode="json")
        if first_verdict
        else {"kind": params["judge"]["kind"]}
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
        # The CI lane it ran (suite.tier; null: no lane selected): `agenteval ci-verify`
        # counts a full sweep only from a scorecard that says it ran the full lane.
        "tier": (params.get("suite") or {}).get("tier"),
        "iterations": suite.iterations,
        "seed": suite.seed,
        "seeds": suite.seeds(),
        "scenarios": {i.scenario.id: i.digest for i in suite.items},
        "ground_truth": {i.scenario.id: i.ground_truth_digest for i in suite.items},
        "split": (suite.split or {}) | {"scenarios": {i.scenario.id: i.split for i in suite.items}},
        # What the measured units' agent reported running (compare refuses a model change),
        # and the pin that discarded any other (run.agent_model).
        "agent_models": sorted(served),
        "agent_model_pin": (params.get("run") or {}).get("agent_model"),
    }


def target_config(params: dict[str, Any], first: Transcript | None) -> dict[str, Any]:
    """The agent as the scorecard's config says it: as the first transcript recorded it."""
    target = first.target.model_dump(mode="json") if first else params["target"]
    # The declared limits decide which scenarios are BLOCKED: part of what the agent is.
    return dict(target) | {"limits": _limits(params).model_dump(mode="json", exclude_none=True)}


def _usage(usages: list[Usage]) -> dict[str, Any]:
    """Token and cost totals where known; unknown cost stays None (n/a), never 0."""
    tokens_in = tokens_out = 0
    costs: list[float] = []
    unknown_cost = 0
    for usage in usages:
        tokens_in += usage.input_tokens or 0
        tokens_out += usage.output_tokens or 0
        if usage.cost_usd is None:
            unknown_cost += 1
        else:
            costs.append(usage.cost_usd)
    return {
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": round(sum(costs), 6) if costs else None,
        "turns_without_cost": unknown_cost,
    }


def _limits(params: dict[str, Any]) -> AgentLimits:
    return AgentLimits.model_validate((params.get("target") or {}).get("limits") or {})


def build_scorecard(
    suite: Suite,
    transcripts_dir: Path,
    verdicts_dir: Path,
    params: dict[str, Any],
    controls_dir: Path | None = None,
) -> Scorecard:
    """The scorecard; `controls_dir` holds the verdicts on controls mixed into the judge
    stage (judge.controls_per_run), reported as the run's calibration, never as results."""
    rules = ScoringRules.from_params(params["judge"])
    limits = _limits(params)
    results: list[ScenarioResult] = []
    code_stamps: dict[str, dict[str, str]] = {}  # content stamp -> the files it covers
    # Only what the config and the usage totals need: holding every transcript of a large
    # run would keep it all in memory (and in the garbage collector's way) while scoring.
    first: Transcript | None = None
    first_verdict: Verdict | None = None
    usages: list[Usage] = []
    served: set[str] = set()  # models the measured units reported running
    cards = rate_cards(params)
    resampled: list[Verdict] = []  # judged K times (judge.repeats): for the self-consistency
    for item in suite.items:
        scenario = item.scenario
        info, blocked = scenario_info(item, limits)
        for iteration in range(suite.iterations):
            transcript = load_transcript(transcripts_dir, scenario.id, iteration)
            verdict = load_verdict(verdicts_dir, scenario.id, iteration)
            if transcript is None:
                unrun = score_scenario(info, Status.NOT_RUN, None, rules, iteration)
                unrun.split = item.split
                results.append(unrun)
                continue
            first = first or transcript
            usages += [turn.usage for turn in transcript.turns if turn.usage is not None]
            if transcript.status == COMPLETED:
                served |= {m for turn in transcript.turns for m in turn.models or [] if m}
            if verdict is not None and verdict.transcript_digest:
                first_verdict = first_verdict or verdict
                resampled += [verdict] if len(verdict.samples) >= 2 else []
            result = score_scenario(info, transcript.status, verdict, rules, iteration, blocked)
            result.split, result.fenced_reads = item.split, transcript.fenced_reads
            result.cost = unit_cost(transcript, cards)
            result.commit, result.ran_at = transcript.commit, transcript.started_at
            result.code_stamp = _content_stamp(transcript, verdict, code_stamps)
            if transcript.status != COMPLETED and transcript.error:
                result.warnings.append(transcript.error)  # why it was not measured
            results.append(result)
    return Scorecard(
        summary=summarize(results, rules),
        config=_config(suite, params, rules, first, first_verdict, served),
        scenarios=results,
        pass_counts=pass_counts(results),
        dimension_means=dimension_means(results),
        usage=_usage(usages),
        invalid=list(suite.invalid),
        overrides_by_rule=dict(sorted(Counter(r for x in results for r in x.overrides).items())),
        calibration=_calibration(controls_dir, params),
        self_consistency=self_consistency_of(resampled, params),
        cost=run_cost(results, read_meter(transcripts_dir.parent)),
        commits=commits_of((r.commit, r.ran_at) for r in results),
        code_stamps=dict(sorted(code_stamps.items())),
    )


def scenario_info(item: SuiteItem, limits: AgentLimits) -> tuple[ScenarioInfo, list[str]]:
    """What scoring one scenario needs of its suite item, and why the agent's declared limits
    block it (none when they do not)."""
    scenario = item.scenario
    info = ScenarioInfo(
        scenario.id,
        scenario.category,
        scenario.severity,
        len(scenario.turns),
        item.digest,
        item.ground_truth_digest,
    )
    return info, describe(blocked_reasons(scenario, limits))


def conversation_result(
    item: SuiteItem, iteration: int, transcript: Transcript, verdict: Verdict | None,
    params: dict[str, Any],
) -> ScenarioResult:  # fmt: skip
    """One recorded conversation's result as `build_scorecard` scores it (its run-wide
    fields, cost and code stamp, aside): what a trace written while the run goes on says."""
    info, blocked = scenario_info(item, _limits(params))
    rules = ScoringRules.from_params(params["judge"])
    result = score_scenario(info, transcript.status, verdict, rules, iteration, blocked)
    result.split, result.fenced_reads = item.split, transcript.fenced_reads
    result.commit, result.ran_at = transcript.commit, transcript.started_at
    return result


def _content_stamp(
    transcript: Transcript, verdict: Verdict | None, found: dict[str, dict[str, str]]
) -> str | None:
    """A unit that has no commit stamp is stamped by the code of everything that produced
    it (agent, simulator, judge: agenteval.stamps); the files of each stamp go in `found`."""
    if transcript.commit is not None:
        return None
    who = [transcript.target, transcript.simulator, *([verdict.judge] if verdict else [])]
    stamped = code_stamp(*(p.details.get("code") for p in who))
    if stamped is None:
        return None
    found[stamped[0]] = stamped[1]
    return stamped[0]


def read_meter(data: Path) -> Cost | None:
    """The billing meter's figure for the run, when one was taken (data/meter.json: one
    reading per leg, a resumed run's legs added up)."""
    path = data / METER_FILE
    if not path.is_file():
        return None
    legs = read_json(path)
    usd = round(sum(float(leg["usd"]) for leg in legs), 6)
    note = f"{len(legs)} leg(s); account-wide: any other use of the account meanwhile is in it"
    if any(float(leg["usd"]) < 0 for leg in legs):
        note += "; a NEGATIVE leg: the meter's window moved between its snapshots"
    return Cost(usd=usd, source="metered", note=note)


def _calibration(controls_dir: Path | None, params: dict[str, Any]) -> Calibration | None:
    """The judge on the controls mixed into this run's judge stage, if any were."""
    if controls_dir is None or "controls" not in params:
        return None
    from agenteval.controls.inrun import calibration

    return calibration(controls_dir, params)


def self_consistency_of(verdicts: list[Verdict], params: dict[str, Any]) -> SelfConsistency | None:
    """Flip rate and score SEM over the run's repeated judgings (judge.repeats >= 2)."""
    sampled = [v for v in verdicts if len(v.samples) >= 2]
    if not sampled:
        return None
    from agenteval.controls.agreement import self_consistency

    section = params.get("controls") or {}
    found = self_consistency(
        [[s.status for s in v.samples] for v in sampled],
        [[s.score for s in v.samples] for v in sampled],
        float(section.get("conf", 0.95)),
    )
    if found is None:
        return None
    wanted = section.get("min_self_consistency")
    same = found["identical_verdicts"]
    misses = []
    if wanted is not None and same is not None and same < wanted:
        misses.append(f"self-consistency {same:.3f} < {wanted} (identical verdicts over repeats)")
    majority = bool((params.get("judge") or {}).get("majority"))
    return SelfConsistency(**found, majority=majority, passed=not misses, misses=misses)


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
    for rule, count in card.overrides_by_rule.items():
        flat[f"overrides.{rule}"] = count
    return flat | cost_metrics(card.cost) | judge_check_metrics(card)


def judge_check_metrics(card: Scorecard) -> dict[str, float | int]:
    """The run's judge checks as flat numbers: in-run calibration and self-consistency."""
    flat: dict[str, float | int] = {}
    cal = card.calibration
    if cal is not None:
        flat |= {"calibration.controls": cal.controls, "calibration.judged": cal.judged,
                 "calibration.false_passes": cal.false_passes,
                 "calibration.false_fails": cal.false_fails,
                 "calibration.gate_passed": int(cal.passed)}  # fmt: skip
        for name, est in (("agreement", cal.agreement), ("false_pass_rate", cal.false_pass_rate)):
            for part in ("value", "low", "high"):
                value = getattr(est, part)
                if value is not None:
                    flat[f"calibration.{name}" + ("" if part == "value" else f".{part}")] = value
        if cal.coverage is not None:
            flat["calibration.coverage"] = cal.coverage
        if cal.people is not None:  # agreement with people, beside the written controls'
            flat["calibration.people.controls"] = cal.people.controls
            flat["calibration.people.false_passes"] = cal.people.false_passes
            for part in ("value", "low", "high"):
                value = getattr(cal.people.agreement, part)
                if value is not None:
                    flat[
                        "calibration.people.agreement" + ("" if part == "value" else f".{part}")
                    ] = value
    sc = card.self_consistency
    if sc is not None:
        flat["consistency.repeats"] = sc.repeats
        flat["consistency.gate_passed"] = int(sc.passed)
        for key in ("flip_rate", "flip_rate_low", "flip_rate_high", "score_sem"):
            value = getattr(sc, key)
            if value is not None:
                flat[f"consistency.{key}"] = value
    return flat
