"""The scenario health report: reports/health.json and reports/health.md.

Built from a :class:`~agenteval.health.history.History` by the pure rules of
:mod:`agenteval.health.classify`; this module adds what needs files — the tiers each scenario
is in, the `source` of each scenario file, and excerpts of the transcripts a person should
read for every always-fail and inverted scenario.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agenteval.fileio import write_json, write_text
from agenteval.health import classify
from agenteval.health.history import History, Model, describe, run_dir
from agenteval.layout import load_transcript
from agenteval.schema.status import Status

SCHEMA = "agenteval.health/1"
EXCERPT_CHARS = 240


def _suite_snr(history: History) -> dict[str, Any]:
    """Spread of the models' pooled average scores over the main model's run-to-run SD."""
    means = {}
    for model in history.models:
        scores = [s for t in model.tallies.values() for s in t.scores]
        if scores:
            means[model.name] = math.fsum(scores) / len(scores)
    per_run = [r.card.summary.avg_score for r in history.main.runs]
    seen = [float(v) for v in per_run if v is not None]
    noise = classify.sample_sd(seen)
    out: dict[str, Any] = {"model_means": {k: classify.rounded(v) for k, v in means.items()}}
    if len(means) < 2:
        return out | {"snr": None, "note": "needs --strong or --weak runs"}
    signal = max(means.values()) - min(means.values())
    out.update(signal=classify.rounded(signal), noise=classify.rounded(noise))
    if noise is None or noise == 0.0:
        why = "needs 2+ main runs" if noise is None else "main runs did not vary"
        return out | {"snr": None, "note": why}
    return out | {"snr": classify.rounded(signal / noise)}


def _excerpt(model: Model, sid: str, want_pass: bool) -> dict[str, Any] | None:
    """Where to read one iteration of `sid` that passed (or failed) on `model`, and a glimpse."""
    wanted = Status.PASS if want_pass else Status.FAIL
    for run in model.runs:
        for row in run.card.scenarios:
            if row.id != sid or row.status != wanted:
                continue
            folder = run_dir(run)
            where: dict[str, Any] = {"model": model.name, "status": row.status}
            if folder is None:
                return where | {"mlflow": f"{run.source} session {sid}/{row.iteration}"}
            path = folder / "data" / "transcripts" / sid / f"{row.iteration}.json"
            where["transcript"] = str(path)
            transcript = load_transcript(folder / "data" / "transcripts", sid, row.iteration)
            if transcript is None or not transcript.turns:
                return where
            failed = [t.turn for t in row.turns if not t.passed]
            number = failed[0] if failed and not want_pass else transcript.turns[-1].turn
            turn = next(t for t in transcript.turns if t.turn == number)
            where["turn"] = {
                "turn": turn.turn,
                "user": turn.user_message[:EXCERPT_CHARS],
                "agent": turn.response[:EXCERPT_CHARS],
                "tools": [c.name for c in turn.tool_calls],
            }
            return where
    return None


def _review(history: History, scenarios: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    models = {m.name: m for m in history.models}
    items = []
    for sid, row in scenarios.items():
        if not {"always_fail", "inverted"} & set(row["flags"]):
            continue
        reads = []
        if "always_fail" in row["flags"]:
            reads.append(_excerpt(history.strongest, sid, want_pass=False))
        for pair in row.get("inverted", []):
            reads.append(_excerpt(models[pair["stronger"]], sid, want_pass=False))
            reads.append(_excerpt(models[pair["weaker"]], sid, want_pass=True))
        unique = {(r["model"], r["status"]): r for r in reads if r is not None}
        items.append(
            {"id": sid, "flags": row["flags"], "why": row["why"], "read": list(unique.values())}
        )
    return items


def build_report(
    history: History,
    rules: classify.HealthRules,
    tier_of: Mapping[str, str] | None = None,
    sources: Sequence[str | None] = (),
) -> dict[str, Any]:
    """Everything `agenteval health` writes, as one JSON-ready mapping."""
    order = [m.name for m in history.models]
    tallies = {m.name: m.tallies for m in history.models}
    inverted = classify.inverted_tests(tallies, order, rules.alpha)
    scenarios = {
        sid: classify.scenario_report(
            sid, {m: tallies[m].get(sid) for m in order}, order, inverted.get(sid, []), rules
        )
        for sid in history.ids()
    }
    counts = {flag: sum(flag in s["flags"] for s in scenarios.values()) for flag in classify.FLAGS}
    tiers = dict(tier_of or {})
    for sid, row in scenarios.items():
        row["tier"] = tiers.get(sid, "unassigned") if tier_of is not None else None
    return {
        "schema": SCHEMA,
        "rules": {
            "stability_tau": rules.tau,
            "alpha": rules.alpha,
            "conf": rules.conf,
            "headroom_target": rules.headroom_target,
            "min_iterations_for_stable": classify.min_stable_iterations(rules.tau),
        },
        "models": {m.name: describe(m) for m in history.models},
        "counts": {"scenarios": len(scenarios)} | counts,
        "categories": classify.headroom(
            list(history.strongest.tallies.values()), history.strongest.name, rules
        ),
        "mde": classify.suite_mde(list(history.main.tallies.values())),
        "suite_snr": _suite_snr(history),
        "sources": classify.source_share(list(sources)),
        "tier_moves": classify.tier_moves(scenarios, tiers) if tier_of is not None else [],
        "review": _review(history, scenarios),
        "scenarios": scenarios,
        "warnings": history.warnings,
    }


def write_health(report: Mapping[str, Any], out: Path) -> tuple[Path, Path]:
    from agenteval.health.render import render_markdown

    json_path, md_path = out / "health.json", out / "health.md"
    write_json(json_path, report)
    write_text(md_path, render_markdown(report))
    return json_path, md_path
