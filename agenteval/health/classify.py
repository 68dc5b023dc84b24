"""Which scenarios still measure something: the classes of a health report, from pooled tallies.

Per scenario (models ordered weakest to strongest, see :mod:`agenteval.health.history`):

* ``saturated`` — ``stable_pass`` on every model given: no headroom left to measure.
* ``always_fail`` — ``stable_fail`` on the strongest model: usually an ambiguous task or a
  grader that disagrees with the ground truth; a person should look.
* ``inverted`` — a weaker model passes more often than a stronger one beyond noise: a
  one-sided Fisher exact test per (scenario, weaker, stronger) pair, Holm-adjusted over every
  pair tested in the report, below ``alpha``.
* ``flaky`` — ``flaky`` on the main model.

Stability classes are :func:`agenteval.stats.classify_stability` (Wilson interval at 90%
inside one band of width ``tau``): with the default tau of 0.2 an all-pass record needs 11
judged iterations per model before it is called stable, so short histories say ``uncertain``
rather than guess. The flip rate is the main model's chance that two repeats disagree; the
signal-to-noise ratio is the spread of the models' mean scores over the pooled within-model
standard deviation of the score (how many repeat-to-repeat SDs apart the models are).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenteval.stats import adjust_pvalues, classify_stability
from agenteval.uncertainty import ScenarioTally, flip_rate, group_stats, mde_report

FLAGS = ("always_fail", "inverted", "flaky", "saturated")
DIGITS = 4


@dataclass(frozen=True)
class HealthRules:
    tau: float = 0.2  # stats.stability_tau
    conf: float = 0.95  # stats.conf, for the headroom intervals
    alpha: float = 0.05  # family-wise error of the inverted flags
    headroom_target: float = 0.95  # a category whose strongest pass rate reaches it has none


def rounded(value: float | None) -> float | None:
    return None if value is None else round(float(value), DIGITS)


def _significant(p: float) -> float:
    """p-values keep three significant digits: 4 decimals would print 1e-7 as 0.0."""
    return float(f"{p:.3g}")


def min_stable_iterations(tau: float) -> int:
    """The fewest judged iterations, all passing, that classify_stability calls stable_pass."""
    n = 1
    while classify_stability(n, n, tau) != "stable_pass":
        n += 1
    return n


def sample_sd(values: Sequence[float]) -> float | None:
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (len(values) - 1))


def model_summary(t: ScenarioTally | None, tau: float) -> dict[str, Any]:
    if t is None:
        return {"k": 0, "n": 0, "runs": 0, "pass_rate": None, "stability": "uncertain"}
    return {
        "k": t.k,
        "n": t.n,
        "runs": t.runs,
        "pass_rate": rounded(t.rate),
        "stability": classify_stability(t.k, t.n, tau),
        "score_mean": rounded(t.score_mean),
        "score_sd": rounded(sample_sd(t.scores)),
    }


def signal_to_noise(rows: Sequence[ScenarioTally]) -> dict[str, Any]:
    """Spread of the models' mean scores over the pooled within-model SD of the score."""
    scored = [t for t in rows if t.scores]
    if len(scored) < 2:
        return {"signal": None, "noise": None, "snr": None, "note": "needs 2+ models"}
    means = [math.fsum(t.scores) / len(t.scores) for t in scored]
    signal = max(means) - min(means)
    dof = sum(len(t.scores) - 1 for t in scored)
    if dof == 0:
        return {"signal": rounded(signal), "noise": None, "snr": None, "note": "one iteration each"}
    ss = math.fsum((s - m) ** 2 for t, m in zip(scored, means, strict=True) for s in t.scores)
    noise = math.sqrt(ss / dof)
    if noise == 0.0:
        note = "no repeat-to-repeat spread"
        return {"signal": rounded(signal), "noise": 0.0, "snr": None, "note": note}
    return {"signal": rounded(signal), "noise": rounded(noise), "snr": rounded(signal / noise)}


def _fisher_greater(weaker: ScenarioTally, stronger: ScenarioTally) -> float:
    """P(a table at least this favourable to the weaker model | no difference), one-sided."""
    from scipy.stats import fisher_exact

    table = [[weaker.k, weaker.n - weaker.k], [stronger.k, stronger.n - stronger.k]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def inverted_tests(
    models: Mapping[str, Mapping[str, ScenarioTally]], order: Sequence[str], alpha: float
) -> dict[str, list[dict[str, Any]]]:
    """Every (weaker, stronger) pair measured on a scenario, Holm-adjusted over all of them;
    returns the significant inversions per scenario id."""
    tests: list[tuple[str, str, str, ScenarioTally, ScenarioTally]] = []
    for i, weak_name in enumerate(order):
        for strong_name in order[i + 1 :]:
            for sid, weak in models[weak_name].items():
                strong = models[strong_name].get(sid)
                if strong is not None and weak.n and strong.n:
                    tests.append((sid, weak_name, strong_name, weak, strong))
    raw = [
        _fisher_greater(w, s) if (w.rate or 0.0) > (s.rate or 0.0) else 1.0
        for _, _, _, w, s in tests
    ]
    adjusted = adjust_pvalues(raw, "holm") if raw else []
    found: dict[str, list[dict[str, Any]]] = {}
    for (sid, wn, sn, w, s), p, p_holm in zip(tests, raw, adjusted, strict=True):
        if p_holm < alpha:
            found.setdefault(sid, []).append(
                {
                    "weaker": wn,
                    "stronger": sn,
                    "weaker_passed": f"{w.k}/{w.n}",
                    "stronger_passed": f"{s.k}/{s.n}",
                    "p": _significant(p),
                    "p_holm": _significant(p_holm),
                }
            )
    return found


def scenario_flags(
    per_model: Mapping[str, ScenarioTally | None],
    order: Sequence[str],
    inverted: list[dict[str, Any]],
    tau: float,
) -> dict[str, str]:
    """{flag: why} for one scenario."""
    classes = {name: model_summary(per_model.get(name), tau) for name in order}
    flags: dict[str, str] = {}
    strongest = order[-1]
    if classes[strongest]["stability"] == "stable_fail":
        c = classes[strongest]
        flags["always_fail"] = f"stable_fail on {strongest} ({c['k']}/{c['n']} passed)"
    if inverted:
        flags["inverted"] = "; ".join(
            f"{x['weaker']} {x['weaker_passed']} > {x['stronger']} {x['stronger_passed']} "
            f"(Fisher one-sided p = {x['p']}, Holm {x['p_holm']})"
            for x in inverted
        )
    if classes["main"]["stability"] == "flaky":
        c = classes["main"]
        flags["flaky"] = f"flaky on main ({c['k']}/{c['n']} passed)"
    if all(c["stability"] == "stable_pass" for c in classes.values()):
        flags["saturated"] = "stable_pass on " + ", ".join(
            f"{name} ({c['k']}/{c['n']})" for name, c in classes.items()
        )
    return flags


def scenario_report(
    sid: str,
    per_model: Mapping[str, ScenarioTally | None],
    order: Sequence[str],
    inverted: list[dict[str, Any]],
    rules: HealthRules,
) -> dict[str, Any]:
    present = [t for t in per_model.values() if t is not None]
    main = per_model.get("main")
    flags = scenario_flags(per_model, order, inverted, rules.tau)
    row: dict[str, Any] = {
        "category": present[0].category if present else None,
        "flags": [f for f in FLAGS if f in flags],
        "why": flags,
        "models": {name: model_summary(per_model.get(name), rules.tau) for name in order},
        "flip_rate": rounded(flip_rate(main.k, main.n)) if main is not None else None,
    }
    row.update(signal_to_noise(present))
    if inverted:
        row["inverted"] = inverted
    return row


def headroom(
    tallies: Sequence[ScenarioTally], strongest: str, rules: HealthRules
) -> dict[str, dict[str, Any]]:
    """Per category: the strongest model's judged pass rate with its interval, and 1 - it."""
    by_category: dict[str, list[ScenarioTally]] = {}
    for t in tallies:
        by_category.setdefault(t.category, []).append(t)
    out: dict[str, dict[str, Any]] = {}
    for name, rows in sorted(by_category.items()):
        rate = group_stats(rows, rules.conf, 0, 0)["judged_pass_rate"]
        value = rate.get("value")
        out[name] = {
            "model": strongest,
            "scenarios": len(rows),
            "judged_pass_rate": rate,
            "headroom": None if value is None else rounded(1.0 - value),
            "no_headroom": value is not None and value >= rules.headroom_target,
        }
    return out


def suite_mde(tallies: Sequence[ScenarioTally]) -> dict[str, Any]:
    """The minimum detectable effect of a paired comparison of this suite (main model)."""
    return mde_report(list(tallies))


def tier_moves(
    scenarios: Mapping[str, Mapping[str, Any]], tier_of: Mapping[str, str]
) -> list[dict[str, str]]:
    """Proposals only (never applied): saturated -> smoke, always-fail -> backlog, and flaky
    out of smoke (a smoke lane must be stable). Inverted scenarios go to review instead."""
    moves = []
    for sid, row in scenarios.items():
        current = tier_of.get(sid, "unassigned")
        why = row["why"]
        target = None
        if "always_fail" in why and current != "backlog":
            target, reason = "backlog", why["always_fail"]
        elif "saturated" in why and current != "smoke":
            target, reason = "smoke", why["saturated"]
        elif "flaky" in why and current == "smoke":
            target, reason = "full", why["flaky"]
        if target is not None:
            moves.append({"id": sid, "from": current, "to": target, "reason": reason})
    return moves


SOURCE_KINDS = ("session", "issue", "hand", "synthetic")


def source_kind(source: str | None) -> str:
    """`session: https://...` -> session; unknown words are 'other', absence 'unspecified'."""
    if not source or not source.strip():
        return "unspecified"
    head = re.split(r"[:\s]", source.strip(), maxsplit=1)[0].lower()
    return head if head in SOURCE_KINDS else "other"


def source_share(sources: Sequence[str | None]) -> dict[str, Any]:
    """How many scenarios came from real use (a session or an issue), of all of them."""
    kinds: dict[str, int] = {}
    for source in sources:
        kind = source_kind(source)
        kinds[kind] = kinds.get(kind, 0) + 1
    real = kinds.get("session", 0) + kinds.get("issue", 0)
    total = len(sources)
    return {
        "scenarios": total,
        "kinds": dict(sorted(kinds.items())),
        "session_or_issue": real,
        "share": rounded(real / total) if total else None,
    }
